package scenario

import (
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// ForgetFloorSink keeps its floor in memory only: a restart forgets it.
const ForgetFloorSink SinkMode = "forget-floor"

func init() { register(crashScenarios) }

func crashScenarios() []Def {
	return []Def{
		{
			Name:        "sink-crash",
			Description: "the sink is SIGKILLed under load right after the new leader's fence and restarts on its data: nothing acknowledged is lost, and a probe below the acknowledged floor is refused by the restarted sink",
			Fault:       fault.SinkCrash,
			// Under load: a write every 20 ms, so writes are acknowledged
			// up to the kill.
			Reconciler: Reconciler{WriteInterval: 20 * time.Millisecond},
			// The checks that read the sink's own history expect nothing
			// once it ran (Expectations: the sink-crash fault loses it).
			Expect: expect(safety, map[string]history.Expectation{check.FloorSurvivesRestart: history.MustPass,
				check.AckedWritesDurable: history.MustPass, check.OldLeaderStepsDown: history.MustPass, check.BridgeJoin: history.MustPass}),
		},
		{
			Name:        "neg-forget-floor-sink-crash",
			Description: "negative control: the sink keeps its floor in memory only and is SIGKILLed mid-takeover: after the restart it commits the harness's probe below the floor it acknowledged",
			Fault:       fault.SinkCrash,
			Reconciler:  Reconciler{WriteInterval: 20 * time.Millisecond},
			Sink:        Sink{Broken: ForgetFloorSink},
			Expect:      control(check.FloorSurvivesRestart, check.Linearizable),
		},
	}
}
