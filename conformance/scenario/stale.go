package scenario

import (
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// More ways a leader goes stale or is replaced (issue 11: Lease
// deletion, slow clock, planned handover, mixed faults).

// SlowClockRate is the slow-clock scenarios' lease clock rate. At 0.25 the
// cut-off leader gives up 12s after its last renew, after the latest
// takeover a correct follower may make (9.4s with the default timing); at
// 0.5 (6s) a late but correct takeover left no stale window on a loaded
// machine (TestSlowClockLeaderOutlastsEveryCorrectTakeover).
const SlowClockRate = 0.25

func init() { register(stale) }

func stale() []Def {
	takeover := map[string]history.Expectation{check.OldLeaderStepsDown: history.MustPass, check.BridgeJoin: history.MustPass,
		check.FailoverLiveness: history.MustPass}
	return []Def{
		{
			Name:        "lease-deleted",
			Description: "the Lease is deleted under its holder: whoever re-creates it continues above the highest term seen; a holder that re-creates it drains its old term and fences with the new one",
			Fault:       fault.LeaseDelete,
			// A holder that re-creates the Lease has lost its old term as
			// much as to another holder: its writes of that term stop
			// within drain_timeout (check.Takeovers counts the re-creation).
			Expect: expect(safety, map[string]history.Expectation{check.BridgeJoin: history.MustPass, check.OldLeaderStepsDown: history.MustPass}),
		},
		{
			Name:        "neg-term-restart-on-recreate",
			Description: "negative control: --term-restart-on-recreate: the re-created Lease starts again at term 1",
			Fault:       fault.LeaseDelete,
			Reconciler:  Reconciler{TermRestartOnRecreate: true},
			Expect:      control(check.TermMonotonic),
		},
		{
			Name:        "slow-clock-leader",
			Description: "the leader's lease clock runs at a quarter of real speed (--clock-rate=0.25) and it is cut off from the apiserver: it keeps writing after its lease expired and a successor was granted; the fencing sink rejects every such write",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{ClockRate: SlowClockRate},
			WaitRejects: true,
			Expect: expect(safety, merge(takeover, map[string]history.Expectation{check.StaleLeaderActed: history.MustPass,
				check.RejectStaleSeen: history.MustPass})),
		},
		{
			Name:        "neg-slow-clock-unfenced-sink",
			Description: "negative control: the slow-clock leader with an unfenced sink: its writes after the successor's fence commit",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{ClockRate: SlowClockRate},
			Sink:        Sink{Broken: UnfencedSink},
			Expect:      control(check.NoStaleCommit),
		},
		{
			Name:        "planned-handover",
			Description: "a rolling restart with --release-on-cancel: each stopping leader aborts and joins its bridge, then releases the Lease, and a successor takes over within a jittered retry period (plus a write and its round trips)",
			Fault:       fault.RollingRestart,
			Reconciler:  Reconciler{ReleaseOnCancel: true},
			Expect: expect(safety, map[string]history.Expectation{check.BridgeAbort: history.MustPass, check.BridgeJoin: history.MustPass,
				check.FailoverLiveness: history.MustPass}),
		},
		{
			Name:        "neg-slow-failover",
			Description: "negative control: --lead-delay=8s: the new leader idles 8s before its first write, past client-go's failover bound",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{LeadDelay: 8 * time.Second},
			Expect:      control(check.FailoverLiveness),
		},
		{
			Name:        "mixed-faults",
			Description: "a seeded schedule mixing partitions of the leader or a follower, leader pod deletions, Lease deletions, rolling restarts, pauses, held writes, lost answers and sink crashes (replay: the run's seed and the schedule in the report)",
			Schedule:    Mixed,
			Expect:      mixedExpect(),
		},
	}
}

// merge is a and b in one map (b wins).
func merge(a, b map[string]history.Expectation) map[string]history.Expectation {
	out := map[string]history.Expectation{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
