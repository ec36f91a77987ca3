// Package plan is the pure core of the built-in chaos executor: it checks a
// NetworkChaos, selects the pods it targets, translates it into the routes to
// install in each pod's network namespace, computes when it ends, and
// updates its status. No I/O: the agent feeds it objects and the clock.
package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// RouteType is the kind of route that swallows traffic to a target.
type RouteType string

const (
	// Blackhole: partitionBehavior "drop" (the pod's connect fails with EINVAL,
	// nothing leaves the pod).
	Blackhole RouteType = "blackhole"
	// Prohibit: partitionBehavior "reject" (EACCES at once).
	Prohibit RouteType = "prohibit"
)

// Route is one cut to install in a pod's network namespace: a route for the
// whole destination, or, when Port is set, a policy rule for TCP to that
// destination port only (so the target can still reach the pod, e.g. the
// apiserver's pod proxy, and the pod can still reach other ports there).
type Route struct {
	Dst  netip.Prefix `json:"dst"`
	Type RouteType    `json:"type"`
	Port uint16       `json:"port,omitempty"`
}

func (r Route) String() string {
	if r.Port != 0 {
		return fmt.Sprintf("%s %s tcp dport %d", r.Type, r.Dst, r.Port)
	}
	return string(r.Type) + " " + r.Dst.String()
}

// PortsAnnotation narrows a partition to TCP connections to these
// destination ports ("443,6443") on the targets. Chaos Mesh ignores it and
// cuts the whole addresses (a superset); the built-in agent honours it.
const PortsAnnotation = "fencecheck.io/partition-tcp-ports"

// Ports parses PortsAnnotation (nil when absent).
func Ports(nc *v1alpha1.NetworkChaos) ([]uint16, error) {
	v, ok := nc.Annotations[PortsAnnotation]
	if !ok {
		return nil, nil
	}
	var out []uint16
	seen := map[uint16]bool{}
	for _, f := range strings.Split(v, ",") {
		var p int
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &p); err != nil || p < 1 || p > 65535 || fmt.Sprint(p) != strings.TrimSpace(f) {
			return nil, fmt.Errorf("annotation %s=%q: %q is not a port", PortsAnnotation, v, f)
		}
		if !seen[uint16(p)] {
			seen[uint16(p)] = true
			out = append(out, uint16(p))
		}
	}
	return out, nil
}

// Validate reports why nc cannot be run by the built-in executor.
func Validate(nc *v1alpha1.NetworkChaos) error {
	s := nc.Spec
	if s.Action != v1alpha1.PartitionAction {
		return fmt.Errorf("action %q not supported by the built-in executor (only %q)", s.Action, v1alpha1.PartitionAction)
	}
	switch s.Direction {
	case "", v1alpha1.To, v1alpha1.Both:
	default:
		return fmt.Errorf("direction %q not supported (use %q or %q)", s.Direction, v1alpha1.To, v1alpha1.Both)
	}
	switch s.PartitionBehavior {
	case "", v1alpha1.DropPartitionBehavior, v1alpha1.RejectPartitionBehavior:
	default:
		return fmt.Errorf("partitionBehavior %q not supported", s.PartitionBehavior)
	}
	if s.Target != nil {
		return errors.New("spec.target (pod targets) not supported by the built-in executor: use externalTargets")
	}
	if s.Device != "" || s.TargetDevice != "" {
		return errors.New("spec.device/targetDevice not supported by the built-in executor")
	}
	if s.RemoteCluster != "" {
		return errors.New("spec.remoteCluster not supported")
	}
	ts, err := Targets(nc)
	if err != nil {
		return err
	}
	if len(nc.Spec.ExternalTargets) > MaxTargets {
		return fmt.Errorf("%d externalTargets: at most %d", len(nc.Spec.ExternalTargets), MaxTargets)
	}
	for _, p := range ts {
		if err := CheckPrefix(p); err != nil {
			return err
		}
	}
	ports, err := Ports(nc)
	if err != nil {
		return err
	}
	if len(ports) > MaxPorts {
		return fmt.Errorf("annotation %s: %d ports, at most %d", PortsAnnotation, len(ports), MaxPorts)
	}
	d, err := Duration(nc)
	if err != nil {
		return err
	}
	if err := CheckDuration(d); err != nil {
		return err
	}
	switch s.Mode {
	case v1alpha1.AllMode, v1alpha1.OneMode, v1alpha1.FixedMode:
	default:
		return fmt.Errorf("mode %q not supported (use all, one or fixed)", s.Mode)
	}
	return nil
}

// Targets parses externalTargets (IP addresses or CIDRs; names are rejected
// because a pod-netns route needs an address).
func Targets(nc *v1alpha1.NetworkChaos) ([]netip.Prefix, error) {
	if len(nc.Spec.ExternalTargets) == 0 {
		return nil, errors.New("externalTargets is empty: nothing to cut the pod off from")
	}
	var out []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for _, t := range nc.Spec.ExternalTargets {
		p, err := ParseTarget(t)
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseTarget accepts "10.96.0.1" or "10.96.0.0/12".
func ParseTarget(t string) (netip.Prefix, error) {
	t = strings.TrimSpace(t)
	if strings.Contains(t, "/") {
		p, err := netip.ParsePrefix(t)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("externalTarget %q: %v", t, err)
		}
		if p.Addr().Is4In6() { // ::ffff:0.0.0.0/97 is 0.0.0.0/1: judge it as IPv4
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(t)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("externalTarget %q is not an IP address or CIDR (host names are not supported)", t)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// Duration parses spec.duration; a partition without one would never heal,
// so it is required.
func Duration(nc *v1alpha1.NetworkChaos) (time.Duration, error) {
	return ParseDuration(nc.Spec.Duration)
}

// ParseDuration parses a chaos object's spec.duration (required, > 0).
func ParseDuration(s *string) (time.Duration, error) {
	if s == nil || *s == "" {
		return 0, errors.New("spec.duration is required (the agent owns the deadline)")
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, fmt.Errorf("spec.duration %q: %v", *s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("spec.duration %q must be > 0", *s)
	}
	return d, nil
}

// Deadline is when the partition heals, counted from creationTimestamp as
// Chaos Mesh does. It depends only on the object, so the agent finds the
// same deadline after a restart and the harness dying changes nothing.
// creationTimestamp has one-second resolution (the object was created
// somewhere in [ts, ts+1s)), so the deadline is rounded up: the partition
// lasts at least duration from creation, at most one second more. A cut
// meant to outlast the lease TTL never ends early.
func Deadline(nc *v1alpha1.NetworkChaos) (time.Time, error) {
	d, err := Duration(nc)
	if err != nil {
		return time.Time{}, err
	}
	return DeadlineFrom(nc.CreationTimestamp, d)
}

// DeadlineFrom is Deadline for any chaos object's creation and duration.
func DeadlineFrom(created metav1.Time, d time.Duration) (time.Time, error) {
	if created.IsZero() {
		return time.Time{}, errors.New("object has no creationTimestamp")
	}
	return created.Truncate(time.Second).Add(time.Second + d), nil
}

// Active reports whether nc's routes should be in place at now.
func Active(nc *v1alpha1.NetworkChaos, now time.Time) bool {
	if nc.DeletionTimestamp != nil || nc.Spec.Action != v1alpha1.PartitionAction {
		return false
	}
	end, err := Deadline(nc)
	return err == nil && now.Before(end)
}

// Routes is the rule set for nc: one route per target, of the type the
// partition behaviour asks for.
func Routes(nc *v1alpha1.NetworkChaos) ([]Route, error) {
	ts, err := Targets(nc)
	if err != nil {
		return nil, err
	}
	ports, err := Ports(nc)
	if err != nil {
		return nil, err
	}
	typ := Blackhole
	if nc.Spec.PartitionBehavior == v1alpha1.RejectPartitionBehavior {
		typ = Prohibit
	}
	var out []Route
	for _, t := range ts {
		if len(ports) == 0 {
			out = append(out, Route{Dst: t, Type: typ})
		}
		for _, p := range ports {
			out = append(out, Route{Dst: t, Type: typ, Port: p})
		}
	}
	return out, nil
}

// PodKey is the record id of a pod: "namespace/name".
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// SelectPods returns the pods nc targets, sorted by key. Mode one and fixed
// take the first pods by key, so every node's agent picks the same ones.
func SelectPods(nc *v1alpha1.NetworkChaos, pods []corev1.Pod) ([]corev1.Pod, error) {
	return SelectBy(nc.Namespace, nc.Spec.PodSelector, pods)
}

// SelectBy is SelectPods for any chaos object's selector.
func SelectBy(objectNS string, ps v1alpha1.PodSelector, pods []corev1.Pod) ([]corev1.Pod, error) {
	sel := ps.Selector
	namespaces := sel.Namespaces
	if len(namespaces) == 0 && len(sel.Pods) == 0 {
		namespaces = []string{objectNS}
	}
	ls := labels.SelectorFromSet(sel.LabelSelectors)
	if len(sel.ExpressionSelectors) > 0 {
		es, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: sel.ExpressionSelectors})
		if err != nil {
			return nil, fmt.Errorf("expressionSelectors: %v", err)
		}
		reqs, _ := es.Requirements()
		ls = ls.Add(reqs...)
	}
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if len(sel.Pods) > 0 {
			if !contains(sel.Pods[p.Namespace], p.Name) {
				continue
			}
		} else if !contains(namespaces, p.Namespace) {
			continue
		}
		if !ls.Matches(labels.Set(p.Labels)) {
			continue
		}
		if len(sel.Nodes) > 0 && !contains(sel.Nodes, p.Spec.NodeName) {
			continue
		}
		if len(sel.AnnotationSelectors) > 0 && !labels.SelectorFromSet(sel.AnnotationSelectors).Matches(labels.Set(p.Annotations)) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return PodKey(&out[i]) < PodKey(&out[j]) })
	switch ps.Mode {
	case v1alpha1.OneMode:
		if len(out) > 1 {
			out = out[:1]
		}
	case v1alpha1.FixedMode:
		var n int
		if _, err := fmt.Sscanf(ps.Value, "%d", &n); err != nil || n < 0 {
			return nil, fmt.Errorf("mode fixed needs an integer value, got %q", ps.Value)
		}
		if len(out) > n {
			out = out[:n]
		}
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// Want is the state one pod's network namespace must be in.
type Want struct {
	PodKey string
	PodIP  string
	Routes []Route
	Chaos  []string // "namespace/name" of the NetworkChaos objects asking for it
	Parts  []Part   // each object's routes and deadline, for the node ledger
}

// Problem is a chaos object the agent refuses, with the reason to write in
// its status.
type Problem struct {
	Chaos string
	Err   error
}

// NetworkFingerprint is Fingerprint for a NetworkChaos.
func NetworkFingerprint(nc *v1alpha1.NetworkChaos) string {
	return Fingerprint(nc.Spec, nc.Annotations, PortsAnnotation)
}

// ErrEdited is the reason an object edited after its injection is refused.
var ErrEdited = errors.New("spec changed after injection: refused (a chaos object is immutable once injected); its cut heals now")

// EffectiveActive is Active with the node ledger's memory: an object
// edited after its injection is inactive, and the deadline recorded at
// injection bounds the computed one.
func EffectiveActive(nc *v1alpha1.NetworkChaos, now time.Time, injected map[string]Injection) (bool, time.Time) {
	if !Active(nc, now) {
		return false, time.Time{}
	}
	end, _ := Deadline(nc)
	inj, ok := injected[string(nc.UID)]
	if ok && inj.Fingerprint != NetworkFingerprint(nc) {
		return false, time.Time{}
	}
	end = EffectiveDeadline(end, inj, ok)
	return now.Before(end), end
}

// Desired computes, for the pods on node, the routes every active
// NetworkChaos within scope asks for. Several objects on one pod are
// merged. injected is the node ledger's memory of first injections.
func Desired(ncs []*v1alpha1.NetworkChaos, pods []corev1.Pod, node string, now time.Time, scope Scope, injected map[string]Injection) (map[string]*Want, []Problem) {
	objs := make([]chaosObject, len(ncs))
	for i, nc := range ncs {
		objs[i] = networkObject{nc}
	}
	want := map[string]*Want{}
	problems := admit(objs, pods, now, scope, injected, func(o chaosObject, part Part, sel []corev1.Pod) {
		routes, _ := Routes(o.(networkObject).NetworkChaos)
		part.Routes = routes
		for i := range sel {
			p := &sel[i]
			if p.Spec.NodeName != node || p.Spec.HostNetwork || p.Status.PodIP == "" {
				continue // other agents' pods; hostNetwork pods share the node's namespace
			}
			w := want[PodKey(p)]
			if w == nil {
				w = &Want{PodKey: PodKey(p), PodIP: p.Status.PodIP}
				want[w.PodKey] = w
			}
			w.Chaos = append(w.Chaos, part.Chaos)
			w.Routes = MergeRoutes(w.Routes, routes)
			w.Parts = append(w.Parts, part)
		}
	})
	return want, problems
}

type routeKey struct {
	dst  netip.Prefix
	port uint16
}

// MergeRoutes adds b's routes to a, one per destination and port (the first
// type wins).
func MergeRoutes(a, b []Route) []Route {
	seen := map[routeKey]bool{}
	for _, r := range a {
		seen[routeKey{r.Dst, r.Port}] = true
	}
	for _, r := range b {
		if k := (routeKey{r.Dst, r.Port}); !seen[k] {
			seen[k] = true
			a = append(a, r)
		}
	}
	SortRoutes(a)
	return a
}

// SortRoutes orders routes by destination and port, so diffs and logs are stable.
func SortRoutes(rs []Route) {
	sort.Slice(rs, func(i, j int) bool {
		if a, b := rs[i].Dst.String(), rs[j].Dst.String(); a != b {
			return a < b
		}
		return rs[i].Port < rs[j].Port
	})
}

// Diff returns the routes to add and to delete to turn have into want.
// A route to the same destination with another type is replaced.
func Diff(want, have []Route) (add, del []Route) {
	h := map[Route]bool{}
	for _, r := range have {
		h[r] = true
	}
	w := map[Route]bool{}
	for _, r := range want {
		w[r] = true
		if !h[r] {
			add = append(add, r)
		}
	}
	for _, r := range have {
		if !w[r] {
			del = append(del, r)
		}
	}
	SortRoutes(add)
	SortRoutes(del)
	return add, del
}
