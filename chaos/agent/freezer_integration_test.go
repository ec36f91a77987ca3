//go:build integration && linux

package agent

// The pause path on a real kernel (cgroup v1 freezer here; v2 where the
// unified hierarchy holds the freezer): a process in a cgroup of its own is
// frozen by an agent that records the deadline in its ledger first; that
// agent ("the harness") is SIGKILLed mid-pause, 20 times; a fresh agent's
// heal loop, from the ledger alone, thaws it at the deadline. The state is
// read from the kernel (freezer.state, /proc/<pid>/stat).

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) {
	if os.Getenv("FENCECHECK_FREEZE_HELPER") == "1" {
		os.Exit(freezeHelper())
	}
	os.Exit(m.Run())
}

// freezeHelper is the agent that dies: it freezes the cgroup named in the
// environment until now+duration, prints FROZEN and waits to be killed.
func freezeHelper() int {
	root, dir, ledger := os.Getenv("FREEZE_ROOT"), os.Getenv("FREEZE_DIR"), os.Getenv("FREEZE_LEDGER")
	d, _ := time.ParseDuration(os.Getenv("FREEZE_FOR"))
	fr := &CgroupFreezer{Root: root}
	created := time.Now().Add(-time.Second) // DeadlineFrom rounds up by one second
	pp := &plan.PodPause{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "app", UID: "u", CreationTimestamp: metav1.NewTime(created)},
		Spec: plan.PodPauseSpec{ContainerSelector: v1alpha1.ContainerSelector{PodSelector: v1alpha1.PodSelector{Mode: v1alpha1.AllMode,
			Selector: v1alpha1.PodSelectorSpec{Pods: map[string][]string{"app": {"victim"}}}}}, Duration: str(d.String())}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "victim", UID: types.UID("pod-uid")},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "c", ContainerID: "containerd://" + filepath.Base(dir), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	a := &Agent{Node: "n1", Freezer: fr, Ledger: &Ledger{Dir: ledger},
		Scope: plan.Scope{Labels: func(string) (map[string]string, bool) {
			return map[string]string{plan.AllowLabel: plan.AllowValue}, true
		}}}
	a.statusQ = make(chan func(context.Context)) // nobody reads status here: writes are dropped
	if _, err := a.ReconcilePauses(context.Background(), []*plan.PodPause{pp}, []corev1.Pod{pod}); err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("FROZEN")
	select {}
}

func procState(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0]
}

func TestFreezerHarnessKilledMidPauseThawsOnTime(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (cgroups)")
	}
	root := "/sys/fs/cgroup"
	fr := &CgroupFreezer{Root: root}
	parent := filepath.Join(fr.tree(), fmt.Sprintf("fencecheck-test-pod-uid-%d", os.Getpid()))
	dir := filepath.Join(parent, fmt.Sprintf("cri-containerd-c%d", time.Now().UnixNano()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("make a cgroup: %v", err)
	}
	victim := exec.Command("sleep", "3600")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fr.Thaw(dir)
		victim.Process.Kill()
		victim.Wait()
		os.Remove(dir)
		os.Remove(parent)
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(victim.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	const runs = 20
	const dur = time.Second
	var lates []time.Duration
	for i := 0; i < runs; i++ {
		ledger := t.TempDir()
		h := exec.Command(os.Args[0], "-test.run=^$")
		h.Env = append(os.Environ(), "FENCECHECK_FREEZE_HELPER=1", "FREEZE_ROOT="+root, "FREEZE_DIR="+dir, "FREEZE_LEDGER="+ledger, "FREEZE_FOR="+dur.String())
		out, _ := h.StdoutPipe()
		h.Stderr = os.Stderr
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		h.Process.Signal(syscall.SIGKILL)
		h.Wait()
		if strings.TrimSpace(line) != "FROZEN" {
			t.Fatalf("run %d: helper said %q", i, line)
		}
		if ok, _ := fr.Frozen(dir); !ok {
			t.Fatalf("run %d: not frozen after the helper's freeze", i)
		}
		if s := procState(t, victim.Process.Pid); s != "D" && s != "S" && s != "T" {
			t.Logf("run %d: frozen process state %s", i, s)
		}
		led, err := (&Ledger{Dir: ledger}).Load()
		if err != nil || len(led.Entries) != 1 {
			t.Fatalf("run %d: ledger %v %v", i, led, err)
		}
		var end time.Time
		for _, e := range led.Entries {
			end = e.Parts[0].Deadline
		}
		// A fresh agent, no apiserver: only the ledger and the clock.
		b := &Agent{Node: "n1", Freezer: &CgroupFreezer{Root: root}, Ledger: &Ledger{Dir: ledger}}
		ctx, cancel := context.WithCancel(context.Background())
		go b.HealLoop(ctx)
		var thawed time.Time
		for time.Now().Before(end.Add(10 * time.Second)) {
			if ok, _ := fr.Frozen(dir); !ok {
				thawed = time.Now()
				break
			}
			time.Sleep(2 * time.Millisecond) // polling with a deadline
		}
		cancel()
		if thawed.IsZero() {
			t.Fatalf("run %d: still frozen 10s after the deadline", i)
		}
		if thawed.Before(end) {
			t.Fatalf("run %d: thawed %s before the deadline", i, end.Sub(thawed))
		}
		lates = append(lates, thawed.Sub(end))
	}
	if ok, _ := fr.Frozen(dir); ok {
		t.Fatal("left frozen")
	}
	t.Logf("%d harness SIGKILLs mid-pause: all thawed (freezer.state from the kernel) %v after the deadline", runs, lates)
}
