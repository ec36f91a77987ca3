package driver

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// A controller under test may keep no event log (FCEVENT lines are a MAY
// of docs/controller-contract.md): the waits on its account of stepping
// down then become the contract's own bound, evidence from the witness.

// silent reports whether pod never logged an event, after one fresh read
// of its log (a follow stream may lag).
func (s *Session) silent(ctx context.Context, pod string) bool {
	logs := s.dep.Events()
	if len(logs.Snapshot()[pod]) > 0 {
		return false
	}
	_ = logs.Refresh(ctx, pod) // a pod already gone has no log to read
	return len(logs.Snapshot()[pod]) == 0
}

// observeDrainTimeout lets drain_timeout pass after the takeover at tookOver:
// the time the contract gives an old leader to stop writing, so that what
// it sent in it (and after it, to the end of the recording) is on the
// witness's record for old-leader-steps-down. It is the length of the
// observation, not a wait for something to happen.
func (s *Session) observeDrainTimeout(ctx context.Context, pod string, tookOver time.Time) error {
	d := time.Until(tookOver.Add(s.dr.Timing.DrainTimeout))
	s.dr.log("%s: %s keeps no event log: observing drain_timeout (%v) after the takeover", s.def.Name, pod, d.Round(time.Millisecond))
	if d <= 0 {
		return nil
	}
	return Hold(ctx, d)
}

// UnderTestNamer is a Deployment that can name the controller it runs
// (its manifests and its pods' image digests) for the history.
type UnderTestNamer interface {
	UnderTest(ctx context.Context) *history.UnderTest
}
