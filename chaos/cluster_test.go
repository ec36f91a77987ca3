//go:build cluster

package chaos

// Proof on the kind cluster (make cluster-test; needs `make kind-up` and
// `bash scripts/images.sh chaos-agent probe`). A "prober" pod (probe poll)
// on the control-plane node and one on a worker poll the apiserver and a
// Service every 200ms; we partition each off the apiserver and read its
// counters through the apiserver's pod proxy, and look for our tagged
// routes (proto 147) in every network namespace of the node with docker
// exec.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const testNS = "fencecheck-chaos-test"

// The SIGKILL reliability test re-executes this binary as the harness.
func TestMain(m *testing.M) {
	if os.Getenv("FENCECHECK_CHAOS_HELPER") == "1" {
		os.Exit(helperHarness())
	}
	os.Exit(m.Run())
}

// helperHarness creates a partition, prints INJECTED, then waits to be killed.
func helperHarness() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	ex, err := NewBuiltIn(cfg, Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	d, _ := time.ParseDuration(os.Getenv("FENCECHECK_CHAOS_DURATION"))
	if os.Getenv("FENCECHECK_CHAOS_KIND") == "pause" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		w, err := ex.Pause(ctx, NewPause(PauseSpec{PodNamespace: testNS, PodName: os.Getenv("FENCECHECK_CHAOS_POD"), Duration: d}))
		if err != nil {
			fmt.Println("ERROR", err)
			return 1
		}
		fmt.Println("INJECTED", w.Name)
		select {} // the parent SIGKILLs us here
	}
	nc := NewPartition(PartitionSpec{PodNamespace: testNS, PodName: os.Getenv("FENCECHECK_CHAOS_POD"),
		Targets: strings.Split(os.Getenv("FENCECHECK_CHAOS_TARGETS"), ","), Duration: d})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := ex.Inject(ctx, nc)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("INJECTED", w.Name)
	select {} // the parent SIGKILLs us here
}

// killedHarness runs this binary as the harness (helperHarness) with env,
// SIGKILLs it once it says INJECTED and returns the object's name.
// onEachNode runs one for i in [0, runs), run i on nodes[i%len(nodes)]:
// the runs of a node one after another in a subtest of its own, the nodes
// at once. A node's fault is its own (its agent, its pod), so the nodes
// need not wait for each other, and every run still has a node to itself.
// It returns when every run is done.
func onEachNode(t *testing.T, nodes []string, runs int, one func(t *testing.T, i int, node string)) {
	t.Helper()
	t.Run("nodes", func(t *testing.T) {
		for k, node := range nodes {
			t.Run(node, func(t *testing.T) {
				t.Parallel()
				for i := k; i < runs; i += len(nodes) {
					one(t, i, node)
				}
			})
		}
	})
}

func killedHarness(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "FENCECHECK_CHAOS_HELPER=1"), env...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !strings.HasPrefix(line, "INJECTED ") {
		t.Fatalf("harness said %q", line)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "INJECTED "))
}

type env struct {
	cfg     *rest.Config
	kube    kubernetes.Interface
	ex      *BuiltIn
	targets []string
	ports   []int
	probers map[string]string // node → prober pod
}

// clusterClients connects to $KUBECONFIG's cluster and checks the docker CLI
// (the tests inspect the nodes with docker exec).
func clusterClients(t *testing.T) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		t.Fatal("KUBECONFIG is not set: run `make kind-up` and `bash scripts/images.sh chaos-agent probe` (make cluster-test does both)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v (run make kind-up)", kc, err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		t.Fatalf("cluster not reachable through %s: %v (run make kind-up)", kc, err)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatal("docker CLI needed to inspect the nodes: run make kind-up")
	}
	return cfg, kube
}

func setup(t *testing.T) *env {
	t.Helper()
	cfg, kube := clusterClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ex, err := NewBuiltIn(cfg, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Install(ctx); err != nil {
		t.Fatalf("install the chaos agent: %v (are the images loaded? bash scripts/images.sh chaos-agent probe)", err)
	}
	targets, err := APIServerTargets(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := APIServerPorts(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cfg: cfg, kube: kube, ex: ex, targets: targets, ports: ports, probers: map[string]string{}}
	e.deployProbes(t, ctx)
	return e
}

func (e *env) deployProbes(t *testing.T, ctx context.Context) {
	t.Helper()
	optIn := map[string]string{plan.AllowLabel: plan.AllowValue} // the agent refuses any other namespace
	_, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: optIn}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, plan.AllowLabel, plan.AllowValue)
		_, err = e.kube.CoreV1().Namespaces().Patch(ctx, testNS, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cp, worker string
	for _, n := range nodes.Items {
		if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
			cp = n.Name
		} else if worker == "" {
			worker = n.Name
		}
	}
	tol := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	pod := func(name, node string, labels map[string]string, args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, Tolerations: tol, TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{Name: "probe", Image: "fencecheck/probe:dev", ImagePullPolicy: corev1.PullNever, Args: args}}},
		}
	}
	want := []*corev1.Pod{pod("server", "", map[string]string{"app": "probe-server"}, "serve", "--addr", ":8080")}
	for role, node := range map[string]string{"cp": cp, "worker": worker} {
		if node == "" {
			continue
		}
		name := "prober-" + role
		e.probers[node] = name
		want = append(want, pod(name, node, map[string]string{"app": "prober"}, "poll", "--interval", "200ms", "--url", "http://probe-server:8080/ping", "--addr", ":8081"))
	}
	for _, p := range want {
		if _, err := e.kube.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "probe-server", Namespace: testNS},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "probe-server"}, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := e.kube.CoreV1().Services(testNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, p := range want {
		waitFor(t, ctx, "pod "+p.Name+" running", func() (bool, string) {
			got, err := e.kube.CoreV1().Pods(testNS).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Status.Phase == corev1.PodRunning && got.Status.PodIP != "", podState(got)
		})
	}
	// Both counters must move before any cut: otherwise "fails during the cut" proves nothing.
	for _, name := range e.probers {
		s0 := e.stats(t, ctx, name)
		waitFor(t, ctx, name+" reaching the apiserver and the service", func() (bool, string) {
			s := e.stats(t, ctx, name)
			return s.APIServerOK > s0.APIServerOK+2 && s.URLOK > s0.URLOK+2, fmt.Sprintf("%+v", s)
		})
	}
}

// podState is the phase with each waiting container's reason, so a pod
// that cannot start (ErrImageNeverPull: images not loaded) says so.
func podState(p *corev1.Pod) string {
	st := string(p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			st += fmt.Sprintf(", %s: %s %s", c.Name, w.Reason, w.Message)
		}
	}
	return st
}

type probeStats struct {
	APIServerOK   int64  `json:"apiserver_ok"`
	APIServerFail int64  `json:"apiserver_fail"`
	URLOK         int64  `json:"url_ok"`
	URLFail       int64  `json:"url_fail"`
	LastAPIError  string `json:"last_apiserver_error"`
}

// stats reads the prober's counters through the apiserver's pod proxy (the
// test's own apiserver access is never cut).
func (e *env) stats(t *testing.T, ctx context.Context, pod string) probeStats {
	t.Helper()
	var s probeStats
	var last error
	for i := 0; i < 10; i++ { // setup-style retry of a read through the proxy, logged
		b, err := e.kube.CoreV1().Pods(testNS).ProxyGet("http", pod, "8081", "/stats", nil).DoRaw(ctx)
		if err == nil {
			if err = json.Unmarshal(b, &s); err == nil {
				return s
			}
		}
		last = err
		t.Logf("read %s/stats: %v (retrying)", pod, err)
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
	t.Fatalf("read %s/stats: %v", pod, last)
	return s
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(250 * time.Millisecond) // polling with a deadline
	}
	t.Fatalf("timed out waiting for %s (last: %s)", what, last)
}

// podRoutes lists our tagged routes and rules in the network namespace of
// pod on node (found by its IP), read with docker exec on the node. Only
// that namespace: other suites may partition other pods on the same node.
func (e *env) podRoutes(t *testing.T, node, pod string) []string {
	t.Helper()
	return e.podRoutesIn(t, node, testNS, pod)
}

// podRoutesIn is podRoutes for a pod of any namespace.
func (e *env) podRoutesIn(t *testing.T, node, ns, pod string) []string {
	t.Helper()
	p, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	script := `found=0; for n in $(ip netns list | cut -d' ' -f1); do
  if ip -n "$n" -o addr show | grep -q " inet $0/"; then found=1; ip -n "$n" route show proto 147; ip -n "$n" rule show | grep 'proto 147' || true; fi
done; [ $found = 1 ] || { echo "no netns holds $0" >&2; exit 3; }`
	out, err := exec.Command("docker", "exec", node, "sh", "-c", script, p.Status.PodIP).CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec %s: %v\n%s", node, err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// One prober per node, cut at the same time: each cut is scoped to one
// pod's network namespace, so neither may hurt the other.
func TestPartitionCutsOnlyTheAPIServer(t *testing.T) {
	e := setup(t)
	nodes := slices.Sorted(maps.Keys(e.probers))
	onEachNode(t, nodes, len(nodes), func(t *testing.T, _ int, node string) {
		pod := e.probers[node]
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		const dur = 12 * time.Second
		// Port-scoped (the CLI's default): the apiserver's pod proxy can
		// still read the prober's counters from another node.
		nc := NewPartition(PartitionSpec{PodNamespace: testNS, PodName: pod, Targets: e.targets, TCPPorts: e.ports, Duration: dur})
		w, err := e.ex.Inject(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		defer e.ex.Delete(context.Background(), testNS, w.Name)
		if r := e.podRoutes(t, node, pod); len(r) != len(e.targets)*len(e.ports) {
			t.Fatalf("node %s during the cut: want %d tagged rules, have %v", node, len(e.targets)*len(e.ports), r)
		} else {
			t.Logf("routes on %s: %v", node, r)
		}
		// Measure from the first failure on, so requests in flight at
		// injection do not count either way.
		waitFor(t, ctx, "one failed apiserver request after injection", func() (bool, string) {
			s := e.stats(t, ctx, pod)
			return s.LastAPIError != "" && s.APIServerFail > 0, fmt.Sprintf("%+v", s)
		})
		in0 := e.stats(t, ctx, pod)
		waitFor(t, ctx, "5 more failed apiserver requests", func() (bool, string) {
			s := e.stats(t, ctx, pod)
			return s.APIServerFail >= in0.APIServerFail+5, fmt.Sprintf("%+v", s)
		})
		in1 := e.stats(t, ctx, pod)
		t.Logf("inside the cut: apiserver ok +%d fail +%d, service ok +%d fail +%d (last apiserver error %q)",
			in1.APIServerOK-in0.APIServerOK, in1.APIServerFail-in0.APIServerFail, in1.URLOK-in0.URLOK, in1.URLFail-in0.URLFail, in1.LastAPIError)
		if in1.APIServerOK != in0.APIServerOK {
			t.Errorf("apiserver requests succeeded during the cut: +%d", in1.APIServerOK-in0.APIServerOK)
		}
		if in1.URLFail != in0.URLFail || in1.URLOK < in0.URLOK+3 {
			t.Errorf("service traffic hurt by the cut: ok +%d fail +%d", in1.URLOK-in0.URLOK, in1.URLFail-in0.URLFail)
		}
		rw, err := e.ex.WaitRecovered(ctx, testNS, w.Name)
		if err != nil {
			t.Fatal(err)
		}
		length := rw.Recovered.Sub(rw.Injected)
		t.Logf("window %s → %s (%s for a %s partition)", rw.Injected.Format(time.RFC3339Nano), rw.Recovered.Format(time.RFC3339Nano), length, dur)
		if length < dur-time.Second || length > dur+3*time.Second {
			t.Errorf("partition lasted %s, asked %s", length, dur)
		}
		if r := e.podRoutes(t, node, pod); len(r) != 0 {
			t.Fatalf("routes left on %s after recovery: %v", node, r)
		}
		after := e.stats(t, ctx, pod)
		waitFor(t, ctx, "apiserver reachable again", func() (bool, string) {
			s := e.stats(t, ctx, pod)
			return s.APIServerOK > after.APIServerOK+2, fmt.Sprintf("%+v", s)
		})
	})
}

// The harness is SIGKILLed right after injection, 20 times: the agent must
// heal every partition on time and leave no route behind.
func TestHarnessKilledMidPartitionLeavesNoRule(t *testing.T) {
	e := setup(t)
	const runs = 20
	const dur = 4 * time.Second
	nodes := slices.Sorted(maps.Keys(e.probers))
	var mu sync.Mutex // the tallies, from one subtest per node
	healed, maxLate, maxAgentLate := 0, time.Duration(0), time.Duration(0)
	onEachNode(t, nodes, runs, func(t *testing.T, i int, node string) {
		pod := e.probers[node]
		name := killedHarness(t, "FENCECHECK_CHAOS_POD="+pod, "FENCECHECK_CHAOS_DURATION="+dur.String(), "FENCECHECK_CHAOS_TARGETS="+strings.Join(e.targets, ","))
		if r := e.podRoutes(t, node, pod); len(r) == 0 {
			t.Fatalf("run %d: no routes on %s right after injection: the check below would prove nothing", i, node)
		}
		nc, err := e.ex.get(context.Background(), testNS, name)
		if err != nil {
			t.Fatal(err)
		}
		end, _ := plan.Deadline(nc)
		var gone time.Time
		for time.Now().Before(end.Add(20 * time.Second)) {
			if len(e.podRoutes(t, node, pod)) == 0 {
				gone = time.Now()
				break
			}
			time.Sleep(100 * time.Millisecond) // polling with a deadline
		}
		rw, err := e.ex.WaitRecovered(context.Background(), testNS, name)
		if err != nil {
			t.Errorf("run %d: recovery not recorded: %v", i, err)
		}
		e.ex.Delete(context.Background(), testNS, name)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			maxAgentLate = max(maxAgentLate, rw.Recovered.Sub(end))
		}
		if gone.IsZero() {
			t.Errorf("run %d (%s on %s): routes still there 20s after the deadline", i, name, node)
			return
		}
		if gone.Before(end.Add(-time.Second)) {
			t.Errorf("run %d: healed %s before the deadline", i, end.Sub(gone))
		}
		maxLate = max(maxLate, gone.Sub(end))
		healed++
	})
	t.Logf("harness SIGKILLed mid-partition %d times: %d healed with no route left; latest recovery recorded by the agent %s after the deadline, latest seen by docker exec polling %s after",
		runs, healed, maxAgentLate.Round(time.Millisecond), maxLate.Round(time.Millisecond))
	if healed != runs {
		t.Fatalf("%d/%d partitions left routes behind", runs-healed, runs)
	}
}

// The agent itself is SIGKILLed mid-partition: its restarted container
// finds the routes, keeps them while the object is active, and heals them
// at the deadline computed from the object.
func TestAgentKilledMidPartitionStillHealsOnTime(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	node, pod, agentPod, dur := e.leastRestartedAgent(t, ctx)
	ctx, cancel2 := context.WithTimeout(ctx, dur+2*time.Minute)
	defer cancel2()
	w, err := e.ex.Inject(ctx, NewPartition(PartitionSpec{PodNamespace: testNS, PodName: pod, Targets: e.targets, TCPPorts: e.ports, Duration: dur}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.ex.Delete(context.Background(), testNS, w.Name)
	before := restartCount(ctx, e, agentPod.Name)
	killed := e.killAgent(t, node)
	waitFor(t, ctx, "the agent container restarted and Ready", func() (bool, string) {
		a, err := e.kube.CoreV1().Pods(AgentNamespace).Get(ctx, agentPod.Name, metav1.GetOptions{})
		if err != nil || len(a.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		cs := a.Status.ContainerStatuses[0]
		return cs.RestartCount > before && cs.Ready, fmt.Sprintf("restarts %d ready %v", cs.RestartCount, cs.Ready)
	})
	nc, err := e.ex.get(ctx, testNS, w.Name)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := plan.Deadline(nc)
	requireRestartMargin(t, "restarted and Ready", killed, end, 5*time.Second) // to check the cut survived
	if r := e.podRoutes(t, node, pod); len(r) != len(e.targets)*len(e.ports) {
		t.Fatalf("after the agent restart, before the deadline: rules %v", r)
	}
	rw, err := e.ex.WaitRecovered(ctx, testNS, w.Name)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.podRoutes(t, node, pod); len(r) != 0 {
		t.Fatalf("routes left after recovery: %v", r)
	}
	t.Logf("recovered %s after the deadline (window %s)", rw.Recovered.Sub(end).Round(time.Millisecond), rw.Recovered.Sub(rw.Injected).Round(time.Millisecond))
	if rw.Recovered.Before(end) {
		t.Fatalf("recovered %s before the deadline", end.Sub(rw.Recovered))
	}
}
