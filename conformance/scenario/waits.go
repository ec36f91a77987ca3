package scenario

import (
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// Waits compares a scenario's wall time with the waits it cannot avoid:
// the partitions themselves, a lease TTL after each leader pod deletion or
// restart, a TTL after the heal for a leader that ignores its demotion,
// the chaos schedule's gaps, the step-down window after the last
// takeover, and fault.SettleCommits write intervals to see each
// leader commit (each fault's share is its Fault.Waits).
type Waits struct {
	Scenario    string        `json:"scenario"`
	Wall        time.Duration `json:"wall_ns"`        // first phase start to last phase end
	Setup       time.Duration `json:"setup_ns"`       // deploy + collect (cluster work, not waiting)
	Active      time.Duration `json:"active_ns"`      // Wall - Setup
	Unavoidable time.Duration `json:"unavoidable_ns"` // the model above
	Ratio       float64       `json:"ratio"`          // Active / Unavoidable (goal <= 1.2)
}

// MeasureWaits computes the comparison for every scenario with phases.
func MeasureWaits(r *history.Run) []Waits {
	var out []Waits
	for _, s := range r.Scenarios {
		if len(s.Phases) == 0 {
			continue
		}
		t := Waits{Scenario: s.Name}
		first, last := s.Phases[0].Start, s.Phases[0].End
		for _, p := range s.Phases {
			if p.Start.Before(first) {
				first = p.Start
			}
			if p.End.After(last) {
				last = p.End
			}
			d := p.End.Sub(p.Start)
			switch {
			case p.Name == PhaseDeploy || p.Name == PhaseCollect:
				t.Setup += d
			case strings.HasPrefix(p.Name, PhaseGap), p.Name == PhaseStepDown:
				t.Unavoidable += d
			}
		}
		t.Wall = last.Sub(first)
		t.Active = t.Wall - t.Setup
		t.Unavoidable += time.Duration(fault.SettleCommits) * s.Config.WriteInterval.D() // the first leader's commits
		for _, w := range s.Chaos {
			waits := fault.WaitLease // a kind this build does not know: as a pod deletion
			if f, ok := fault.Of(fault.Kind(w.Kind)); ok {
				waits = f.Waits
			}
			t.Unavoidable += waits(w, s.Config)
		}
		if s.Config.IgnoreDemotion {
			// The driver waits until the stale leader wrote a TTL after the
			// heal and drain_timeout after the takeover (about a TTL after
			// the cut), so it has read the Lease again and outlived any
			// drain before it is judged.
			lease, drain := s.Config.LeaseDuration.D(), s.Config.DrainTimeout.D()
			for _, w := range s.Chaos {
				t.Unavoidable += max(lease, w.Injected.Add(lease+drain).Sub(w.Recovered))
			}
		}
		if t.Unavoidable > 0 {
			t.Ratio = float64(t.Active) / float64(t.Unavoidable)
		}
		out = append(out, t)
	}
	return out
}

// Phase names the driver records and the model reads.
const (
	PhaseDeploy  = "deploy"
	PhaseSteady  = "steady"
	PhaseCollect = "collect"
	PhaseGap     = "gap-" // a seeded schedule's quiet time, gap-<step>
)

// PhaseStepDown is the driver keeping the writers running until the last
// takeover's step-down window closed (old-leader-steps-down needs it seen).
const PhaseStepDown = "step-down-window"
