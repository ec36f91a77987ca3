package plan

import (
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
)

// The scope rules: what any chaos object may touch, whoever created it.
// The CRD schema enforces the parts a schema can see (manifests/chaos);
// the agent enforces all of them again, since only it can read namespace
// labels and the ports annotation, and a schema can be replaced.
const (
	// AllowLabel opts a namespace in: chaos may target its pods only when
	// the namespace carries AllowLabel=AllowValue.
	AllowLabel = "chaos.fencecheck.io/allow"
	AllowValue = "true"
	// MaxTargets and MaxPorts bound the rules one object installs per pod
	// (targets × ports, re-listed on every resync).
	MaxTargets = 16
	MaxPorts   = 8
	// MaxDuration bounds a cut or a pause.
	MaxDuration = 15 * time.Minute
	// MinPrefixV4 and MinPrefixV6 bound how wide one external target is:
	// "0.0.0.0/1" would cut half of the internet.
	MinPrefixV4 = 24
	MinPrefixV6 = 64
)

// Forbidden namespaces are never targeted, labels or not: the cluster's
// own (CoreDNS, kube-proxy) and the agent's (cutting the agent off stops
// its heals).
var Forbidden = []string{"kube-system", "kube-public", "kube-node-lease"}

// Scope is what the scope check needs to know of the cluster.
type Scope struct {
	// AgentNamespace is the agent's own namespace.
	AgentNamespace string
	// Labels returns a namespace's labels; ok is false when the namespace
	// is unknown (not opted in).
	Labels func(ns string) (labels map[string]string, ok bool)
}

// TargetNamespaces lists the namespaces whose pods a selector can pick:
// selector.namespaces, the keys of selector.pods, or the object's own
// namespace when neither is set.
func TargetNamespaces(objectNS string, sel v1alpha1.PodSelectorSpec) []string {
	set := map[string]bool{}
	for _, ns := range sel.Namespaces {
		set[ns] = true
	}
	for ns := range sel.Pods {
		set[ns] = true
	}
	if len(set) == 0 {
		set[objectNS] = true
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// CheckNamespaces refuses a selector that reaches a forbidden namespace,
// the agent's own, or one that did not opt in (the object's own included:
// creating an object in a namespace does not opt that namespace in).
func (s Scope) CheckNamespaces(objectNS string, sel v1alpha1.PodSelectorSpec) error {
	for _, ns := range TargetNamespaces(objectNS, sel) {
		if contains(Forbidden, ns) {
			return fmt.Errorf("namespace %s is never a chaos target", ns)
		}
		if s.AgentNamespace != "" && ns == s.AgentNamespace {
			return fmt.Errorf("namespace %s is the chaos agent's own: never a target", ns)
		}
		var lbl map[string]string
		ok := false
		if s.Labels != nil {
			lbl, ok = s.Labels(ns)
		}
		if !ok || lbl[AllowLabel] != AllowValue {
			if ns != objectNS {
				return fmt.Errorf("selector reaches namespace %s, outside the object's namespace %s, which did not opt in (label %s=%s)", ns, objectNS, AllowLabel, AllowValue)
			}
			return fmt.Errorf("namespace %s did not opt in to chaos (label %s=%s)", ns, AllowLabel, AllowValue)
		}
	}
	return nil
}

// CheckPrefix refuses an external target wider than /24 (IPv4) or /64 (IPv6).
func CheckPrefix(p netip.Prefix) error {
	min := MinPrefixV6
	if p.Addr().Is4() {
		min = MinPrefixV4
	}
	if p.Bits() < min {
		return fmt.Errorf("externalTarget %s is wider than /%d", p, min)
	}
	return nil
}

// CheckDuration refuses a duration above MaxDuration.
func CheckDuration(d time.Duration) error {
	if d > MaxDuration {
		return fmt.Errorf("duration %s is longer than the maximum %s", d, MaxDuration)
	}
	return nil
}

// CheckScope is every scope rule for a NetworkChaos (Validate checks the
// shape, the width of targets and the limits that need no cluster state).
func (s Scope) CheckScope(nc *v1alpha1.NetworkChaos) error {
	if err := Validate(nc); err != nil {
		return err
	}
	return s.CheckNamespaces(nc.Namespace, nc.Spec.Selector)
}
