package plan

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

func str(s string) *string { return &s }

func partition(name string, dur string, targets ...string) *v1alpha1.NetworkChaos {
	nc := &v1alpha1.NetworkChaos{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "chaos", CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha1.NetworkChaosSpec{
			PodSelector: v1alpha1.PodSelector{Mode: v1alpha1.AllMode, Selector: v1alpha1.PodSelectorSpec{
				GenericSelectorSpec: v1alpha1.GenericSelectorSpec{Namespaces: []string{"app"}, LabelSelectors: map[string]string{"app": "rec"}}}},
			Action: v1alpha1.PartitionAction, Direction: v1alpha1.To, Duration: str(dur), ExternalTargets: targets,
		},
	}
	return nc
}

func pod(ns, name, node, ip string, lbl map[string]string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

func TestValidate(t *testing.T) {
	ok := partition("p", "30s", "10.96.0.1", "172.18.0.2")
	if err := Validate(ok); err != nil {
		t.Fatalf("valid partition rejected: %v", err)
	}
	bad := map[string]func(*v1alpha1.NetworkChaos){
		"action":    func(n *v1alpha1.NetworkChaos) { n.Spec.Action = v1alpha1.DelayAction },
		"direction": func(n *v1alpha1.NetworkChaos) { n.Spec.Direction = v1alpha1.From },
		"no dur":    func(n *v1alpha1.NetworkChaos) { n.Spec.Duration = nil },
		"bad dur":   func(n *v1alpha1.NetworkChaos) { n.Spec.Duration = str("soon") },
		"neg dur":   func(n *v1alpha1.NetworkChaos) { n.Spec.Duration = str("-1s") },
		"no tgt":    func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = nil },
		"hostname":  func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"kubernetes.default"} },
		"target":    func(n *v1alpha1.NetworkChaos) { n.Spec.Target = &v1alpha1.PodSelector{} },
		"mode":      func(n *v1alpha1.NetworkChaos) { n.Spec.Mode = v1alpha1.RandomMaxPercentMode },
		"behavior":  func(n *v1alpha1.NetworkChaos) { n.Spec.PartitionBehavior = "explode" },
	}
	for name, mut := range bad {
		n := partition("p", "30s", "10.96.0.1")
		mut(n)
		if err := Validate(n); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

func TestRoutes(t *testing.T) {
	nc := partition("p", "30s", "10.96.0.1", "172.18.0.2", "10.96.0.1", "fd00::1", "10.1.2.3/16")
	rs, err := Routes(nc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{
		{Dst: netip.MustParsePrefix("10.96.0.1/32"), Type: Blackhole},
		{Dst: netip.MustParsePrefix("172.18.0.2/32"), Type: Blackhole},
		{Dst: netip.MustParsePrefix("fd00::1/128"), Type: Blackhole},
		{Dst: netip.MustParsePrefix("10.1.0.0/16"), Type: Blackhole},
	}
	if !reflect.DeepEqual(rs, want) {
		t.Fatalf("routes %v, want %v", rs, want)
	}
	nc.Spec.PartitionBehavior = v1alpha1.RejectPartitionBehavior
	rs, _ = Routes(nc)
	if rs[0].Type != Prohibit {
		t.Fatalf("reject gave %v", rs[0])
	}
	// Port-scoped: one rule per target and port.
	nc = partition("p", "30s", "10.96.0.1", "172.18.0.2")
	nc.Annotations = map[string]string{PortsAnnotation: "443, 6443,443"}
	rs, err = Routes(nc)
	if err != nil || len(rs) != 4 || rs[0].Port != 443 || rs[1].Port != 6443 || rs[3].String() != "blackhole 172.18.0.2/32 tcp dport 6443" {
		t.Fatalf("port-scoped routes %v %v", rs, err)
	}
	for _, bad := range []string{"", "0", "65536", "https", "443;6443", "44x"} {
		nc.Annotations[PortsAnnotation] = bad
		if err := Validate(nc); err == nil {
			t.Errorf("ports annotation %q accepted", bad)
		}
	}
}

func TestDeadlineAndActive(t *testing.T) {
	nc := partition("p", "45s", "10.96.0.1")
	end, err := Deadline(nc)
	if err != nil || !end.Equal(t0.Add(46*time.Second)) {
		t.Fatalf("deadline %v %v (want creation rounded up + 45s)", end, err)
	}
	if !Active(nc, t0.Add(45*time.Second)) || Active(nc, t0.Add(46*time.Second)) {
		t.Fatal("active window wrong")
	}
	now := metav1.NewTime(t0)
	nc.DeletionTimestamp = &now
	if Active(nc, t0) {
		t.Fatal("deleted object still active")
	}
}

func TestSelectPods(t *testing.T) {
	rec := map[string]string{"app": "rec"}
	pods := []corev1.Pod{
		pod("app", "rec-2", "n2", "10.244.1.5", rec),
		pod("app", "rec-1", "n1", "10.244.0.5", rec),
		pod("app", "sink", "n1", "10.244.0.6", map[string]string{"app": "sink"}),
		pod("other", "rec-9", "n1", "10.244.0.9", rec),
	}
	pending := pod("app", "rec-0", "n1", "", rec)
	pending.Status.Phase = corev1.PodPending
	pods = append(pods, pending)
	nc := partition("p", "30s", "10.96.0.1")
	got, _ := SelectPods(nc, pods)
	if names(got) != "app/rec-1,app/rec-2" {
		t.Fatalf("all: %s", names(got))
	}
	nc.Spec.Mode = v1alpha1.OneMode
	got, _ = SelectPods(nc, pods)
	if names(got) != "app/rec-1" {
		t.Fatalf("one: %s", names(got))
	}
	byName := partition("p", "30s", "10.96.0.1")
	byName.Spec.Selector = v1alpha1.PodSelectorSpec{Pods: map[string][]string{"app": {"rec-2"}}}
	got, _ = SelectPods(byName, pods)
	if names(got) != "app/rec-2" {
		t.Fatalf("by name: %s", names(got))
	}
	nc.Spec.Mode, nc.Spec.Value = v1alpha1.FixedMode, "x"
	if _, err := SelectPods(nc, pods); err == nil {
		t.Fatal("fixed with value x accepted")
	}
}

func names(ps []corev1.Pod) string {
	var s []string
	for i := range ps {
		s = append(s, PodKey(&ps[i]))
	}
	return strings.Join(s, ",")
}

func TestDesiredOnlyThisNodeAndMerged(t *testing.T) {
	rec := map[string]string{"app": "rec"}
	pods := []corev1.Pod{pod("app", "rec-1", "n1", "10.244.0.5", rec), pod("app", "rec-2", "n2", "10.244.1.5", rec)}
	a := partition("a", "30s", "10.96.0.1")
	b := partition("b", "60s", "172.18.0.2", "10.96.0.1")
	expired := partition("c", "1s", "1.2.3.4")
	invalid := partition("d", "30s", "no-such-host")
	want, problems := Desired([]*v1alpha1.NetworkChaos{a, b, expired, invalid}, pods, "n1", t0.Add(10*time.Second), allowApp, nil)
	if len(want) != 1 || want["app/rec-1"] == nil {
		t.Fatalf("want %v", want)
	}
	w := want["app/rec-1"]
	if w.PodIP != "10.244.0.5" || len(w.Routes) != 2 || !reflect.DeepEqual(w.Chaos, []string{"chaos/a", "chaos/b"}) {
		t.Fatalf("merged want %+v", w)
	}
	if len(problems) != 1 || problems[0].Chaos != "chaos/d" {
		t.Fatalf("problems %v", problems)
	}
	// after a's deadline only b remains; after b's, nothing.
	want, _ = Desired([]*v1alpha1.NetworkChaos{a, b}, pods, "n1", t0.Add(31*time.Second), allowApp, nil)
	if len(want["app/rec-1"].Routes) != 2 || len(want["app/rec-1"].Chaos) != 1 {
		t.Fatalf("at 30s: %+v", want["app/rec-1"])
	}
	want, _ = Desired([]*v1alpha1.NetworkChaos{a, b}, pods, "n1", t0.Add(61*time.Second), allowApp, nil)
	if len(want) != 0 {
		t.Fatalf("at 60s still %v", want)
	}
}

func TestDiff(t *testing.T) {
	r := func(s string, ty RouteType) Route { return Route{Dst: netip.MustParsePrefix(s), Type: ty} }
	want := []Route{r("10.96.0.1/32", Blackhole), r("172.18.0.2/32", Blackhole)}
	have := []Route{r("10.96.0.1/32", Prohibit), r("1.1.1.1/32", Blackhole)}
	add, del := Diff(want, have)
	if !reflect.DeepEqual(add, want) {
		t.Fatalf("add %v", add)
	}
	if !reflect.DeepEqual(del, []Route{r("1.1.1.1/32", Blackhole), r("10.96.0.1/32", Prohibit)}) {
		t.Fatalf("del %v", del)
	}
	add, del = Diff(want, want)
	if add != nil || del != nil {
		t.Fatalf("no-op diff gave %v %v", add, del)
	}
}
