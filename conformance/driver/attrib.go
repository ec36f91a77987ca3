package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// PodAddresses is a Deployment that records which address each reconciler
// pod reached the witness from, over time (the cluster from the API, the
// local target from its own dialers), so the checks can name a request's
// sender without trusting anything the sender says.
type PodAddresses interface {
	PodIPs() ([]history.PodIP, error)
}

// recordPodIPs keeps the deployment's address record in the history; with
// none, every check that attributes requests is INCONCLUSIVE and says why.
func (s *Session) recordPodIPs() error {
	r, ok := s.dep.(PodAddresses)
	if !ok {
		s.Hist.MissingEvidence(history.EvidencePodIPs, fmt.Sprintf("the deployment (%T) records no pod addresses", s.dep))
		return nil
	}
	ips, err := r.PodIPs()
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
	return s.phase(ctx, scenario.PhaseStepDown, func() error { return Hold(ctx, left) })
}
