package scenario

import (
	"strconv"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// WitnessNemesis is what the witness does to the traffic it forwards
// (witness.NemesisConfig, cmd/witness's nemesis flags); the zero value is
// nothing.
type WitnessNemesis struct {
	// HoldWritesAfter > 0: after that many fresh commits, hold the writes
	// of the leader's term until a higher fence was answered, then deliver
	// them before that answer goes back.
	HoldWritesAfter int
	// RaceLag > 0: release the held writes before the fence and forward
	// the fence this much later.
	RaceLag time.Duration
	// LoseAnswersEvery > 0: lose the answer of every n-th fresh commit.
	LoseAnswersEvery int
	// Runtime: the driver arms holds and lost answers while the scenario
	// runs (--nemesis-runtime; the mixed schedules).
	Runtime bool
}

// Args renders the knobs as the witness's flags.
func (n WitnessNemesis) Args() []string {
	var out []string
	if n.HoldWritesAfter > 0 {
		out = append(out, "--hold-writes-after="+strconv.Itoa(n.HoldWritesAfter))
	}
	if n.RaceLag > 0 {
		out = append(out, "--race-lag="+n.RaceLag.String())
	}
	if n.LoseAnswersEvery > 0 {
		out = append(out, "--lose-answers-every="+strconv.Itoa(n.LoseAnswersEvery))
	}
	if n.Runtime {
		out = append(out, "--nemesis-runtime")
	}
	return out
}

// The sinks the nemesis's controls run (fixtures/sink/broken).
const (
	IgnoreFenceSink   SinkMode = "ignore-fence"
	NoIdempotencySink SinkMode = "no-idempotency"
	// RacyWindowSink checks a write, then acts on it 500 ms later.
	RacyWindowSink SinkMode = "racy-window"
)

// holdAfterSettle arms the hold a few commits after the driver saw the
// leader settle, so the leader's term is held during the partition that
// follows and never the new leader's.
const holdAfterSettle = fault.SettleCommits + 3

// raceLag trails the held writes into the racy sink's 500 ms window by far
// less than the window and far more than a hop from the witness to the
// sink: the fence lands inside the window every time.
const raceLag = 50 * time.Millisecond

func init() {
	register(func() []Def {
		hold := WitnessNemesis{HoldWritesAfter: holdAfterSettle}
		return []Def{
			{
				Name:        "held-writes",
				Description: "the witness holds the leader's writes from before the takeover and delivers them after the sink answered the new leader's fence: every held write answered 409, none committed",
				Fault:       fault.Partition,
				Nemesis:     hold,
				Expect:      expect(safety, map[string]history.Expectation{check.HeldWritesRejected: history.MustPass}),
			},
			{
				Name:        "neg-held-writes-per-key-floor-sink",
				Description: "negative control: held writes with --ignore-demotion and a sink that fences each key against its own last epoch: the held writes commit after the new leader's fence",
				Fault:       fault.Partition,
				Reconciler:  Reconciler{IgnoreDemotion: true}, Sink: Sink{Broken: PerKeyFloorSink}, Nemesis: hold,
				Expect: control(check.HeldWritesRejected, check.NoStaleCommit, check.Linearizable),
			},
			{
				Name:        "neg-held-writes-ignore-fence-sink",
				Description: "negative control: held writes with --ignore-demotion and a sink that answers a fence OK without raising its floor: the held writes commit after the new leader's fence",
				Fault:       fault.Partition,
				Reconciler:  Reconciler{IgnoreDemotion: true}, Sink: Sink{Broken: IgnoreFenceSink}, Nemesis: hold,
				Expect: control(check.HeldWritesRejected, check.NoStaleCommit, check.Linearizable),
			},
			{
				Name: "neg-racy-sink",
				Description: "negative control: --ignore-demotion with a check-then-act sink (500 ms between a write's check and its act); the witness releases a held stale write 50 ms before the new leader's fence, " +
					"so the fence lands in the write's window every time and the write commits after it",
				Fault:      fault.Partition,
				Reconciler: Reconciler{IgnoreDemotion: true}, Sink: Sink{Broken: RacyWindowSink},
				Nemesis: WitnessNemesis{HoldWritesAfter: holdAfterSettle, RaceLag: raceLag},
				Expect:  control(check.NoStaleCommit),
			},
			{
				Name:        "lost-answers",
				Description: "the witness loses the answers to some committed writes (the sink answered OK, the client's connection is closed): every retry with the same Idempotency-Key is answered OK_DUP, nothing is applied twice",
				Fault:       fault.Partition,
				Nemesis:     WitnessNemesis{LoseAnswersEvery: 7},
				Expect:      expect(safety, map[string]history.Expectation{check.LostAnswersDeduplicated: history.MustPass}),
			},
			{
				Name:        "neg-lost-answers-no-idempotency-sink",
				Description: "negative control: lost answers with a sink that forgets Idempotency-Keys: the retry of a committed write commits again",
				Fault:       fault.Partition,
				Sink:        Sink{Broken: NoIdempotencySink},
				Nemesis:     WitnessNemesis{LoseAnswersEvery: 7},
				Expect:      control(check.LostAnswersDeduplicated, check.Idempotency, check.Linearizable),
			},
		}
	})
}
