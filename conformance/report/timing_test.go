package report

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/synth"
)

func TestTimings(t *testing.T) {
	s := synth.Scenario("p", synth.Defect{})
	// synthetic phases: deploy 1s, steady 4s, partition 9s, heal 6s; one 9s
	// partition; write interval 500ms, so settle = 2.5s per leader.
	ts := scenario.MeasureWaits(synth.Run("r", s))
	if len(ts) != 1 {
		t.Fatal(ts)
	}
	got := ts[0]
	if got.Wall != 20*time.Second || got.Setup != time.Second || got.Active != 19*time.Second {
		t.Errorf("wall/setup/active %+v", got)
	}
	if want := 9*time.Second + 2*2500*time.Millisecond; got.Unavoidable != want {
		t.Errorf("unavoidable %v, want %v", got.Unavoidable, want)
	}
	if got.Ratio < 1.35 || got.Ratio > 1.36 {
		t.Errorf("ratio %.3f", got.Ratio)
	}
	if tab := TimingTable(ts); !strings.Contains(tab, "| p | 20s | 1s | 19s | 14s | 1.36x |") {
		t.Errorf("table:\n%s", tab)
	}
}
