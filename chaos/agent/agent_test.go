package agent

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// fakeNS is an in-memory node: namespace path → our routes.
type fakeNS struct {
	routes  map[string][]plan.Route
	byIP    map[netip.Addr]string
	findErr error
}

func (f *fakeNS) Tagged() (map[string][]plan.Route, error) {
	out := map[string][]plan.Route{}
	for p, rs := range f.routes {
		if len(rs) > 0 {
			out[p] = append([]plan.Route(nil), rs...)
		}
	}
	return out, nil
}

func (f *fakeNS) Find(ip netip.Addr) (string, error) {
	if f.findErr != nil {
		return "", f.findErr
	}
	if p, ok := f.byIP[ip]; ok {
		return p, nil
	}
	return "", errors.New("no namespace holds " + ip.String())
}

func (f *fakeNS) Sync(path string, want []plan.Route) error {
	f.routes[path] = append([]plan.Route(nil), want...)
	return nil
}

var t0 = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func str(s string) *string { return &s }

func leaderPartition(name string) *v1alpha1.NetworkChaos {
	return &v1alpha1.NetworkChaos{
		TypeMeta:   metav1.TypeMeta{APIVersion: "chaos-mesh.org/v1alpha1", Kind: "NetworkChaos"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha1.NetworkChaosSpec{
			PodSelector: v1alpha1.PodSelector{Mode: v1alpha1.AllMode, Selector: v1alpha1.PodSelectorSpec{
				GenericSelectorSpec: v1alpha1.GenericSelectorSpec{LabelSelectors: map[string]string{"app": "rec"}}}},
			Action: v1alpha1.PartitionAction, Duration: str("30s"), ExternalTargets: []string{"10.96.0.1", "172.18.0.2"},
		},
	}
}

func pods() []corev1.Pod {
	mk := func(name, node, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: map[string]string{"app": "rec"}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	return []corev1.Pod{mk("rec-0", "n1", "10.244.0.5"), mk("rec-1", "n2", "10.244.1.5")}
}

type fixture struct {
	a   *Agent
	ns  *fakeNS
	clk *clock
	dyn *dynamicfake.FakeDynamicClient
}

func newFixture(t *testing.T, ncs ...*v1alpha1.NetworkChaos) *fixture {
	// Created through the resource (the tracker would guess the plural
	// "networkchaoses" from the kind).
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "NetworkChaosList", plan.PauseGVR: "PodPauseList"})
	for _, nc := range ncs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(GVR).Namespace(nc.Namespace).Create(context.Background(), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := &fakeNS{routes: map[string][]plan.Route{}, byIP: map[netip.Addr]string{
		netip.MustParseAddr("10.244.0.5"): "/var/run/netns/cni-rec-0",
		netip.MustParseAddr("10.244.1.5"): "/var/run/netns/cni-rec-1", // exists on n2 only in real life
	}}
	clk := &clock{t0.Add(time.Second)}
	scope := plan.Scope{AgentNamespace: "fencecheck-system", Labels: func(ns string) (map[string]string, bool) {
		if ns == "closed" {
			return map[string]string{}, true
		}
		return map[string]string{plan.AllowLabel: plan.AllowValue}, ns == "app" || ns == "kube-system"
	}}
	a := &Agent{Node: "n1", NS: ns, Dyn: dyn, Now: clk.now, Logf: t.Logf, Scope: scope, Ledger: &Ledger{Dir: t.TempDir()}}
	return &fixture{a: a, ns: ns, clk: clk, dyn: dyn}
}

func (f *fixture) current(t *testing.T, name string) *v1alpha1.NetworkChaos {
	u, err := f.dyn.Resource(GVR).Namespace("app").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := decode(u)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

func (f *fixture) refused(t *testing.T, name string) string {
	u, err := f.dyn.Resource(GVR).Namespace("app").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := unstructured.NestedString(u.Object, "status", RefusedField)
	return r
}

func TestInjectThenHealAtDeadline(t *testing.T) {
	nc := leaderPartition("cut")
	f := newFixture(t, nc)
	ctx := context.Background()
	next, err := f.a.Reconcile(ctx, []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	if err != nil {
		t.Fatal(err)
	}
	if !next.Equal(t0.Add(31 * time.Second)) {
		t.Fatalf("next wake-up %v, want the deadline", next)
	}
	got := f.ns.routes["/var/run/netns/cni-rec-0"]
	if len(got) != 2 || got[0].Type != plan.Blackhole {
		t.Fatalf("routes on rec-0: %v", got)
	}
	if len(f.ns.routes["/var/run/netns/cni-rec-1"]) != 0 {
		t.Fatal("agent on n1 touched a pod on n2")
	}
	prog := plan.Progress(&f.current(t, "cut").Status)
	if p := prog["app/rec-0"]; p == nil || !p.Injected.Equal(t0.Add(time.Second)) || !p.Recovered.IsZero() {
		t.Fatalf("status after inject: %+v", p)
	}
	if prog["app/rec-1"] != nil {
		t.Fatal("agent on n1 wrote a record for a pod on n2")
	}
	if !f.a.Ready() {
		t.Fatal("not ready after a full reconcile")
	}

	// One tick before the deadline nothing changes; at the deadline it heals.
	f.clk.t = t0.Add(31*time.Second - time.Millisecond)
	f.a.Reconcile(ctx, []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 2 {
		t.Fatal("healed before the deadline")
	}
	f.clk.t = t0.Add(31 * time.Second)
	next, _ = f.a.Reconcile(ctx, []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
		t.Fatalf("routes left after the deadline: %v", f.ns.routes)
	}
	if !next.IsZero() {
		t.Fatalf("wake-up %v after the only deadline passed", next)
	}
	st := f.current(t, "cut").Status
	p := plan.Progress(&st)["app/rec-0"]
	if !p.Recovered.Equal(t0.Add(31 * time.Second)) {
		t.Fatalf("recovered at %v", p.Recovered)
	}
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionAllRecovered && c.Status != corev1.ConditionTrue {
			t.Fatalf("conditions %+v", st.Conditions)
		}
	}
}

// A restarted agent finds routes a crashed one left: those of an expired or
// deleted object go, those of an active one stay.
func TestLeftoversAfterCrash(t *testing.T) {
	active := leaderPartition("active")
	f := newFixture(t, active)
	stale := []plan.Route{{Dst: netip.MustParsePrefix("1.2.3.4/32"), Type: plan.Prohibit}}
	f.ns.routes["/var/run/netns/cni-gone"] = stale  // object deleted while the agent was down
	f.ns.routes["/var/run/netns/cni-rec-0"] = stale // wrong set on a still-targeted pod
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "active")}, pods())
	if len(f.ns.routes["/var/run/netns/cni-gone"]) != 0 {
		t.Fatal("leftover routes of a deleted object not removed")
	}
	want, _ := plan.Routes(active)
	if !reflect.DeepEqual(f.ns.routes["/var/run/netns/cni-rec-0"], want) {
		t.Fatalf("rec-0 routes %v, want %v", f.ns.routes["/var/run/netns/cni-rec-0"], want)
	}
}

func TestDeletedObjectHeals(t *testing.T) {
	f := newFixture(t, leaderPartition("cut"))
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	f.a.Reconcile(context.Background(), nil, pods()) // object gone from the informer
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
		t.Fatal("routes stay after the object was deleted")
	}
}

func TestFailureIsRecorded(t *testing.T) {
	f := newFixture(t, leaderPartition("cut"))
	f.ns.findErr = errors.New("no network namespace holds 10.244.0.5")
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	p := plan.Progress(&f.current(t, "cut").Status)["app/rec-0"]
	if p == nil || !strings.Contains(p.Failure, "no network namespace") || !p.Injected.IsZero() {
		t.Fatalf("failure not recorded: %+v", p)
	}
	bad := leaderPartition("bad")
	bad.Spec.Direction = v1alpha1.From
	f2 := newFixture(t, bad)
	f2.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f2.current(t, "bad")}, pods())
	if r := f2.refused(t, "bad"); !strings.Contains(r, "direction") {
		t.Fatalf("invalid spec not refused in status: %q", r)
	}
	if len(f2.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
		t.Fatal("invalid object applied anyway")
	}
}

func TestHealAllOnShutdown(t *testing.T) {
	f := newFixture(t, leaderPartition("cut"))
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	if err := f.a.HealAll(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods()); err != nil {
		t.Fatal(err)
	}
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
		t.Fatal("routes left after shutdown")
	}
	if p := plan.Progress(&f.current(t, "cut").Status)["app/rec-0"]; p.Recovered.IsZero() {
		t.Fatal("shutdown heal not recorded in status")
	}
}

// Hostile objects: refused with the reason in status.refused, no rule
// installed, nothing in the ledger.
func TestOutOfScopeRefused(t *testing.T) {
	cases := map[string]func(*v1alpha1.NetworkChaos){
		"coredns":      func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"kube-system"} },
		"half the net": func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"0.0.0.0/1"} },
		"ten years":    func(n *v1alpha1.NetworkChaos) { n.Spec.Duration = str("87600h") },
		"closed ns":    func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"closed"} },
		"agent's ns":   func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"fencecheck-system"} },
	}
	for name, mut := range cases {
		nc := leaderPartition("hostile")
		mut(nc)
		f := newFixture(t, nc)
		all := append(pods(), corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns", Labels: map[string]string{"app": "rec"}},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5"}})
		f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "hostile")}, all)
		if r := f.refused(t, "hostile"); r == "" {
			t.Errorf("%s: no reason in status.refused", name)
		} else {
			t.Logf("%s: refused: %s", name, r)
		}
		if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
			t.Errorf("%s: rules installed", name)
		}
		if led, _ := f.a.Ledger.Load(); len(led.Entries) != 0 {
			t.Errorf("%s: ledger %v", name, led.Entries)
		}
	}
}

// The heal loop heals from the ledger alone: no informer, no apiserver.
func TestHealLoopNeedsOnlyTheLedger(t *testing.T) {
	f := newFixture(t, leaderPartition("cut"))
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 2 {
		t.Fatal("not injected")
	}
	// A new agent on the same node (restarted), apiserver gone.
	b := &Agent{Node: "n1", NS: f.ns, Now: f.clk.now, Logf: t.Logf, Ledger: f.a.Ledger}
	if err := b.HealOrphans(); err != nil {
		t.Fatal(err)
	}
	next, err := b.HealExpired()
	if err != nil || !next.Equal(t0.Add(31*time.Second)) || len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 2 {
		t.Fatalf("before the deadline: next %v err %v routes %v", next, err, f.ns.routes)
	}
	f.clk.t = t0.Add(31 * time.Second)
	if next, err = b.HealExpired(); err != nil || !next.IsZero() {
		t.Fatalf("at the deadline: next %v err %v", next, err)
	}
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
		t.Fatalf("not healed at the deadline: %v", f.ns.routes)
	}
	if b.LastHeal().IsZero() {
		t.Fatal("heal loop progress not recorded")
	}
	// Rules the ledger does not know of are an older agent's: removed at start.
	f.ns.routes["/var/run/netns/cni-x"] = []plan.Route{{Dst: netip.MustParsePrefix("1.2.3.4/32"), Type: plan.Blackhole}}
	b.HealOrphans()
	if len(f.ns.routes["/var/run/netns/cni-x"]) != 0 {
		t.Fatal("orphan kept")
	}
}

// An edit after injection is refused and the cut heals (the CRD refuses
// the edit first; this is the agent's own rule).
func TestEditAfterInjectionRefused(t *testing.T) {
	nc := leaderPartition("cut")
	nc.UID = "u1"
	f := newFixture(t, nc)
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	longer := f.current(t, "cut")
	longer.Spec.Duration = str("10m")
	f.a.Reconcile(context.Background(), []*v1alpha1.NetworkChaos{longer}, pods())
	if len(f.ns.routes["/var/run/netns/cni-rec-0"]) != 0 {
		t.Fatal("edited cut kept")
	}
	if r := f.refused(t, "cut"); !strings.Contains(r, "spec changed after injection") {
		t.Fatalf("refused %q", r)
	}
}

// fakeFreezer: cgroup path → frozen.
type fakeFreezer struct{ frozen map[string]bool }

func (f *fakeFreezer) Find(podUID, id string) (string, error) { return "/cg/" + podUID + "/" + id, nil }
func (f *fakeFreezer) Freeze(p string) error                  { f.frozen[p] = true; return nil }
func (f *fakeFreezer) Thaw(p string) error                    { f.frozen[p] = false; return nil }

func leaderPause(name string) *plan.PodPause {
	return &plan.PodPause{
		TypeMeta:   metav1.TypeMeta{APIVersion: plan.PauseGroupVersion.String(), Kind: plan.PauseKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", UID: "pp1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: plan.PodPauseSpec{ContainerSelector: v1alpha1.ContainerSelector{PodSelector: v1alpha1.PodSelector{Mode: v1alpha1.OneMode,
			Selector: v1alpha1.PodSelectorSpec{Pods: map[string][]string{"app": {"rec-0"}}}}}, Duration: str("12s")},
	}
}

func runningPods() []corev1.Pod {
	ps := pods()
	for i := range ps {
		ps[i].UID = types.UID("uid-" + ps[i].Name)
		ps[i].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reconciler", ContainerID: "containerd://c-" + ps[i].Name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	return ps
}

// A pause freezes at once, records its deadline in the ledger first, and
// a restarted agent with no apiserver thaws at that deadline.
func TestPauseFreezesThenThawsFromTheLedger(t *testing.T) {
	f := newFixture(t)
	pp := leaderPause("pause")
	u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(pp)
	if _, err := f.dyn.Resource(plan.PauseGVR).Namespace("app").Create(context.Background(), &unstructured.Unstructured{Object: u}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fr := &fakeFreezer{frozen: map[string]bool{}}
	f.a.Freezer = fr
	next, err := f.a.ReconcilePauses(context.Background(), []*plan.PodPause{pp}, runningPods())
	if err != nil || !next.Equal(t0.Add(13*time.Second)) {
		t.Fatalf("next %v err %v", next, err)
	}
	path := "/cg/uid-rec-0/c-rec-0"
	if !fr.frozen[path] || len(fr.frozen) != 1 {
		t.Fatalf("frozen %v", fr.frozen)
	}
	led, _ := f.a.Ledger.Load()
	if e := led.Entries[path]; e.Kind != plan.KindFreeze || !e.Parts[0].Deadline.Equal(t0.Add(13*time.Second)) {
		t.Fatalf("ledger %+v", led.Entries)
	}
	got, _ := f.dyn.Resource(plan.PauseGVR).Namespace("app").Get(context.Background(), "pause", metav1.GetOptions{})
	cur, _ := DecodePause(got)
	if p := plan.Progress(&cur.Status)["app/rec-0"]; p == nil || p.Injected.IsZero() {
		t.Fatalf("status %+v", cur.Status)
	}
	b := &Agent{Node: "n1", NS: f.ns, Now: f.clk.now, Logf: t.Logf, Ledger: f.a.Ledger, Freezer: fr}
	f.clk.t = t0.Add(13*time.Second - time.Millisecond)
	b.HealExpired()
	if !fr.frozen[path] {
		t.Fatal("thawed before the deadline")
	}
	f.clk.t = t0.Add(13 * time.Second)
	if _, err := b.HealExpired(); err != nil || fr.frozen[path] {
		t.Fatalf("not thawed at the deadline: %v %v", err, fr.frozen)
	}
}

func TestPauseOutOfScopeRefused(t *testing.T) {
	f := newFixture(t)
	pp := leaderPause("dns")
	pp.Spec.Selector.Pods = map[string][]string{"kube-system": {"coredns"}}
	u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(pp)
	f.dyn.Resource(plan.PauseGVR).Namespace("app").Create(context.Background(), &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
	fr := &fakeFreezer{frozen: map[string]bool{}}
	f.a.Freezer = fr
	f.a.ReconcilePauses(context.Background(), []*plan.PodPause{pp}, runningPods())
	got, _ := f.dyn.Resource(plan.PauseGVR).Namespace("app").Get(context.Background(), "dns", metav1.GetOptions{})
	if r, _, _ := unstructured.NestedString(got.Object, "status", RefusedField); !strings.Contains(r, "kube-system") || len(fr.frozen) != 0 {
		t.Fatalf("refused %q frozen %v", r, fr.frozen)
	}
}
