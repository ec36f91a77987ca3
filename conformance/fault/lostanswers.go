package fault

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// LostAnswers has the witness lose the answers of some committed writes
// for a while (the reconciler retries each with its Idempotency-Key).
const LostAnswers Kind = "lost-answers"

// The lost-answers step: the witness loses the answer of every
// LoseEvery-th fresh commit until LostAnswersRetried lost answers were
// retried and answered.
const (
	LoseEvery          = 5
	LostAnswersRetried = 2
)

var lostAnswers = Fault{
	Kind:           LostAnswers,
	Doc:            "the witness loses the answers of some committed writes until two were retried and answered",
	Inject:         injectLostAnswers,
	Gate:           GateFault,
	Hits:           HitsPod,
	Takeover:       false,
	Waits:          WaitNone,
	Style:          Style{Fill: "#26a69a", Opacity: "0.85", Color: "#004d40", Label: "answers lost", Legend: "lost answers (witness)", Band: true},
	Checks:         []string{"lost-answers-deduplicated"},
	WitnessRuntime: true,
	Mix:            1,
}

// injectLostAnswers has the witness lose the answer of every LoseEvery-th
// fresh commit until LostAnswersRetried of them were retried and
// answered, then stops losing them.
func injectLostAnswers(ctx context.Context, e Env, _ Step) error {
	h, _ := e.Leader()
	pod := ""
	if h.Holder != "" {
		var err error
		if pod, err = e.PodOf(ctx, h.Holder); err != nil {
			return err
		}
	}
	w := history.ChaosWindow{Pod: pod, Injected: time.Now()}
	every, off := LoseEvery, 0
	if _, err := setNemesis(ctx, e, record.NemesisRequest{LoseEvery: &every}); err != nil {
		return err
	}
	defer func() {
		_, err := setNemesis(context.WithoutCancel(ctx), e, record.NemesisRequest{LoseEvery: &off})
		w.Recovered = time.Now()
		stamp(e, LostAnswers, w)
		if err != nil {
			e.Logf("turning lost answers off: %v", err)
		}
	}()
	e.Logf("the witness loses the answer of every %d-th fresh commit", every)
	return e.Poll(ctx, fmt.Sprintf("%d lost answers retried and answered (witness)", LostAnswersRetried), func(ctx context.Context) (bool, error) {
		wh, err := e.Act().Witness(ctx)
		if err != nil {
			return false, err
		}
		return retriedLost(wh.Operations, w.Injected) >= LostAnswersRetried, nil
	})
}

// retriedLost counts the writes invoked after since whose answer the
// witness lost and that a later request with the same Idempotency-Key
// got a definite answer for.
func retriedLost(ops []record.Operation, since time.Time) int {
	answered := map[string]uint64{} // Idempotency-Key -> last answered op id
	for _, o := range ops {
		if o.Method == contract.MethodPut && o.IdempotencyKey != "" && (o.Type == record.OK || o.Type == record.Fail) && o.Status != 0 {
			answered[o.IdempotencyKey] = max(answered[o.IdempotencyKey], o.ID)
		}
	}
	n := 0
	for _, o := range ops {
		if o.Nemesis != nil && o.Nemesis.LostAnswer && o.Invoked.After(since) && answered[o.IdempotencyKey] > o.ID {
			n++
		}
	}
	return n
}
