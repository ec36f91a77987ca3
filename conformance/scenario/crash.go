package scenario

import (
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// SinkCrash cuts the leader off from the apiserver and, once its successor
// has fenced the sink and writes, SIGKILLs the sink (its data kept) and
// restarts it; the witness refuses the clients' requests until the
// harness's probe below the acknowledged floor has been answered.
const SinkCrash Chaos = "sink-crash"

// ForgetFloorSink keeps its floor in memory only: a restart forgets it.
const ForgetFloorSink SinkMode = "forget-floor"

// ProbeKey is the record the harness's probe writes: no plan writes it, so
// a probe that commits never overwrites a client's write.
const ProbeKey = "fencecheck-probe"

func init() { register(crashScenarios) }

func crashScenarios() []Def {
	return []Def{
		{
			Name:        "sink-crash",
			Description: "the sink is SIGKILLed under load right after the new leader's fence and restarts on its data: nothing acknowledged is lost, and a probe below the acknowledged floor is refused by the restarted sink",
			Chaos:       SinkCrash,
			// Under load: a write every 20 ms, so writes are acknowledged
			// up to the kill.
			Reconciler: Reconciler{WriteInterval: 20 * time.Millisecond},
			Expect: afterSinkRestart(expect(safety, map[string]history.Expectation{check.FloorSurvivesRestart: history.MustPass,
				check.AckedWritesDurable: history.MustPass, check.OldLeaderStepsDown: history.MustPass, check.BridgeJoin: history.MustPass})),
		},
		{
			Name:        "neg-forget-floor-sink-crash",
			Description: "negative control: the sink keeps its floor in memory only and is SIGKILLed mid-takeover: after the restart it commits the harness's probe below the floor it acknowledged",
			Chaos:       SinkCrash,
			Reconciler:  Reconciler{WriteInterval: 20 * time.Millisecond},
			Sink:        Sink{Broken: ForgetFloorSink},
			Expect:      control(check.FloorSurvivesRestart, check.Linearizable),
		},
	}
}

// afterSinkRestart turns every must-pass check that reads the sink's own
// history into an informative one: the killed instance's history is gone
// (it lives in memory), so those checks are INCONCLUSIVE and say why.
func afterSinkRestart(m map[string]history.Expectation) map[string]history.Expectation {
	for name, o := range m {
		c, _ := check.ByName(name)
		for _, n := range c.Needs {
			if n == history.EvidenceSink && o == history.MustPass {
				m[name] = history.Any
			}
		}
	}
	return m
}
