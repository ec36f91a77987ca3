package local

import (
	"context"
	"github.com/fencecheck/fencecheck/internal/wait"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// node is what the windows name as the node: every process runs here.
const node = "localhost"

// Partition cuts pod's apiserver proxy (and its sink proxy, when
// alsoSink) for length, then heals.
func (d *deployment) Partition(ctx context.Context, pod string, length time.Duration, alsoSink bool) (history.ChaosWindow, error) {
	r, err := d.byPod(pod)
	if err != nil {
		return history.ChaosWindow{}, err
	}
	w := history.ChaosWindow{Pod: pod, Node: node, Injected: time.Now()}
	r.api.Cut()
	if alsoSink {
		r.sink.Cut()
	}
	err = wait.Hold(ctx, length)
	r.api.Heal()
	r.sink.Heal()
	w.Recovered = time.Now()
	return w, err
}

// DeletePod stops pod (SIGTERM), waits for its exit and starts its
// replacement.
func (d *deployment) DeletePod(ctx context.Context, pod string) (history.ChaosWindow, error) {
	r, err := d.byPod(pod)
	if err != nil {
		return history.ChaosWindow{}, err
	}
	w := history.ChaosWindow{Pod: pod, Node: node, Injected: time.Now()}
	err = r.stop(ctx, d.t.opt.StartTimeout)
	w.Recovered = time.Now()
	if err != nil {
		return w, err
	}
	_, err = d.addReconciler(ctx)
	return w, err
}

// RollingRestart replaces each running reconciler as a Deployment's
// rollout does with one surge and none unavailable: a new one ready, then
// an old one stopped.
func (d *deployment) RollingRestart(ctx context.Context, leader string) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Pod: leader, Node: node, Injected: time.Now()}
	old, err := d.Pods(ctx)
	if err != nil {
		return w, err
	}
	for _, pod := range old {
		if _, err := d.addReconciler(ctx); err != nil {
			return w, err
		}
		r, err := d.byPod(pod)
		if err != nil {
			return w, err
		}
		if err := r.stop(ctx, d.t.opt.StartTimeout); err != nil {
			return w, err
		}
	}
	w.Recovered = time.Now()
	return w, nil
}
