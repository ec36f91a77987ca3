package scenario

import (
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// A slow sink, the witness holding its answers back (fault.SinkSlow):
// writes queue up in the leader's bridge and nothing may go wrong. (In a
// file that sorts after stale.go: the earlier scenarios keep their order.)
func init() {
	register(func() []Def {
		return []Def{
			{
				Name:        "sink-slow",
				Description: "the sink's answers are held back by a seeded delay of up to 500 ms for the length of a partition: writes queue up behind them, every other safety check holds, the leader keeps its Lease (no takeover: term-step and no-stale-commit have nothing to judge)",
				Fault:       fault.SinkSlow,
				// No takeover: term-step sees no new grant and
				// no-stale-commit no new term at the sink, so neither
				// has anything to judge here.
				Expect: expect(safety, map[string]history.Expectation{check.BridgeJoin: history.MustPass, check.TermStep: history.Any,
					check.NoStaleCommit: history.Any}),
			},
		}
	})
}
