package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// allowApp: namespaces "app" and "other" opted in, "closed" exists without
// the label, "fencecheck-system" is the agent's (even if labelled).
var allowApp = Scope{AgentNamespace: "fencecheck-system", Labels: func(ns string) (map[string]string, bool) {
	switch ns {
	case "app", "other", "fencecheck-system", "kube-system":
		return map[string]string{AllowLabel: AllowValue}, true
	case "closed", "chaos":
		return map[string]string{}, true
	}
	return nil, false
}}

func TestScopeRefusals(t *testing.T) {
	cases := map[string]struct {
		mut  func(*v1alpha1.NetworkChaos)
		want string // substring of the reason; "" = accepted
	}{
		"opted in":     {func(*v1alpha1.NetworkChaos) {}, ""},
		"two opted in": {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"app", "other"} }, ""},
		"coredns":      {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"kube-system"} }, "kube-system is never"},
		"coredns by pods": {func(n *v1alpha1.NetworkChaos) {
			n.Spec.Selector.Pods = map[string][]string{"kube-system": {"coredns-0"}}
		}, "kube-system is never"},
		"agent's own":       {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"fencecheck-system"} }, "agent's own"},
		"not opted in":      {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"closed"} }, "outside the object's namespace chaos, which did not opt in"},
		"unknown namespace": {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = []string{"nowhere"} }, "did not opt in"},
		"own ns not opted":  {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Namespaces = nil }, "namespace chaos did not opt in"},
		"half the internet": {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"0.0.0.0/1", "128.0.0.0/1"} }, "wider than /24"},
		"/23":               {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"10.96.0.0/23"} }, "wider than /24"},
		"/24":               {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"10.96.0.0/24"} }, ""},
		"mapped v4":         {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"::ffff:0.0.0.0/97"} }, "wider than /24"},
		"v6 /48":            {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"fd00::/48"} }, "wider than /64"},
		"v6 /64":            {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = []string{"fd00::/64"} }, ""},
		"ten years":         {func(n *v1alpha1.NetworkChaos) { n.Spec.Duration = str("87600h") }, "longer than the maximum 15m0s"},
		"15m":               {func(n *v1alpha1.NetworkChaos) { n.Spec.Duration = str("15m") }, ""},
		"17 targets":        {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = manyTargets(17) }, "17 externalTargets: at most 16"},
		"16 targets":        {func(n *v1alpha1.NetworkChaos) { n.Spec.ExternalTargets = manyTargets(16) }, ""},
		"9 ports": {func(n *v1alpha1.NetworkChaos) {
			n.Annotations = map[string]string{PortsAnnotation: "1,2,3,4,5,6,7,8,9"}
		}, "9 ports, at most 8"},
		"8 ports":            {func(n *v1alpha1.NetworkChaos) { n.Annotations = map[string]string{PortsAnnotation: "1,2,3,4,5,6,7,8"} }, ""},
		"kube-public by pod": {func(n *v1alpha1.NetworkChaos) { n.Spec.Selector.Pods = map[string][]string{"kube-public": {"x"}} }, "never a chaos target"},
	}
	for name, c := range cases {
		n := partition("p", "30s", "10.96.0.1")
		c.mut(n)
		err := allowApp.CheckScope(n)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want a refusal containing %q", name, err, c.want)
		}
	}
}

func manyTargets(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("10.0.0.%d", i+1))
	}
	return out
}

func TestDesiredRefusesOutOfScopeAndEdits(t *testing.T) {
	rec := map[string]string{"app": "rec"}
	pods := []corev1.Pod{pod("app", "rec-1", "n1", "10.244.0.5", rec), pod("kube-system", "coredns", "n1", "10.244.0.9", rec)}
	ok := partition("ok", "30s", "10.96.0.1")
	ok.UID = types.UID("u-ok")
	dns := partition("dns", "30s", "10.96.0.10")
	dns.Spec.Selector.Namespaces = []string{"kube-system"}
	want, problems := Desired([]*v1alpha1.NetworkChaos{ok, dns}, pods, "n1", t0.Add(time.Second), allowApp, nil)
	if len(want) != 1 || want["app/rec-1"] == nil || len(problems) != 1 || problems[0].Chaos != "chaos/dns" {
		t.Fatalf("want %v problems %v", want, problems)
	}
	part := want["app/rec-1"].Parts[0]
	if part.UID != "u-ok" || !part.Deadline.Equal(t0.Add(31*time.Second)) {
		t.Fatalf("part %+v", part)
	}
	// The ledger remembers the first injection: an edit that extends the
	// cut is refused and the cut heals; an unchanged object keeps the
	// recorded deadline even if it would compute a later one.
	inj := Injections([]Entry{{Path: "/n", Parts: []Part{part}}})
	longer := ok.DeepCopy()
	longer.Spec.Duration = str("10m")
	want, problems = Desired([]*v1alpha1.NetworkChaos{longer}, pods, "n1", t0.Add(10*time.Second), allowApp, inj)
	if len(want) != 0 || len(problems) != 1 || !errors.Is(problems[0].Err, ErrEdited) {
		t.Fatalf("edited: want %v problems %v", want, problems)
	}
	inj["u-ok"] = Injection{Fingerprint: part.Fingerprint, Deadline: t0.Add(5 * time.Second)}
	if want, _ = Desired([]*v1alpha1.NetworkChaos{ok}, pods, "n1", t0.Add(6*time.Second), allowApp, inj); len(want) != 0 {
		t.Fatalf("past the recorded deadline still %v", want)
	}
}

func TestEntryLive(t *testing.T) {
	r1 := Route{Dst: netip.MustParsePrefix("10.96.0.1/32"), Type: Blackhole}
	r2 := Route{Dst: netip.MustParsePrefix("172.18.0.2/32"), Type: Blackhole}
	e := Entry{Path: "/n", Parts: []Part{{Deadline: t0.Add(10 * time.Second), Routes: []Route{r1}}, {Deadline: t0.Add(20 * time.Second), Routes: []Route{r1, r2}}}}
	if rs, next := e.Live(t0); len(rs) != 2 || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("at 0: %v %v", rs, next)
	}
	if rs, next := e.Live(t0.Add(15 * time.Second)); len(rs) != 2 || !next.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("at 15: %v %v", rs, next)
	}
	if rs, next := e.Live(t0.Add(20 * time.Second)); len(rs) != 0 || !next.IsZero() {
		t.Fatalf("at 20: %v %v", rs, next)
	}
}
