package fault

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/witness/record"
)

// SinkSlow makes the sink slow for the step's length: the witness holds
// every answer back by a delay its seeded PRNG draws from [0,
// SlowMaxDelay] (the sink acts at once; its clients hear late).
const SinkSlow Kind = "sink-slow"

// SlowMaxDelay is the longest a sink-slow answer is held back: more than
// a write interval, less than the renew deadline, so writes queue up in
// the bridge and the leader keeps its lease.
const SlowMaxDelay = 500 * time.Millisecond

var sinkSlow = Fault{
	Kind:           SinkSlow,
	Doc:            "the witness holds each answer of the sink back by a seeded delay for a while (a slow sink)",
	Inject:         injectSinkSlow,
	Gate:           GateFault,
	Lasts:          true,
	Hits:           HitsSink,
	Takeover:       false,
	Waits:          func(w history.ChaosWindow, _ history.Config) time.Duration { return w.Recovered.Sub(w.Injected) },
	Style:          Style{Fill: "#90a4ae", Opacity: "0.85", Color: "#37474f", Label: "sink slow", Legend: "slow sink (witness)", Band: true},
	Checks:         []string{},
	WitnessRuntime: true,
}

// injectSinkSlow slows every answer for the step's length, then stops, and
// shows the fault took effect: the witness delayed answers in its window.
func injectSinkSlow(ctx context.Context, e Env, st Step) error {
	seed := uint64(e.Seed()) + uint64(st.Index)
	w := history.ChaosWindow{Pod: "witness", Injected: time.Now()}
	if _, err := setNemesis(ctx, e, record.NemesisRequest{Slow: &record.SlowRequest{Max: SlowMaxDelay, Seed: seed}}); err != nil {
		return err
	}
	e.Logf("the witness delays every answer by up to %v (seed %d) for %v", SlowMaxDelay, seed, st.Length)
	err := wait.Hold(ctx, st.Length)
	_, offErr := setNemesis(context.WithoutCancel(ctx), e, record.NemesisRequest{Slow: &record.SlowRequest{}})
	w.Recovered = time.Now()
	stamp(e, SinkSlow, w)
	if err = errors.Join(err, offErr); err != nil {
		return err
	}
	h, err := e.Act().Witness(ctx)
	if err != nil {
		return err
	}
	n := 0
	for _, o := range h.Operations {
		if o.Nemesis != nil && o.Nemesis.Delayed > 0 && o.Invoked.After(w.Injected) {
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("the witness delayed no answer in %v: the fault did not take effect", st.Length)
	}
	e.Logf("the witness delayed %d answers", n)
	return nil
}
