package driver

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
)

// reopenAfterFailover reopens the quiet gate for the rest of a fault step
// once its failover is over: a new acquisition of the Lease, then a
// commit in its term at the sink. What follows (the heal, the settle
// commits, the old leader's step-down) times nothing that a deploy
// beside it could stretch much: the step-down is judged against
// drain_timeout (15 s by default; joins take under 2 s). A step with no
// takeover (held writes, lost answers) keeps the gate to its end; a
// follower's cut opens it at once (Session.ReopenGate). The sink is read
// only once the acquisition is seen, so the wait adds no load before it.
// stop ends the wait and returns once it has.
func (s *Session) reopenAfterFailover(ctx context.Context, phase string, reopen func()) (stop func()) {
	start := time.Now()
	seen := len(s.lease.Snapshot().Records)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var next history.LeaseRecord
		if s.lease.WaitFor(ctx, "a new acquisition of the Lease", func(rs []history.LeaseRecord) bool {
			var ok bool
			next, ok = newAcquisition(rs, seen)
			return ok
		}) != nil {
			return // the step ended first: the gate reopens with it
		}
		err := s.Poll(ctx, "a commit in the new term", func(ctx context.Context) (bool, error) {
			as, err := s.dep.Sink().History(ctx)
			if err != nil && !isDropped(err) {
				return false, err
			}
			return committedIn(next, start, as), nil
		})
		if err != nil {
			return
		}
		reopen()
		s.Logf("phase %s: quiet gate reopened %v in, after the first commit of %s's acquisition (term %d)",
			phase, time.Since(start).Round(time.Millisecond), next.Holder, next.Term)
	}()
	return func() { cancel(); <-done }
}

// newAcquisition is the first record after the first seen ones that
// another acquisition wrote: a holder other than the last seen one's, or
// the same holder acquiring again (a Lease deleted and re-created).
func newAcquisition(rs []history.LeaseRecord, seen int) (history.LeaseRecord, bool) {
	var from history.LeaseRecord
	if seen > 0 && seen <= len(rs) {
		from = rs[seen-1]
	}
	for _, r := range rs[min(seen, len(rs)):] {
		if r.Holder == "" {
			continue
		}
		again := r.AcquireTime != nil && (from.AcquireTime == nil || r.AcquireTime.After(*from.AcquireTime))
		if r.Holder != from.Holder || again {
			return r, true
		}
	}
	return history.LeaseRecord{}, false
}

// committedIn: the sink committed a write after the acquisition (or, when
// the Lease has no acquireTime, after the step began) stamped with its
// term, when the Lease carries one.
func committedIn(acq history.LeaseRecord, stepStart time.Time, as []contract.Attempt) bool {
	since := stepStart
	if acq.AcquireTime != nil && acq.AcquireTime.After(since) {
		since = *acq.AcquireTime
	}
	for _, a := range as {
		if a.Committed() && a.Arrived.After(since) && (!acq.TermOK || a.Epoch == acq.Term) {
			return true
		}
	}
	return false
}
