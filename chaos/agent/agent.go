// Package agent is the built-in executor's node agent: it watches
// NetworkChaos objects and pods, and keeps the partition routes in the
// network namespaces of the pods on its own node exactly as plan.Desired
// says, level-triggered. The deadline is computed from the object alone, so
// a partition heals on time whatever happens to the harness, and a
// restarted agent removes leftovers and re-applies what is still active.
package agent

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// GVR is NetworkChaos's resource (kept here so the agent does not import
// the harness-side package).
var GVR = schema.GroupVersionResource{Group: "chaos-mesh.org", Version: "v1alpha1", Resource: "networkchaos"}

// Namespaces is the netlink side, behind an interface so the reconcile
// logic is tested without root.
type Namespaces interface {
	// Tagged lists our routes per namespace path (only non-empty ones).
	Tagged() (map[string][]plan.Route, error)
	// Find returns the namespace holding ip.
	Find(ip netip.Addr) (string, error)
	// Sync makes our routes in path exactly want.
	Sync(path string, want []plan.Route) error
}

// Agent reconciles one node.
type Agent struct {
	Node  string
	NS    Namespaces
	Dyn   dynamic.Interface
	Logf  func(format string, args ...any)
	Now   func() time.Time
	ready atomic.Bool
}

func (a *Agent) log(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Ready reports whether one full reconcile (leftover cleanup included) has
// completed.
func (a *Agent) Ready() bool { return a.ready.Load() }

// outcome is what happened to one pod in a reconcile.
type outcome struct {
	ok   bool
	err  error
	path string
	at   time.Time
}

// Reconcile brings the node to the desired state for ncs and pods at now,
// writes the objects' status and returns the next deadline to wake up at
// (zero if none).
func (a *Agent) Reconcile(ctx context.Context, ncs []*v1alpha1.NetworkChaos, pods []corev1.Pod) (time.Time, error) {
	now := a.now()
	want, problems := plan.Desired(ncs, pods, a.Node, now)
	have, scanErr := a.NS.Tagged()
	if scanErr != nil {
		a.log("scan: %v", scanErr) // partial scans still heal what they found
	}

	results := map[string]outcome{} // pod key → outcome
	wanted := map[string]bool{}     // namespace paths that keep routes
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w := want[k]
		ip, err := netip.ParseAddr(w.PodIP)
		if err != nil {
			results[k] = outcome{err: fmt.Errorf("pod IP %q: %v", w.PodIP, err)}
			continue
		}
		path, err := a.NS.Find(ip)
		if err != nil {
			results[k] = outcome{err: err}
			continue
		}
		wanted[path] = true
		if err := a.NS.Sync(path, w.Routes); err != nil {
			results[k] = outcome{err: err, path: path}
			continue
		}
		results[k] = outcome{ok: true, path: path, at: a.now()}
		if !sameRoutes(have[path], w.Routes) {
			a.log("pod %s (%s): routes now %v for %s", k, path, w.Routes, strings.Join(w.Chaos, ","))
		}
	}
	healed := map[string]time.Time{}
	var healErr error
	for path, rs := range have {
		if wanted[path] {
			continue
		}
		if err := a.NS.Sync(path, nil); err != nil {
			healErr = err
			a.log("heal %s: %v", path, err)
			continue
		}
		healed[path] = a.now()
		a.log("healed %s (removed %v)", path, rs)
	}

	podByKey := map[string]*corev1.Pod{}
	for i := range pods {
		podByKey[plan.PodKey(&pods[i])] = &pods[i]
	}
	problemOf := map[string]error{}
	for _, p := range problems {
		problemOf[p.Chaos] = p.Err
	}
	var next time.Time
	for _, nc := range ncs {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if end, err := plan.Deadline(nc); err == nil && end.After(now) && (next.IsZero() || end.Before(next)) {
			next = end
		}
		if err := a.writeStatus(ctx, nc, pods, podByKey, results, healErr == nil && scanErr == nil, problemOf, now); err != nil {
			a.log("status of %s/%s: %v", nc.Namespace, nc.Name, err)
		}
	}
	if scanErr == nil && healErr == nil {
		a.ready.Store(true)
	}
	if healErr != nil {
		return next, healErr
	}
	return next, nil
}

func sameRoutes(a, b []plan.Route) bool {
	add, del := plan.Diff(a, b)
	return len(add) == 0 && len(del) == 0
}

// writeStatus records, for nc's pods on this node, what the reconcile did.
func (a *Agent) writeStatus(ctx context.Context, nc *v1alpha1.NetworkChaos, pods []corev1.Pod, podByKey map[string]*corev1.Pod,
	results map[string]outcome, healedAll bool, problemOf map[string]error, now time.Time) error {
	key := nc.Namespace + "/" + nc.Name
	active := plan.Active(nc, now)
	type mark func(*v1alpha1.NetworkChaosStatus) bool
	var marks []mark

	sel, selErr := plan.SelectPods(nc, pods)
	if err := problemOf[key]; err != nil {
		selErr = err
	}
	for i := range sel {
		p := &sel[i]
		if p.Spec.NodeName != a.Node {
			continue
		}
		pk := plan.PodKey(p)
		if selErr != nil {
			msg := selErr.Error()
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkFailed(s, pk, v1alpha1.Apply, msg, now) })
			continue
		}
		r, ok := results[pk]
		switch {
		case active && ok && r.ok:
			msg := fmt.Sprintf("node %s: %d routes in %s", a.Node, len(nc.Spec.ExternalTargets), r.path)
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkInjected(s, pk, msg, r.at) })
		case active && ok:
			msg := fmt.Sprintf("node %s: %v", a.Node, r.err)
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkFailed(s, pk, v1alpha1.Apply, msg, now) })
		case !active && healedAll:
			at := a.now()
			msg := fmt.Sprintf("node %s: routes removed", a.Node)
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkRecovered(s, pk, msg, at) })
		}
	}
	// Records of pods that no longer exist: their namespace (and routes) is gone.
	for pk, pp := range plan.Progress(&nc.Status) {
		if _, exists := podByKey[pk]; !exists && !pp.Injected.IsZero() && pp.Recovered.IsZero() {
			pk := pk
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool {
				return plan.MarkRecovered(s, pk, "pod deleted: its network namespace is gone", now)
			})
		}
	}
	if len(marks) == 0 {
		return nil
	}
	apply := func(st *v1alpha1.NetworkChaosStatus) bool {
		changed := false
		for _, m := range marks {
			if m(st) {
				changed = true
			}
		}
		return changed
	}
	// Dry run on the cached copy: most reconciles change nothing.
	cached := nc.Status.DeepCopy()
	if !apply(cached) {
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := a.Dyn.Resource(GVR).Namespace(nc.Namespace).Get(ctx, nc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur, err := decode(u)
		if err != nil {
			return err
		}
		if !apply(&cur.Status) {
			return nil
		}
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cur.Status)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, st, "status"); err != nil {
			return err
		}
		_, err = a.Dyn.Resource(GVR).Namespace(nc.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

func decode(u *unstructured.Unstructured) (*v1alpha1.NetworkChaos, error) {
	nc := &v1alpha1.NetworkChaos{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		return nil, fmt.Errorf("decode NetworkChaos %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return nc, nil
}

// HealAll removes every route the agent owns on this node (shutdown: an
// agent that is not running cannot keep a deadline, so it leaves nothing
// behind) and records the recovery in the status of the objects involved.
func (a *Agent) HealAll(ctx context.Context, ncs []*v1alpha1.NetworkChaos, pods []corev1.Pod) error {
	have, err := a.NS.Tagged()
	var last error = err
	for path := range have {
		if err := a.NS.Sync(path, nil); err != nil {
			last = err
		}
	}
	now := a.now()
	for _, nc := range ncs {
		sel, _ := plan.SelectPods(nc, pods)
		var mine []string
		for i := range sel {
			if sel[i].Spec.NodeName == a.Node {
				mine = append(mine, plan.PodKey(&sel[i]))
			}
		}
		if len(mine) == 0 || !plan.Active(nc, now) {
			continue
		}
		cp := nc.DeepCopy()
		changed := false
		for _, pk := range mine {
			changed = plan.MarkRecovered(&cp.Status, pk, "node "+a.Node+": agent stopping, routes removed", now) || changed
		}
		if changed {
			u, err := a.Dyn.Resource(GVR).Namespace(nc.Namespace).Get(ctx, nc.Name, metav1.GetOptions{})
			if err == nil {
				st, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&cp.Status)
				unstructured.SetNestedField(u.Object, st, "status")
				_, err = a.Dyn.Resource(GVR).Namespace(nc.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
			}
			if err != nil {
				last = err
			}
		}
	}
	return last
}
