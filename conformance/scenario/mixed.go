package scenario

import (
	"maps"

	"github.com/fencecheck/fencecheck/chaos/schedule"
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// MixedEveryKind runs a seeded schedule whose first steps are every kind
// of MixedKinds once, in an order the seed draws (schedule.Config.EveryKind):
// whatever the seed, one run shows every kind.
const MixedEveryKind Chaos = "mixed-every-kind"

// The lost-answers step: the witness loses the answer of every
// MixedLoseEvery-th fresh commit until MixedLostAnswers lost answers were
// retried and answered.
const (
	MixedLoseEvery   = 5
	MixedLostAnswers = 2
)

// KindChecks are the checks a kind of the mixed schedule brings. In a run
// that drew the kind they must pass; in one that did not they are
// informative (each is INCONCLUSIVE without its fault's evidence, never a
// pass).
var KindChecks = map[schedule.Kind][]string{
	schedule.Pause:       {check.StaleLeaderActed},
	schedule.HeldWrites:  {check.HeldWritesRejected},
	schedule.LostAnswers: {check.LostAnswersDeduplicated},
	schedule.SinkCrash:   {check.FloorSurvivesRestart, check.AckedWritesDurable},
}

// mixedExpect is a mixed scenario's expectations before its schedule is
// drawn: the safety set and the takeover checks must pass, every kind's
// checks are informative (MixedExpect decides at run time).
func mixedExpect() map[string]history.Expectation {
	m := expect(safety, map[string]history.Expectation{check.OldLeaderStepsDown: history.MustPass, check.BridgeJoin: history.MustPass,
		check.FailoverLiveness: history.MustPass})
	for _, checks := range KindChecks {
		for _, c := range checks {
			if m[c] != history.MustFail {
				m[c] = history.Any
			}
		}
	}
	return m
}

// MixedExpect is what a mixed run expects once its schedule is known: the
// checks of every kind it drew must pass (a negative control keeps its
// own, only its must-fail checks count), the others are informative; and
// after a sink crash the checks that read the sink's own history are
// informative, since the killed instance's history went with it.
func MixedExpect(base map[string]history.Expectation, sch schedule.Schedule) map[string]history.Expectation {
	out := maps.Clone(base)
	drawn := map[schedule.Kind]bool{}
	for _, st := range sch.Steps {
		drawn[st.KindOf()] = true
	}
	control := false
	for _, o := range base {
		control = control || o == history.MustFail
	}
	for kind, checks := range KindChecks {
		for _, c := range checks {
			switch {
			case out[c] == history.MustFail:
			case drawn[kind] && !control:
				out[c] = history.MustPass
			default:
				out[c] = history.Any
			}
		}
	}
	if drawn[schedule.SinkCrash] {
		out = afterSinkRestart(out)
	}
	return out
}

func init() { register(mixed) }

// mixed are the schedules that show every kind in one run, and their control.
func mixed() []Def {
	return []Def{
		{
			Name: "mixed-faults-all",
			Description: "a seeded schedule whose first steps are every kind of fault once, in the seed's order: partitions, pod and Lease deletions, a rolling restart, a pause, " +
				"held writes, lost answers and a sink crash; each kind's checks must pass (replay: the run's seed and the schedule in the report)",
			Chaos:   MixedEveryKind,
			Nemesis: WitnessNemesis{Runtime: true},
			Expect:  mixedExpect(),
		},
		{
			Name:        "neg-mixed-forget-floor-sink",
			Description: "negative control: every kind of fault once with a sink that keeps its floor in memory only: after the mix's sink crash it commits the harness's probe below the floor it acknowledged",
			Chaos:       MixedEveryKind,
			Sink:        Sink{Broken: ForgetFloorSink},
			Nemesis:     WitnessNemesis{Runtime: true},
			Expect:      control(check.FloorSurvivesRestart),
		},
	}
}
