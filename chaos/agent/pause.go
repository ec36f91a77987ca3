package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Freezer is the cgroup side of a pause, behind an interface so the
// reconcile logic is tested without a kernel.
type Freezer interface {
	// Find returns the cgroup directory of a pod's container.
	Find(podUID, containerID string) (string, error)
	// Freeze freezes every process in the cgroup and returns once the
	// kernel says it is frozen.
	Freeze(path string) error
	// Thaw lets them run again.
	Thaw(path string) error
}

func (a *Agent) thaw(path string) error {
	if a.Freezer == nil {
		return errors.New("no freezer configured")
	}
	return a.Freezer.Thaw(path)
}

// DecodePause converts an unstructured PodPause.
func DecodePause(u *unstructured.Unstructured) (*plan.PodPause, error) {
	pp := &plan.PodPause{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pp); err != nil {
		return nil, fmt.Errorf("decode PodPause %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return pp, nil
}

// ReconcilePauses keeps frozen exactly the containers on this node that
// active PodPause objects select: the deadline goes into the node ledger
// before the freeze, so the heal loop thaws on time whatever happens to
// the agent or the harness. It returns the next deadline.
func (a *Agent) ReconcilePauses(ctx context.Context, pps []*plan.PodPause, pods []corev1.Pod) (time.Time, error) {
	a.mu.Lock()
	now := a.now()
	led, err := a.loadLedger()
	if err != nil {
		a.mu.Unlock()
		return time.Time{}, err
	}
	want, problems := plan.DesiredPauses(pps, pods, a.Node, now, a.Scope, led.Injected)
	results := map[string]outcome{} // pod key → outcome (all its containers)
	wanted := map[string]bool{}
	var next time.Time
	for _, f := range plan.SortedFreezes(want) {
		for _, p := range f.Parts {
			if next.IsZero() || p.Deadline.Before(next) {
				next = p.Deadline
			}
		}
		res := func(o outcome) {
			if cur, ok := results[f.PodKey]; !ok || cur.ok {
				results[f.PodKey] = o
			}
		}
		if a.Freezer == nil {
			res(outcome{err: errors.New("no freezer configured")})
			continue
		}
		path, err := a.Freezer.Find(f.PodUID, f.ContainerID)
		if err != nil {
			res(outcome{err: err})
			continue
		}
		wanted[path] = true
		_, had := led.Entries[path]
		led.Entries[path] = plan.Entry{Path: path, Kind: plan.KindFreeze, Parts: f.Parts}
		remember(led, plan.KindFreeze, f.Parts)
		if err := a.saveLedger(led); err != nil {
			res(outcome{err: err, path: path})
			continue // no record, no freeze
		}
		if err := a.Freezer.Freeze(path); err != nil {
			res(outcome{err: err, path: path})
			continue
		}
		if !had {
			a.log("froze %s (%s) until %s", f.Key(), path, f.Parts[0].Deadline.Format(time.RFC3339Nano))
		}
		res(outcome{ok: true, path: path, at: a.now()})
	}
	var errs []error
	for path, e := range led.Entries {
		if e.Kind != plan.KindFreeze || wanted[path] {
			continue
		}
		if err := a.thaw(path); err != nil {
			errs = append(errs, fmt.Errorf("thaw %s: %w", path, err))
			continue
		}
		a.log("thawed %s", path)
		delete(led.Entries, path)
	}
	uids := map[string]bool{}
	for _, pp := range pps {
		uids[string(pp.UID)] = true
	}
	for uid, inj := range led.Injected {
		if inj.Kind == plan.KindFreeze && !uids[uid] {
			delete(led.Injected, uid)
		}
	}
	if err := a.saveLedger(led); err != nil {
		errs = append(errs, err)
	}
	injected := led.Injected
	a.mu.Unlock()

	healedAll := len(errs) == 0
	podByKey, problemOf := indexPods(pods), indexProblems(problems)
	for _, pp := range pps {
		if pp.DeletionTimestamp != nil {
			continue
		}
		pp := pp
		sel, selErr := plan.SelectBy(pp.Namespace, pp.Spec.PodSelector, pods)
		active, _ := plan.PauseActive(pp, now, injected)
		a.report(recordsFor{
			gvr: plan.PauseGVR, ns: pp.Namespace, name: pp.Name, cached: pp.Status, sel: sel, selErr: selErr,
			applied: func(r outcome) string { return fmt.Sprintf("node %s: frozen %s", a.Node, r.path) },
			removed: "thawed", gone: "pod deleted: its containers are gone",
		}, problemOf[pp.Namespace+"/"+pp.Name], active, podByKey, results, healedAll, now)
	}
	return next, errors.Join(errs...)
}
