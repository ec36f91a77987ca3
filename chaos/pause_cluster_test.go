//go:build cluster

package chaos

// PodPause on the kind cluster: the freezer state is read from the kernel
// (the node's /sys/fs/cgroup, with docker exec), not from the agent.

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/chaos/plan"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// freezerState reads the freezer state of pod's first container on node:
// "FROZEN", "FREEZING" or "THAWED" (v1), or "1"/"0" of cgroup.freeze (v2).
func (e *env) freezerState(t *testing.T, node, pod string) string {
	t.Helper()
	p, err := e.kube.CoreV1().Pods(testNS).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil || len(p.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s: %v", pod, err)
	}
	id := plan.ContainerID(p.Status.ContainerStatuses[0].ContainerID)
	script := `d=$(find /sys/fs/cgroup/freezer -type d -name "*$0*" 2>/dev/null | head -1)
if [ -n "$d" ]; then cat "$d/freezer.state"; exit 0; fi
d=$(find /sys/fs/cgroup -type d -name "*$0*" 2>/dev/null | head -1)
[ -n "$d" ] && cat "$d/cgroup.freeze" || { echo "no cgroup for $0" >&2; exit 3; }`
	out, err := exec.Command("docker", "exec", node, "sh", "-c", script, id).CombinedOutput()
	if err != nil {
		t.Fatalf("read the freezer of %s on %s: %v %s", pod, node, err, out)
	}
	return strings.TrimSpace(string(out))
}

func frozen(s string) bool { return s == "FROZEN" || s == "1" }

// frozenAnywhere lists every frozen cgroup on node, from the kernel.
func frozenAnywhere(t *testing.T, node string) []string {
	t.Helper()
	script := `{ find /sys/fs/cgroup/freezer -name freezer.state -exec grep -l -e FROZEN -e FREEZING {} + ; find /sys/fs/cgroup -name cgroup.freeze -exec grep -l '^1' {} + ; } 2>/dev/null; true`
	out, err := exec.Command("docker", "exec", node, "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("scan freezers on %s: %v %s", node, err, out)
	}
	var l []string
	for _, s := range strings.Fields(string(out)) {
		l = append(l, s)
	}
	return l
}

func (e *env) pauseDeadline(t *testing.T, name string) time.Time {
	t.Helper()
	u, err := e.ex.dyn.Resource(plan.PauseGVR).Namespace(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pp := &plan.PodPause{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pp); err != nil {
		t.Fatal(err)
	}
	end, err := plan.PauseDeadline(pp)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// waitThawed polls the kernel until pod thaws, up to 20s past end.
func (e *env) waitThawed(t *testing.T, node, pod string, end time.Time) time.Time {
	t.Helper()
	for time.Now().Before(end.Add(20 * time.Second)) {
		if !frozen(e.freezerState(t, node, pod)) {
			return time.Now()
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	return time.Time{}
}

// The harness is SIGKILLed right after the freeze, 20 times: every
// container thaws at its deadline and nothing is left frozen.
func TestHarnessKilledMidPauseLeavesNothingFrozen(t *testing.T) {
	e := setup(t)
	const runs = 20
	const dur = 3 * time.Second
	nodes := slices.Sorted(maps.Keys(e.probers))
	var mu sync.Mutex // the tallies, from one subtest per node
	thawed := 0
	var maxLate, minLate time.Duration = 0, time.Hour
	onEachNode(t, nodes, runs, func(t *testing.T, i int, node string) {
		pod := e.probers[node]
		name := killedHarness(t, "FENCECHECK_CHAOS_KIND=pause", "FENCECHECK_CHAOS_POD="+pod, "FENCECHECK_CHAOS_DURATION="+dur.String())
		if s := e.freezerState(t, node, pod); !frozen(s) {
			t.Fatalf("run %d: %s is %s right after the freeze: the check below would prove nothing", i, pod, s)
		}
		end := e.pauseDeadline(t, name)
		at := e.waitThawed(t, node, pod, end)
		e.ex.DeletePause(context.Background(), testNS, name)
		if at.IsZero() {
			t.Errorf("run %d (%s on %s): still frozen 20s after the deadline", i, name, node)
			return
		}
		late := at.Sub(end)
		if late < -time.Second {
			t.Errorf("run %d: thawed %s before the deadline", i, -late)
		}
		mu.Lock()
		defer mu.Unlock()
		maxLate, minLate = max(maxLate, late), min(minLate, late)
		thawed++
	})
	for _, n := range nodes {
		if f := frozenAnywhere(t, n); len(f) != 0 {
			t.Errorf("frozen cgroups left on %s: %v", n, f)
		}
	}
	t.Logf("harness SIGKILLed mid-pause %d times: %d thawed (read from the kernel), %s to %s after the deadline; nothing frozen on %v",
		runs, thawed, minLate.Round(time.Millisecond), maxLate.Round(time.Millisecond), nodes)
	if thawed != runs {
		t.Fatalf("%d/%d pauses left frozen", runs-thawed, runs)
	}
}

// The agent is SIGKILLed mid-pause: the container stays frozen until the
// deadline recorded in the node ledger, then thaws.
func TestAgentKilledMidPauseStillThawsOnTime(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	node, pod, agentPod, dur := e.leastRestartedAgent(t, ctx)
	w, err := e.ex.Pause(ctx, NewPause(PauseSpec{PodNamespace: testNS, PodName: pod, Duration: dur}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.ex.DeletePause(context.Background(), testNS, w.Name)
	end := e.pauseDeadline(t, w.Name)
	before := restartCount(ctx, e, agentPod.Name)
	killed := e.killAgent(t, node)
	waitFor(t, ctx, "the agent container restarted", func() (bool, string) {
		n := restartCount(ctx, e, agentPod.Name)
		return n > before, fmt.Sprintf("restarts %d", n)
	})
	requireRestartMargin(t, "restarted", killed, end, 3*time.Second)
	if s := e.freezerState(t, node, pod); !frozen(s) {
		t.Fatalf("after the agent restart, before the deadline: %s is %s", pod, s)
	}
	at := e.waitThawed(t, node, pod, end)
	if at.IsZero() {
		t.Fatal("still frozen 20s after the deadline")
	}
	t.Logf("thawed %s after the deadline (read from the kernel), the agent SIGKILLed mid-pause", at.Sub(end).Round(time.Millisecond))
	if at.Before(end.Add(-time.Second)) {
		t.Fatalf("thawed %s before the deadline", end.Sub(at))
	}
	rw, err := e.ex.WaitPauseRecovered(ctx, testNS, w.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status: frozen %s → thawed %s", rw.Injected.Format(time.RFC3339Nano), rw.Recovered.Format(time.RFC3339Nano))
}
