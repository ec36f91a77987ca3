package driver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fencecheck/fencecheck/chaos/schedule"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/leader"
	"github.com/fencecheck/fencecheck/witness/record"
)

// The mixed schedule's witness faults, switched at run time through the
// witness's admin port (--nemesis-runtime): a held-writes step and a
// lost-answers step.

// setNemesis sends req to the witness's run-time nemesis.
func (s *Session) setNemesis(ctx context.Context, req record.NemesisRequest) (record.NemesisState, error) {
	var st record.NemesisState
	if err := s.dep.WitnessAdmin(ctx, record.PathNemesis, req, &st); err != nil {
		return st, fmt.Errorf("the witness's run-time nemesis (%s): %w", record.PathNemesis, err)
	}
	return st, nil
}

// heldWrites arms the witness's hold of the leader's term, then cuts the
// leader off for length: its writes from before the takeover are held
// until the successor's fence was answered, then delivered (held-writes-
// rejected judges them). The window lasts from the arming to the release.
func (s *Session) heldWrites(ctx context.Context, length time.Duration) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader whose writes to hold")
	}
	w := history.ChaosWindow{Kind: history.ChaosHeldWrites, Pod: leader.PodOf(h.Holder), Injected: time.Now()}
	st, err := s.setNemesis(ctx, record.NemesisRequest{Hold: true})
	if err != nil {
		return err
	}
	defer func() {
		if w.Recovered.IsZero() {
			w.Recovered = time.Now()
		}
		s.record(w)
	}()
	s.dr.log("%s: the witness holds writes of epochs <= %d (leader %s, term %d)", s.def.Name, st.HoldEpoch, h.Holder, h.Term)
	if st.HoldEpoch != h.Term {
		return fmt.Errorf("the hold is of epochs <= %d, not the leader's term %d: its writes would not be held", st.HoldEpoch, h.Term)
	}
	if err := s.partition(ctx, length, schedule.Leader, 0); err != nil {
		return err
	}
	// The takeover settled, so the successor's fence was answered: the hold is over.
	if st, err = s.setNemesis(ctx, record.NemesisRequest{}); err != nil {
		return err
	}
	w.Recovered = time.Now()
	if st.Holding {
		return fmt.Errorf("the witness still holds writes of epochs <= %d after the takeover settled", st.HoldEpoch)
	}
	return nil
}

// lostAnswers has the witness lose the answer of every
// scenario.MixedLoseEvery-th fresh commit until scenario.MixedLostAnswers
// of them were retried and answered, then stops losing them.
func (s *Session) lostAnswers(ctx context.Context) error {
	h, _ := s.holder()
	w := history.ChaosWindow{Kind: history.ChaosLostAnswers, Pod: leader.PodOf(h.Holder), Injected: time.Now()}
	every, off := scenario.MixedLoseEvery, 0
	if _, err := s.setNemesis(ctx, record.NemesisRequest{LoseEvery: &every}); err != nil {
		return err
	}
	defer func() {
		_, err := s.setNemesis(context.WithoutCancel(ctx), record.NemesisRequest{LoseEvery: &off})
		w.Recovered = time.Now()
		s.record(w)
		if err != nil {
			s.dr.log("%s: turning lost answers off: %v", s.def.Name, err)
		}
	}()
	s.dr.log("%s: the witness loses the answer of every %d-th fresh commit", s.def.Name, every)
	return s.poll(ctx, fmt.Sprintf("%d lost answers retried and answered (witness)", scenario.MixedLostAnswers), func(ctx context.Context) (bool, error) {
		wh, err := s.dep.Witness(ctx)
		if err != nil {
			return false, err
		}
		return retriedLost(wh.Operations, w.Injected) >= scenario.MixedLostAnswers, nil
	})
}

// retriedLost counts the writes invoked after since whose answer the
// witness lost and that a later request with the same Idempotency-Key
// got a definite answer for.
func retriedLost(ops []record.Operation, since time.Time) int {
	answered := map[string]uint64{} // Idempotency-Key -> last answered op id
	for _, o := range ops {
		if o.Method == http.MethodPut && o.IdempotencyKey != "" && (o.Type == record.OK || o.Type == record.Fail) && o.Status != 0 {
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
