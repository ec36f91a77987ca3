package scenario

import (
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// mixedExpect is a mixed scenario's expectations before its schedule is
// drawn: the safety set and the takeover checks must pass, the checks of
// every kind it may draw are informative (Expectations decides at run
// time, from what was drawn).
func mixedExpect() map[string]history.Expectation {
	m := expect(safety, map[string]history.Expectation{check.OldLeaderStepsDown: history.MustPass, check.BridgeJoin: history.MustPass,
		check.FailoverLiveness: history.MustPass})
	for _, w := range fault.Mixed() {
		f, _ := fault.Of(w.Kind)
		for _, c := range f.Checks {
			if m[c] != history.MustFail {
				m[c] = history.Any
			}
		}
	}
	return m
}

func init() { register(mixed) }

// mixed are the schedules that show every kind in one run, and their
// control (mixed-faults, drawn by weight, is in stale.go: it runs last).
func mixed() []Def {
	return []Def{
		{
			Name: "mixed-faults-all",
			Description: "a seeded schedule whose first steps are every kind of fault once, in the seed's order: partitions, pod and Lease deletions, a rolling restart, a pause, " +
				"held writes, lost answers and a sink crash; each kind's checks must pass (replay: the run's seed and the schedule in the report)",
			Schedule: MixedEveryKind,
			Expect:   mixedExpect(),
		},
		{
			Name:        "neg-mixed-forget-floor-sink",
			Description: "negative control: every kind of fault once with a sink that keeps its floor in memory only: after the mix's sink crash it commits the harness's probe below the floor it acknowledged",
			Schedule:    MixedEveryKind,
			Sink:        Sink{Broken: ForgetFloorSink},
			Expect:      control(check.FloorSurvivesRestart),
		},
	}
}
