// Package agent is the built-in executor's node agent: it watches
// NetworkChaos objects and pods, and keeps the partition routes in the
// network namespaces of the pods on its own node exactly as plan.Desired
// says, level-triggered. The deadline is computed from the object alone, so
// a partition heals on time whatever happens to the harness, and a
// restarted agent removes leftovers and re-applies what is still active.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
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
	Node string
	NS   Namespaces
	Dyn  dynamic.Interface
	Logf func(format string, args ...any)
	Now  func() time.Time
	// Scope says which namespaces may be targeted (plan.Scope).
	Scope plan.Scope
	// Ledger is the node ledger; the heal loop needs nothing else.
	Ledger *Ledger
	// Freezer freezes and thaws containers for PodPause (nil: no pauses).
	Freezer Freezer
	// StatusTimeout bounds each status request (default 5s).
	StatusTimeout time.Duration

	mu       sync.Mutex // the node's namespaces and the ledger
	ready    atomic.Bool
	lastHeal atomic.Int64 // unix nanoseconds of the heal loop's last round
	statusQ  chan func(context.Context)
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

// LastHeal is when the heal loop last completed a round (zero: never).
func (a *Agent) LastHeal() time.Time {
	if n := a.lastHeal.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// status runs a status write with a deadline: on the worker goroutine when
// Run started one (so no heal waits on the apiserver), else inline. A full
// queue drops the write: status is recomputed from the objects on every
// reconcile, so the next one writes it again.
func (a *Agent) status(what string, write func(context.Context) error) {
	run := func(ctx context.Context) {
		timeout := a.StatusTimeout
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := write(ctx); err != nil {
			a.log("status of %s: %v", what, err)
		}
	}
	if a.statusQ == nil {
		run(context.Background())
		return
	}
	select {
	case a.statusQ <- run:
	default:
		a.log("status of %s: queue full, written on a later reconcile", what)
	}
}

// outcome is what happened to one pod in a reconcile.
type outcome struct {
	ok   bool
	err  error
	path string
	at   time.Time
}

// Reconcile brings the node to the desired state for ncs and pods at now,
// writes the objects' status and returns the next deadline to wake up at
// (zero if none). It must only run on synced caches: what it does not see
// it heals.
func (a *Agent) Reconcile(ctx context.Context, ncs []*v1alpha1.NetworkChaos, pods []corev1.Pod) (time.Time, error) {
	a.mu.Lock()
	results, healedAll, want, problems, injected, err := a.reconcileNode(ncs, pods)
	a.mu.Unlock()
	now := a.now()

	podByKey, problemOf := indexPods(pods), indexProblems(problems)
	var next time.Time
	for _, w := range want {
		for _, p := range w.Parts {
			if next.IsZero() || p.Deadline.Before(next) {
				next = p.Deadline
			}
		}
	}
	for _, nc := range ncs {
		if nc.DeletionTimestamp != nil {
			continue
		}
		nc := nc
		sel, selErr := plan.SelectPods(nc, pods)
		active, _ := plan.EffectiveActive(nc, now, injected)
		a.report(recordsFor{
			gvr: GVR, ns: nc.Namespace, name: nc.Name, cached: nc.Status, sel: sel, selErr: selErr,
			applied: func(r outcome) string {
				return fmt.Sprintf("node %s: %d routes in %s", a.Node, len(nc.Spec.ExternalTargets), r.path)
			},
			removed: "routes removed", gone: "pod deleted: its network namespace is gone",
		}, problemOf[nc.Namespace+"/"+nc.Name], active, podByKey, results, healedAll, now)
	}
	return next, err
}

func indexPods(pods []corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for i := range pods {
		out[plan.PodKey(&pods[i])] = &pods[i]
	}
	return out
}

func indexProblems(problems []plan.Problem) map[string]error {
	out := map[string]error{}
	for _, p := range problems {
		out[p.Chaos] = p.Err
	}
	return out
}

// report queues one object's status writes: why it is refused, if it is,
// and its records.
func (a *Agent) report(o recordsFor, problem error, active bool, podByKey map[string]*corev1.Pod, results map[string]outcome, healedAll bool, now time.Time) {
	key := o.gvr.Resource + " " + o.ns + "/" + o.name
	if problem != nil {
		reason := problem.Error()
		a.status(key, func(ctx context.Context) error { return a.writeRefused(ctx, o.gvr, o.ns, o.name, reason) })
	}
	a.status(key, func(ctx context.Context) error {
		return a.writeRecords(ctx, o, podByKey, results, healedAll, problem != nil, active && problem == nil, now)
	})
}

// reconcileNode is Reconcile's node side, under a.mu: ledger first, then
// the rules.
func (a *Agent) reconcileNode(ncs []*v1alpha1.NetworkChaos, pods []corev1.Pod) (map[string]outcome, bool, map[string]*plan.Want, []plan.Problem, map[string]plan.Injection, error) {
	now := a.now()
	led, lerr := a.loadLedger()
	if lerr != nil {
		a.log("%v", lerr)
	}
	want, problems := plan.Desired(ncs, pods, a.Node, now, a.Scope, led.Injected)
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
		// The ledger first: whatever is installed, the heal loop knows of.
		led.Entries[path] = plan.Entry{Path: path, Parts: w.Parts}
		remember(led, plan.KindRoutes, w.Parts)
		if err := a.saveLedger(led); err != nil {
			results[k] = outcome{err: err, path: path}
			continue // no record, no rule
		}
		if err := a.NS.Sync(path, w.Routes); err != nil {
			results[k] = outcome{err: err, path: path}
			continue
		}
		results[k] = outcome{ok: true, path: path, at: a.now()}
		if !sameRoutes(have[path], w.Routes) {
			a.log("pod %s (%s): routes now %v for %s", k, path, w.Routes, strings.Join(w.Chaos, ","))
		}
	}
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
		a.log("healed %s (removed %v)", path, rs)
	}
	// Forget what is healed, and the objects that are gone.
	uids := map[string]bool{}
	for _, nc := range ncs {
		uids[string(nc.UID)] = true
	}
	for path, e := range led.Entries {
		if _, failed := have[path]; e.Kind == plan.KindRoutes && !wanted[path] && (!failed || healErr == nil) {
			delete(led.Entries, path)
		}
	}
	for uid, inj := range led.Injected {
		if inj.Kind == plan.KindRoutes && !uids[uid] {
			delete(led.Injected, uid)
		}
	}
	if err := a.saveLedger(led); err != nil {
		a.log("%v", err)
	}
	healedAll := healErr == nil && scanErr == nil
	if healedAll {
		a.ready.Store(true)
	}
	return results, healedAll, want, problems, led.Injected, healErr
}

// remember records the first injection of each part's object.
func remember(led LedgerState, kind string, parts []plan.Part) {
	for _, p := range parts {
		if _, ok := led.Injected[p.UID]; !ok {
			led.Injected[p.UID] = plan.Injection{Kind: kind, Fingerprint: p.Fingerprint, Deadline: p.Deadline}
		}
	}
}

func (a *Agent) loadLedger() (LedgerState, error) {
	if a.Ledger == nil {
		return LedgerState{Entries: map[string]plan.Entry{}, Injected: map[string]plan.Injection{}}, nil
	}
	return a.Ledger.Load()
}

func (a *Agent) saveLedger(st LedgerState) error {
	if a.Ledger == nil {
		return nil
	}
	return a.Ledger.Save(st)
}

// HealExpired is one round of the heal loop: from the ledger and the clock
// alone, it removes every part whose deadline has passed, and returns the
// next deadline (zero if none). It needs no apiserver.
func (a *Agent) HealExpired() (time.Time, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.lastHeal.Store(a.now().UnixNano())
	if a.Ledger == nil {
		return time.Time{}, nil
	}
	led, err := a.Ledger.Load()
	if err != nil {
		return time.Time{}, err
	}
	now := a.now()
	var next time.Time
	var errs []error
	changed := false
	for _, path := range led.Paths() {
		e := led.Entries[path]
		routes, n := e.Live(now)
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
		var live []plan.Part
		for _, p := range e.Parts {
			if now.Before(p.Deadline) {
				live = append(live, p)
			}
		}
		if len(live) == len(e.Parts) {
			continue
		}
		if e.Kind == plan.KindFreeze {
			if len(live) == 0 {
				if err := a.thaw(path); err != nil {
					errs = append(errs, fmt.Errorf("thaw %s at its deadline: %w", path, err))
					continue
				}
				a.log("heal loop: thawed %s at its deadline", path)
			}
		} else if err := a.NS.Sync(path, routes); err != nil && !gone(path) {
			errs = append(errs, fmt.Errorf("heal %s at its deadline: %w", path, err))
			continue
		} else {
			a.log("heal loop: %s now %v (deadline passed for %d of %d)", path, routes, len(e.Parts)-len(live), len(e.Parts))
		}
		changed = true
		if len(live) == 0 {
			delete(led.Entries, path)
		} else {
			e.Parts = live
			led.Entries[path] = e
		}
	}
	if changed {
		if err := a.Ledger.Save(led); err != nil {
			errs = append(errs, err)
		}
	}
	return next, errors.Join(errs...)
}

// gone reports whether a target path no longer exists (its pod is gone,
// and its rules with it).
func gone(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

// HealOrphans removes tagged rules the ledger does not know of (the ledger
// is written before a rule is installed, so these can only be an older
// agent's). It runs at start, before the caches sync.
func (a *Agent) HealOrphans() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	led, err := a.loadLedger()
	if err != nil {
		return err
	}
	have, err := a.NS.Tagged()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for path, rs := range have {
		if e, ok := led.Entries[path]; ok && e.Kind == plan.KindRoutes {
			continue
		}
		if err := a.NS.Sync(path, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		a.log("removed orphan rules in %s: %v", path, rs)
	}
	return errors.Join(errs...)
}

// RefusedField is where a refused object's reason goes in its status.
const RefusedField = "refused"

// writeRefused records why nc is refused (status.refused), once.
func (a *Agent) writeRefused(ctx context.Context, gvr schema.GroupVersionResource, ns, name, reason string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := a.Dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur, _, _ := unstructured.NestedString(u.Object, "status", RefusedField); cur == reason {
			return nil
		}
		if err := unstructured.SetNestedField(u.Object, reason, "status", RefusedField); err != nil {
			return err
		}
		_, err = a.Dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			a.log("refused %s %s/%s: %s", gvr.Resource, ns, name, reason)
		}
		return err
	})
}

func sameRoutes(a, b []plan.Route) bool {
	add, del := plan.Diff(a, b)
	return len(add) == 0 && len(del) == 0
}

// writeStatus records, for nc's pods on this node, what the reconcile did.
// recordsFor is what writeRecords needs of one chaos object.
type recordsFor struct {
	gvr           schema.GroupVersionResource
	ns, name      string
	cached        v1alpha1.NetworkChaosStatus
	sel           []corev1.Pod
	selErr        error
	applied       func(outcome) string
	removed, gone string
}

// writeRecords records, for the object's pods on this node, what the
// reconcile did (Chaos Mesh's records and conditions).
func (a *Agent) writeRecords(ctx context.Context, o recordsFor, podByKey map[string]*corev1.Pod,
	results map[string]outcome, healedAll, refused, active bool, now time.Time) error {
	type mark func(*v1alpha1.NetworkChaosStatus) bool
	var marks []mark
	selErr := o.selErr
	if refused { // the reason is in status.refused; only recoveries are recorded
		selErr = nil
	}
	for i := range o.sel {
		p := &o.sel[i]
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
			msg := o.applied(r)
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkInjected(s, pk, msg, r.at) })
		case active && ok:
			msg := fmt.Sprintf("node %s: %v", a.Node, r.err)
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkFailed(s, pk, v1alpha1.Apply, msg, now) })
		case !active && healedAll:
			at := a.now()
			msg := fmt.Sprintf("node %s: %s", a.Node, o.removed)
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkRecovered(s, pk, msg, at) })
		}
	}
	// Records of pods that no longer exist: their namespace or cgroup is gone.
	for pk, pp := range plan.Progress(&o.cached) {
		if _, exists := podByKey[pk]; !exists && !pp.Injected.IsZero() && pp.Recovered.IsZero() {
			pk := pk
			marks = append(marks, func(s *v1alpha1.NetworkChaosStatus) bool { return plan.MarkRecovered(s, pk, o.gone, now) })
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
	if !apply(o.cached.DeepCopy()) {
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := a.Dyn.Resource(o.gvr).Namespace(o.ns).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var cur v1alpha1.NetworkChaosStatus
		if m, ok, _ := unstructured.NestedMap(u.Object, "status"); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cur); err != nil {
				return fmt.Errorf("decode status of %s/%s: %w", o.ns, o.name, err)
			}
		}
		if !apply(&cur) {
			return nil
		}
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cur)
		if err != nil {
			return err
		}
		if r, ok, _ := unstructured.NestedString(u.Object, "status", RefusedField); ok {
			st[RefusedField] = r // not a field of Chaos Mesh's status type
		}
		if err := unstructured.SetNestedField(u.Object, st, "status"); err != nil {
			return err
		}
		_, err = a.Dyn.Resource(o.gvr).Namespace(o.ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
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
	a.mu.Lock()
	have, err := a.NS.Tagged()
	var last error = err
	for path := range have {
		if err := a.NS.Sync(path, nil); err != nil {
			last = err
		}
	}
	if led, err := a.loadLedger(); err != nil {
		last = err
	} else {
		for path, e := range led.Entries {
			if e.Kind == plan.KindFreeze {
				if err := a.thaw(path); err != nil {
					last = err
					continue
				}
			} else if last != nil {
				continue
			}
			delete(led.Entries, path)
		}
		if err := a.saveLedger(led); err != nil {
			last = err
		}
	}
	a.mu.Unlock()
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
