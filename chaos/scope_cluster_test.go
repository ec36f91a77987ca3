//go:build cluster

package chaos

// Hostile chaos objects on the kind cluster: each is refused with a reason
// (by the apiserver through the CRD's CEL rules, or by the agent in
// status.refused) and no rule is installed.

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const closedNS = "fencecheck-chaos-closed" // exists, did not opt in

// create makes nc without the executor's client-side checks (an attacker
// uses kubectl): the cluster must refuse it by itself.
func (e *env) create(ctx context.Context, nc *v1alpha1.NetworkChaos) (string, error) {
	u, err := ToUnstructured(nc)
	if err != nil {
		return "", err
	}
	got, err := e.ex.dyn.Resource(GVR).Namespace(nc.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return got.GetName(), nil
}

// waitRefused waits for the agent's reason in status.refused.
func (e *env) waitRefused(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	var reason string
	waitFor(t, ctx, "status.refused on "+name, func() (bool, string) {
		u, err := e.ex.dyn.Resource(GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		reason = Refused(u)
		return reason != "", "not refused yet"
	})
	return reason
}

func (e *env) corednsPod(t *testing.T, ctx context.Context) corev1.Pod {
	t.Helper()
	l, err := e.kube.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil || len(l.Items) == 0 {
		t.Fatalf("CoreDNS pods: %v (%d)", err, len(l.Items))
	}
	return l.Items[0]
}

func TestHostileChaosRefused(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var node, prober string
	for n, p := range e.probers {
		node, prober = n, p
	}
	dns := e.corednsPod(t, ctx)
	base := func() *v1alpha1.NetworkChaos {
		return NewPartition(PartitionSpec{PodNamespace: testNS, PodName: prober, Targets: e.targets, Duration: 30 * time.Second})
	}
	// Refused by the apiserver (the CRD's CEL rules): the object never exists.
	schema := map[string]func(*v1alpha1.NetworkChaos){
		"CoreDNS in kube-system": func(nc *v1alpha1.NetworkChaos) {
			nc.Spec.Selector.Pods = map[string][]string{"kube-system": {dns.Name}}
			nc.Spec.ExternalTargets = []string{"10.96.0.1"}
		},
		"0.0.0.0/1":                           func(nc *v1alpha1.NetworkChaos) { nc.Spec.ExternalTargets = []string{"0.0.0.0/1"} },
		"ten years":                           func(nc *v1alpha1.NetworkChaos) { d := "87600h"; nc.Spec.Duration = &d },
		"17 targets":                          func(nc *v1alpha1.NetworkChaos) { nc.Spec.ExternalTargets = targets17() },
		"the agent's own (fencecheck-system)": func(nc *v1alpha1.NetworkChaos) { nc.Spec.Selector.Pods = map[string][]string{AgentNamespace: {"x"}} },
	}
	for name, mut := range schema {
		nc := base()
		mut(nc)
		_, err := e.create(ctx, nc)
		if err == nil || !apierrors.IsInvalid(err) {
			t.Errorf("%s: created (err %v), want the apiserver to refuse it", name, err)
			continue
		}
		t.Logf("%s: refused by the apiserver: %v", name, err)
	}
	if r := e.podRoutesIn(t, dns.Spec.NodeName, "kube-system", dns.Name); len(r) != 0 {
		t.Errorf("rules in CoreDNS's namespace: %v", r)
	}
	if r := e.podRoutes(t, node, prober); len(r) != 0 {
		t.Errorf("rules on %s: %v", prober, r)
	}

	// Refused by the agent (no schema reads namespace labels): a pod in a
	// namespace that did not opt in, selected from an opted-in one, and
	// from its own namespace.
	victim := e.closedPod(t, ctx)
	for _, objNS := range []string{testNS, closedNS} {
		nc := NewPartition(PartitionSpec{Namespace: objNS, PodNamespace: closedNS, PodName: victim.Name, Targets: e.targets, Duration: 30 * time.Second})
		name, err := e.create(ctx, nc)
		if err != nil {
			t.Fatalf("create in %s: %v", objNS, err)
		}
		reason := e.waitRefused(t, ctx, objNS, name)
		t.Logf("object in %s selecting %s/%s: refused by the agent: %s", objNS, closedNS, victim.Name, reason)
		if !strings.Contains(reason, "did not opt in") {
			t.Errorf("reason %q", reason)
		}
		if r := e.podRoutesIn(t, victim.Spec.NodeName, closedNS, victim.Name); len(r) != 0 {
			t.Errorf("rules installed in %s/%s: %v", closedNS, victim.Name, r)
		}
		e.ex.Delete(ctx, objNS, name)
	}
}

func targets17() []string {
	var out []string
	for i := 1; i <= 17; i++ {
		out = append(out, fmt.Sprintf("10.0.0.%d", i))
	}
	return out
}

// closedPod runs a probe pod in a namespace without the opt-in label.
func (e *env) closedPod(t *testing.T, ctx context.Context) *corev1.Pod {
	t.Helper()
	_, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: closedNS}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: closedNS},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "probe", Image: "fencecheck/probe:dev", ImagePullPolicy: corev1.PullNever, Args: []string{"serve", "--addr", ":8080"}}}}}
	if _, err := e.kube.CoreV1().Pods(closedNS).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var got *corev1.Pod
	waitFor(t, ctx, "pod "+closedNS+"/victim running", func() (bool, string) {
		got, err = e.kube.CoreV1().Pods(closedNS).Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.PodRunning && got.Status.PodIP != "", string(got.Status.Phase)
	})
	return got
}

// An edit that would extend a live cut: the apiserver refuses a spec
// change; an annotation change (which no schema rule sees) is refused by
// the agent, which heals the cut and keeps nothing past the first deadline.
func TestEditExtendingALiveCutRefused(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var node, prober string
	for n, p := range e.probers {
		node, prober = n, p
	}
	w, err := e.ex.Inject(ctx, NewPartition(PartitionSpec{PodNamespace: testNS, PodName: prober, Targets: e.targets, TCPPorts: e.ports, Duration: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.ex.Delete(context.Background(), testNS, w.Name)
	ri := e.ex.dyn.Resource(GVR).Namespace(testNS)
	_, err = ri.Patch(ctx, w.Name, types.MergePatchType, []byte(`{"spec":{"duration":"10m"}}`), metav1.PatchOptions{})
	if err == nil || !apierrors.IsInvalid(err) {
		t.Fatalf("spec.duration 30s → 10m on a live cut: %v, want the apiserver to refuse it", err)
	}
	t.Logf("duration edit refused by the apiserver: %v", err)
	if r := e.podRoutes(t, node, prober); len(r) == 0 {
		t.Fatal("the cut is gone after a refused edit")
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"1,2,3"}}}`, plan.PortsAnnotation)
	if _, err := ri.Patch(ctx, w.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotation edit: %v", err)
	}
	reason := e.waitRefused(t, ctx, testNS, w.Name)
	t.Logf("annotation edit refused by the agent: %s", reason)
	waitFor(t, ctx, "the edited cut healed", func() (bool, string) {
		r := e.podRoutes(t, node, prober)
		return len(r) == 0, fmt.Sprint(r)
	})
}

// The agent, cut off from the apiserver inside its own pod and restarted
// mid-cut, still heals on time: its heal loop reads only the node ledger.
func TestAgentRestartedWithAPIServerUnreachableHealsOnTime(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	node, pod, agentPod, dur := e.leastRestartedAgent(t, ctx)
	w, err := e.ex.Inject(ctx, NewPartition(PartitionSpec{PodNamespace: testNS, PodName: pod, Targets: e.targets, TCPPorts: e.ports, Duration: dur}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.ex.Delete(context.Background(), testNS, w.Name)
	nc, err := e.ex.get(ctx, testNS, w.Name)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := plan.Deadline(nc)
	// Blackhole every apiserver address inside the agent's pod network
	// namespace (not tagged proto 147: the agent must not own them).
	var add, del []string
	for _, ip := range e.targets {
		add = append(add, fmt.Sprintf(`ip -n "$n" route add blackhole %s/32`, ip))
		del = append(del, fmt.Sprintf(`ip -n "$n" route del blackhole %s/32`, ip))
	}
	inAgentNS := func(cmds []string) string {
		return fmt.Sprintf(`for n in $(ip netns list | cut -d' ' -f1); do if ip -n "$n" -o addr show | grep -q " inet $0/"; then %s; exit 0; fi; done; exit 3`, strings.Join(cmds, "; "))
	}
	if out, err := exec.Command("docker", "exec", node, "sh", "-c", inAgentNS(add), agentPod.Status.PodIP).CombinedOutput(); err != nil {
		t.Fatalf("blackhole the apiserver in the agent's pod: %v %s", err, out)
	}
	defer func() {
		out, err := exec.Command("docker", "exec", node, "sh", "-c", inAgentNS(del), agentPod.Status.PodIP).CombinedOutput()
		t.Logf("apiserver reachable again from the agent's pod: %v %s", err, out)
	}()
	t.Logf("apiserver blackholed inside the agent's pod %s on %s", agentPod.Name, node)
	before := restartCount(ctx, e, agentPod.Name)
	killed := e.killAgent(t, node)
	waitFor(t, ctx, "the agent container restarted (it cannot become Ready: no apiserver)", func() (bool, string) {
		n := restartCount(ctx, e, agentPod.Name)
		return n > before, fmt.Sprintf("restarts %d", n)
	})
	requireRestartMargin(t, "restarted", killed, end, 3*time.Second)
	if r := e.podRoutes(t, node, pod); len(r) != len(e.targets)*len(e.ports) {
		t.Fatalf("after the restart, before the deadline: rules %v", r)
	}
	var gone time.Time
	for time.Now().Before(end.Add(20 * time.Second)) {
		if len(e.podRoutes(t, node, pod)) == 0 {
			gone = time.Now()
			break
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
	if gone.IsZero() {
		t.Fatal("the cut was not healed within 20s of its deadline with the apiserver unreachable")
	}
	t.Logf("healed %s after the deadline with the apiserver unreachable from the restarted agent", gone.Sub(end).Round(time.Millisecond))
	if gone.Before(end.Add(-time.Second)) {
		t.Fatalf("healed %s before the deadline", end.Sub(gone))
	}
}

func restartCount(ctx context.Context, e *env, agentPod string) int32 {
	a, err := e.kube.CoreV1().Pods(AgentNamespace).Get(ctx, agentPod, metav1.GetOptions{})
	if err != nil || len(a.Status.ContainerStatuses) == 0 {
		return -1
	}
	return a.Status.ContainerStatuses[0].RestartCount
}

// leastRestartedAgent picks the node whose agent restarted least and a
// chaos length that outlasts the kubelet's restart delay (kubeletRestartDelay)
// plus restartBudget for the restart itself.
func (e *env) leastRestartedAgent(t *testing.T, ctx context.Context) (node, pod string, agent corev1.Pod, dur time.Duration) {
	t.Helper()
	least := int32(1 << 30)
	for n, p := range e.probers {
		l, err := e.kube.CoreV1().Pods(AgentNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
		if err != nil || len(l.Items) != 1 || len(l.Items[0].Status.ContainerStatuses) == 0 {
			t.Fatalf("agent pod on %s: %v", n, err)
		}
		if r := l.Items[0].Status.ContainerStatuses[0].RestartCount; r < least {
			least, node, pod, agent = r, n, p, l.Items[0]
		}
	}
	dur = min(restartBudget+kubeletRestartDelay(least), plan.MaxDuration)
	t.Logf("agent %s on %s has restarted %d times: chaos of %s", agent.Name, node, least, dur)
	return node, pod, agent, dur
}

// restartBudget is what a killed agent gets, beyond the kubelet's delay, to
// be seen dead, started and Ready and still leave the test its margin
// before the deadline. Each test logs what its restart took: on the
// 2026-12-07 machine a first restart was Ready 2.3 s after the kill, a
// second one (10 s back-off) restarted after 15.1 s.
const restartBudget = 20 * time.Second

// kubeletRestartDelay bounds how long the kubelet waits to restart a
// container that has restarted n times (pkg/kubelet, v1.35). The first
// restart is immediate; after that the back-off is 10s, doubling up to 5
// min, and the pod worker retries a container still in back-off after the
// time left, jittered up to 1.5x (pod_workers.go completeWork). Measured
// here: 14.5-15.1 s for n=1, 25.5-27.7 s for n=2, 45-54 s for n=3. The
// back-off forgets a container that ran 10 min without a crash, which
// only makes the real wait shorter than this bound.
func kubeletRestartDelay(n int32) time.Duration {
	if n <= 0 {
		return 0
	}
	backoff := min(10*time.Second<<min(n-1, 5), 5*time.Minute)
	return backoff + backoff/2
}

// killAgent SIGKILLs the agent process on node and says when.
func (e *env) killAgent(t *testing.T, node string) time.Time {
	t.Helper()
	pid, err := exec.Command("docker", "exec", node, "pgrep", "-x", "chaos-agent").Output()
	if err != nil {
		t.Fatalf("find the agent's pid on %s: %v", node, err)
	}
	if out, err := exec.Command("docker", "exec", node, "kill", "-9", strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
		t.Fatalf("kill -9 agent pid %s: %v %s", pid, err, out)
	}
	t.Logf("agent on %s (pid %s) SIGKILLed", node, strings.TrimSpace(string(pid)))
	return time.Now()
}

// requireRestartMargin says how long the agent's restart took and what it
// left before the deadline (the margin restartBudget must keep on slower
// machines), and stops the test when less than margin is left: too late
// to check that the chaos outlived the agent.
func requireRestartMargin(t *testing.T, what string, killed, end time.Time, margin time.Duration) {
	t.Helper()
	left := time.Until(end)
	t.Logf("%s %s after the kill, %s before the deadline", what, time.Since(killed).Round(time.Millisecond), left.Round(time.Millisecond))
	if left < margin {
		t.Fatalf("the agent %s only %s before the deadline, want at least %s (kubelet back-off?)", what, left.Round(time.Millisecond), margin)
	}
}
