package scenario

import (
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

func init() { register(pauses) }

// pauses are the process-pause scenarios: the canonical stale leader (a
// stop-the-world GC, a frozen VM) wakes up believing it leads and sends
// with its old term before its next renew fails.
func pauses() []Def {
	return []Def{
		{
			Name:        "pause-leader",
			Description: "the leader is frozen for longer than the TTL, then thawed: it sends with its old term after the new term was granted, the sink rejects it, zero stale commits",
			Fault:       fault.Pause,
			Expect: expect(safety, map[string]history.Expectation{check.StaleLeaderActed: history.MustPass,
				check.FailoverLiveness: history.MustPass, check.OldLeaderStepsDown: history.MustPass}),
		},
		{
			Name:        "neg-pause-unfenced-sink",
			Description: "negative control: the paused leader wakes up with an unfenced sink: its old-term writes commit after the new term's fence",
			Fault:       fault.Pause,
			Sink:        Sink{Broken: UnfencedSink},
			Expect:      control(check.NoStaleCommit),
		},
	}
}
