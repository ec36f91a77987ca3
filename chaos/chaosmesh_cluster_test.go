//go:build cluster

package chaos

// The same partition proofs as TestPartitionCutsOnlyTheAPIServer, with the
// real Chaos Mesh as the executor (make chaos-mesh-test: it installs Chaos
// Mesh, runs these, and brings our agent back). Chaos Mesh has no port
// scope: it drops everything the pod sends to the apiserver's addresses,
// so the apiserver's pod proxy cannot read the prober's counters during
// the cut (the replies go to the apiserver's node address). The counters
// are read before and after; what happened inside the window comes from
// the prober's own log (one timestamped line per change of state), read
// through the kubelet, which the cut does not touch.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// chaosMeshEnv is env with Chaos Mesh acting on the objects. Chaos Mesh
// missing is a failure under make chaos-mesh-test (FENCECHECK_CHAOS_MESH=1)
// and a skip that says why elsewhere (make cluster-test runs our agent).
func chaosMeshEnv(t *testing.T) (*env, *ChaosMesh) {
	t.Helper()
	notRun := t.Skipf
	if os.Getenv("FENCECHECK_CHAOS_MESH") == "1" {
		notRun = t.Fatalf
	}
	cfg, kube := clusterClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ok, err := HasChaosMesh(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		notRun("DID NOT RUN: Chaos Mesh is not installed (no %s Deployment): run `make chaos-mesh-test` (it builds Chaos Mesh, installs it and runs these)", ChaosMeshController)
	}
	if d, err := kube.AppsV1().Deployments("chaos-mesh").Get(ctx, ChaosMeshController, metav1.GetOptions{}); err != nil || d.Status.ReadyReplicas < 1 {
		notRun("DID NOT RUN: Chaos Mesh's controller is not ready (%v): are its images loaded? make chaos-mesh-up", err)
	}
	// One actor per object: our agent must be off.
	if l, err := kube.CoreV1().Pods("fencecheck-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=chaos-agent"}); err != nil || len(l.Items) > 0 {
		t.Fatalf("our chaos agent is running beside Chaos Mesh (%v): make chaos-mesh-up turns it off", err)
	}
	ex, err := NewChaosMesh(cfg, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	targets, err := APIServerTargets(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cfg: cfg, kube: kube, targets: targets, probers: map[string]string{}}
	e.deployProbes(t, ctx)
	return e, ex
}

// chaosMeshRules lists, in pod's network namespace on node, the Chaos Mesh
// chains in effect: the jumps from CHAOS-INPUT/CHAOS-OUTPUT (its daemon
// flushes those on recovery and leaves the per-object chains unlinked),
// each with its chain's DROP rules, read with both iptables back ends; and
// our agent's tagged routes (never there while the agent is off).
func (e *env) chaosMeshRules(t *testing.T, node, pod string) (active, ours []string) {
	t.Helper()
	p, err := e.kube.CoreV1().Pods(testNS).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	script := `found=0; for n in $(ip netns list | cut -d' ' -f1); do
  if ip -n "$n" -o addr show | grep -q " inet $0/"; then found=1
    for ipt in iptables-nft iptables-legacy; do
      ip netns exec "$n" $ipt -w -S 2>/dev/null > /tmp/fc-ipt.$$ || continue
      grep -E -- '^-A CHAOS-(INPUT|OUTPUT) -j ' /tmp/fc-ipt.$$ | while read -r _ _ _ c; do
        echo "$ipt jump to $c: $(grep -E -- "^-A $c .*-j DROP" /tmp/fc-ipt.$$ | tr '\n' ';')"
      done
    done; rm -f /tmp/fc-ipt.$$
    ip -n "$n" route show proto 147 | sed 's/^/ours /'; ip -n "$n" rule show | grep 'proto 147' | sed 's/^/ours /'
  fi
done; [ $found = 1 ] || { echo "no netns holds $0" >&2; exit 3; }`
	out, err := exec.Command("docker", "exec", node, "sh", "-c", script, p.Status.PodIP).CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec %s: %v\n%s", node, err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "ours "):
			ours = append(ours, l)
		case strings.Contains(l, " jump to "):
			active = append(active, l)
		}
	}
	return active, ours
}

// stateLine is one line of the prober's log: "<RFC3339Nano> <target> ok|fail[: error]".
type stateLine struct {
	at     time.Time
	target string
	ok     bool
}

func (e *env) proberStates(t *testing.T, ctx context.Context, pod string, since time.Time) []stateLine {
	t.Helper()
	st := metav1.NewTime(since)
	b, err := e.kube.CoreV1().Pods(testNS).GetLogs(pod, &corev1.PodLogOptions{SinceTime: &st}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	var out []stateLine
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil || at.Before(since) {
			continue
		}
		out = append(out, stateLine{at: at, target: f[1], ok: f[2] == "ok"})
	}
	return out
}

func TestChaosMeshPartitionCutsTheAPIServer(t *testing.T) {
	e, ex := chaosMeshEnv(t)
	for node, pod := range e.probers {
		t.Run(pod, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			const dur = 12 * time.Second
			s0 := e.stats(t, ctx, pod)
			before := time.Now()
			nc := NewPartition(PartitionSpec{PodNamespace: testNS, PodName: pod, Targets: e.targets, Duration: dur})
			w, err := ex.Inject(ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Delete(context.Background(), testNS, w.Name)
			rules, ours := e.chaosMeshRules(t, node, pod)
			t.Logf("Chaos Mesh's rules in %s's netns on %s: %v", pod, node, rules)
			if len(rules) == 0 || !strings.Contains(strings.Join(rules, " "), "--match-set") {
				t.Fatalf("Chaos Mesh reported %s injected, but its netns on %s has no CHAOS-* jump to a DROP on a target set: %v", pod, node, rules)
			}
			if len(ours) > 0 {
				t.Fatalf("our agent's routes are in the netns too (two actors): %v", ours)
			}
			// No port scope: the apiserver's pod proxy (it connects from the
			// control-plane node's address, one of the targets) is cut too,
			// where our agent's port-scoped cut lets it through.
			pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
			_, perr := e.kube.CoreV1().Pods(testNS).ProxyGet("http", pod, "8081", "/stats", nil).DoRaw(pctx)
			pcancel()
			t.Logf("pod proxy to %s during the cut: %v", pod, perr)
			if perr == nil && pod == "prober-worker" {
				t.Errorf("the apiserver's pod proxy reached %s during a Chaos Mesh cut: docs/chaos.md says it cannot", pod)
			}
			rw, err := ex.WaitRecovered(ctx, testNS, w.Name)
			if err != nil {
				t.Fatal(err)
			}
			// Chaos Mesh counts the duration from the object's creation, so
			// the cut is shorter than asked by its injection latency: judge
			// the heal against creation + duration, not the window's length.
			obj, err := ex.get(ctx, testNS, w.Name)
			if err != nil {
				t.Fatal(err)
			}
			created := obj.CreationTimestamp.Time
			deadline := created.Add(dur)
			t.Logf("created %s, injected %s (+%s), recovered %s (%s after creation + duration); window %s for a %s partition; Chaos Mesh's times are whole seconds",
				created.Format(time.RFC3339), rw.Injected.Format(time.RFC3339), rw.Injected.Sub(created), rw.Recovered.Format(time.RFC3339),
				rw.Recovered.Sub(deadline), rw.Recovered.Sub(rw.Injected), dur)
			if rw.Recovered.Before(deadline.Add(-time.Second)) || rw.Recovered.After(deadline.Add(3*time.Second)) {
				t.Errorf("recovered at %s, want creation + duration = %s (-1s, +3s)", rw.Recovered.Format(time.RFC3339), deadline.Format(time.RFC3339))
			}
			if l := rw.Recovered.Sub(rw.Injected); l < dur-4*time.Second {
				t.Errorf("the cut lasted %s of the %s asked", l, dur)
			}
			if rules, _ := e.chaosMeshRules(t, node, pod); len(rules) != 0 {
				t.Fatalf("rules left on %s after recovery: %v", node, rules)
			}
			waitFor(t, ctx, "apiserver reachable again", func() (bool, string) {
				s := e.stats(t, ctx, pod)
				return s.APIServerOK > s0.APIServerOK+2, fmt.Sprintf("%+v", s)
			})
			s1 := e.stats(t, ctx, pod)

			// Inside the window, from the prober's log: the apiserver (a
			// kept-open connection, then new ones as the client redials)
			// turns failing soon after injection and stays failing until
			// the recovery; the Service never fails.
			var failAt, okAt time.Time
			for _, l := range e.proberStates(t, ctx, pod, before) {
				switch {
				case l.target == "apiserver" && !l.ok && failAt.IsZero():
					failAt = l.at
				case l.target == "apiserver" && l.ok && !failAt.IsZero() && okAt.IsZero():
					okAt = l.at
				case l.target == "url" && !l.ok:
					t.Errorf("service traffic failed at %s, inside the window: the cut was not limited to the apiserver", l.at.Format(time.RFC3339Nano))
				}
			}
			if failAt.IsZero() || okAt.IsZero() {
				t.Fatalf("the prober's log has no apiserver fail→ok pair after %s (fail %v, ok %v)", before.Format(time.RFC3339Nano), failAt, okAt)
			}
			t.Logf("prober: apiserver failing from %s to %s (%s); injected %s, recovered %s",
				failAt.Format(time.RFC3339Nano), okAt.Format(time.RFC3339Nano), okAt.Sub(failAt).Round(time.Millisecond),
				rw.Injected.Format(time.RFC3339), rw.Recovered.Format(time.RFC3339))
			// Whole-second status times: allow one second either way.
			if failAt.After(rw.Injected.Add(3 * time.Second)) {
				t.Errorf("first apiserver failure %s after the injection", failAt.Sub(rw.Injected))
			}
			if okAt.Before(rw.Recovered.Add(-time.Second)) {
				t.Errorf("apiserver reachable at %s, %s before the recovery: the cut did not hold", okAt.Format(time.RFC3339Nano), rw.Recovered.Sub(okAt))
			}
			if late := okAt.Sub(deadline); late > 5*time.Second {
				t.Errorf("apiserver reachable only %s after the deadline: the heal was late", late)
			}
			if s1.URLFail != s0.URLFail {
				t.Errorf("service requests failed across the window: +%d", s1.URLFail-s0.URLFail)
			}
			// The prober's rounds wait for both requests, so during the cut a
			// round lasts the apiserver request's 1s timeout: ~1 Service
			// request per second, not one per 200ms.
			if want := int64(dur/time.Second) / 2; s1.URLOK-s0.URLOK < want {
				t.Errorf("service requests across the window: +%d ok, want at least %d", s1.URLOK-s0.URLOK, want)
			}
			if s1.APIServerFail-s0.APIServerFail < 5 {
				t.Errorf("apiserver failures across the window: +%d, want at least 5", s1.APIServerFail-s0.APIServerFail)
			}
			t.Logf("across the window: apiserver ok +%d fail +%d, service ok +%d fail +%d (last apiserver error %q)",
				s1.APIServerOK-s0.APIServerOK, s1.APIServerFail-s0.APIServerFail, s1.URLOK-s0.URLOK, s1.URLFail-s0.URLFail, s1.LastAPIError)
		})
	}
}

// Chaos Mesh heals from its controller: with the controller down at the
// deadline, the cut outlives it (our agent heals from its node ledger).
// The controller comes back and heals it.
func TestChaosMeshControllerDownAtTheDeadlineDoesNotHeal(t *testing.T) {
	e, ex := chaosMeshEnv(t)
	var node, pod string
	for n, p := range e.probers {
		node, pod = n, p
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const dur = 8 * time.Second
	w, err := ex.Inject(ctx, NewPartition(PartitionSpec{PodNamespace: testNS, PodName: pod, Targets: e.targets, Duration: dur}))
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Delete(context.Background(), testNS, w.Name)
	scale := func(n int32) {
		t.Helper()
		s, err := e.kube.AppsV1().Deployments("chaos-mesh").GetScale(ctx, ChaosMeshController, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = n
		if _, err := e.kube.AppsV1().Deployments("chaos-mesh").UpdateScale(ctx, ChaosMeshController, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale(0)
	restored := false
	defer func() {
		if !restored {
			scale(1)
		}
	}()
	waitFor(t, ctx, "no controller pod", func() (bool, string) {
		l, err := e.kube.CoreV1().Pods("chaos-mesh").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller-manager"})
		return err == nil && len(l.Items) == 0, fmt.Sprintf("%v %d pods", err, len(l.Items))
	})
	past := w.Injected.Add(dur + 10*time.Second)
	select { // the question is what the netns holds 10s past the deadline
	case <-time.After(time.Until(past)):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if rules, _ := e.chaosMeshRules(t, node, pod); len(rules) == 0 {
		t.Fatalf("the cut healed with the controller down: this difference from our agent does not hold")
	} else {
		t.Logf("10s past the deadline, controller down: %d Chaos Mesh rules still in %s's netns", len(rules), pod)
	}
	scale(1)
	restored = true
	back := time.Now()
	waitFor(t, ctx, "rules gone after the controller is back", func() (bool, string) {
		rules, _ := e.chaosMeshRules(t, node, pod)
		return len(rules) == 0, fmt.Sprint(rules)
	})
	t.Logf("healed %s after the controller was scaled back up", time.Since(back).Round(time.Second))
}
