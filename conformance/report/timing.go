package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// SettleCommits is how many commits of a leader the suite waits for to
// call it live (it must match conformance/run).
const SettleCommits = 5

// ScenarioTiming compares a scenario's wall time with the waits it cannot
// avoid: the partitions themselves, a lease TTL after each leader pod
// deletion or restart, a TTL after the heal for a leader that ignores its
// demotion, the chaos schedule's gaps, and SettleCommits write intervals
// to see each leader commit.
type ScenarioTiming struct {
	Scenario    string        `json:"scenario"`
	Wall        time.Duration `json:"wall_ns"`        // first phase start to last phase end
	Setup       time.Duration `json:"setup_ns"`       // deploy + collect (cluster work, not waiting)
	Active      time.Duration `json:"active_ns"`      // Wall - Setup
	Unavoidable time.Duration `json:"unavoidable_ns"` // the model above
	Ratio       float64       `json:"ratio"`          // Active / Unavoidable (goal <= 1.2)
}

// Timings computes the comparison for every scenario with phases.
func Timings(r *history.Run) []ScenarioTiming {
	var out []ScenarioTiming
	for _, s := range r.Scenarios {
		if len(s.Phases) == 0 {
			continue
		}
		t := ScenarioTiming{Scenario: s.Name}
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
			case p.Name == "deploy" || p.Name == "collect":
				t.Setup += d
			case strings.HasPrefix(p.Name, "gap-"):
				t.Unavoidable += d
			}
		}
		t.Wall = last.Sub(first)
		t.Active = t.Wall - t.Setup
		settle := time.Duration(SettleCommits) * s.Config.WriteInterval.D()
		t.Unavoidable += settle // the first leader's commits
		for _, w := range s.Chaos {
			switch w.Kind {
			case "partition":
				t.Unavoidable += w.Recovered.Sub(w.Injected)
			default: // pod-delete, rolling-restart: the successor waits out the lease
				t.Unavoidable += s.Config.LeaseDuration.D()
			}
			t.Unavoidable += settle
		}
		for _, a := range s.Config.ReconcilerArgs {
			if a == "--ignore-demotion" {
				// The suite waits one TTL after the heal so the stale leader
				// has read the Lease again before it is judged.
				t.Unavoidable += s.Config.LeaseDuration.D()
			}
		}
		if t.Unavoidable > 0 {
			t.Ratio = float64(t.Active) / float64(t.Unavoidable)
		}
		out = append(out, t)
	}
	return out
}

// TimingTable renders the timings as a Markdown table with totals.
func TimingTable(ts []ScenarioTiming) string {
	var b strings.Builder
	b.WriteString("| scenario | wall | deploy+collect | active | unavoidable waits | active/unavoidable |\n|---|---|---|---|---|---|\n")
	var wall, setup, active, unav time.Duration
	for _, t := range ts {
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %v | %.2fx |\n", t.Scenario, t.Wall.Round(100*time.Millisecond), t.Setup.Round(100*time.Millisecond),
			t.Active.Round(100*time.Millisecond), t.Unavoidable.Round(100*time.Millisecond), t.Ratio)
		wall, setup, active, unav = wall+t.Wall, setup+t.Setup, active+t.Active, unav+t.Unavoidable
	}
	ratio := 0.0
	if unav > 0 {
		ratio = float64(active) / float64(unav)
	}
	fmt.Fprintf(&b, "| **total** | %v | %v | %v | %v | %.2fx |\n", wall.Round(time.Second), setup.Round(time.Second), active.Round(time.Second), unav.Round(time.Second), ratio)
	return b.String()
}
