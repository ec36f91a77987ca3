package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/fencecheck/fencecheck/chaos"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// Pause freezes pod's containers with a PodPause that the chaos agent
// thaws at its deadline (recorded on the node before the freeze), and
// returns the window the agent recorded.
func (d *deployment) Pause(ctx context.Context, pod string, length time.Duration) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Pod: pod, Node: d.nodeOf(ctx, pod)}
	p, ok := d.t.opt.Exec.(chaos.Pauser)
	if !ok {
		return w, errors.New("pause: the " + d.t.opt.Exec.Name() + " executor cannot pause (Chaos Mesh has no pause, its issue #1924): use the built-in executor")
	}
	pp := chaos.NewPause(chaos.PauseSpec{Namespace: d.ns, PodNamespace: d.ns, PodName: pod, Duration: length})
	d.t.log("%s: PodPause for %s for %v", d.ns, pod, length)
	in, err := p.Pause(ctx, pp)
	if err != nil {
		return w, err
	}
	defer func() {
		if err := p.DeletePause(context.WithoutCancel(ctx), d.ns, in.Name); err != nil {
			d.t.log("%s: deleting PodPause %s: %v", d.ns, in.Name, err)
		}
	}()
	out, err := p.WaitPauseRecovered(ctx, d.ns, in.Name)
	w.Injected, w.Recovered = in.Injected, out.Recovered
	return w, err
}
