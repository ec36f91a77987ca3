package driver

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/internal/wait"
)

// recordPodIPs keeps the deployment's address record in the history;
// what it could not record makes every check that attributes requests
// INCONCLUSIVE, and says why.
func (s *Session) recordPodIPs() error {
	ips, err := s.dep.PodIPs()
	s.Hist.PodIPs = ips
	if err != nil {
		s.Hist.MissingEvidence(history.EvidencePodIPs, err.Error())
	}
	return err
}

// stepDownWindow keeps every writer running until the last takeover's
// step-down window (drain_timeout and a margin, check.StepDownWindow) has
// closed, so a leader that never steps down is seen sending past it. Only
// for scenarios that judge old-leader-steps-down; the length of the window
// is the observation itself, not a wait for something to happen.
func (s *Session) stepDownWindow(ctx context.Context) error {
	if exp, ok := s.def.Expect[check.OldLeaderStepsDown]; !ok || exp == history.Any || s.lease == nil {
		return nil
	}
	var last time.Time
	for _, t := range check.Takeovers(&history.Scenario{Lease: s.lease.Snapshot()}) {
		if t.From != "" {
			last = t.Observed
		}
	}
	if last.IsZero() {
		return nil
	}
	left := time.Until(last.Add(check.StepDownWindow(s.Hist.Config)))
	if left <= 0 {
		return nil
	}
	return s.phase(ctx, scenario.PhaseStepDown, fault.GateNone, func() error { return wait.Hold(ctx, left) })
}
