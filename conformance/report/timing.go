package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// TimingTable renders the timings as a Markdown table with totals.
func TimingTable(ts []scenario.Waits) string {
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
