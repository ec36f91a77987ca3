// Package scenario defines the conformance scenarios as data: how the
// reconciler and the sink run, what chaos is applied, and what each check
// must say. The cluster suite (conformance/suite) executes them; the
// definitions are pure so they are unit-tested without a cluster.
package scenario

import (
	"fmt"
	"regexp"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/leader"
)

// Def is one scenario.
type Def struct {
	Name        string
	Description string
	// Fault is the scenario's one fault, injected once (for as long as the
	// run's partition when it lasts); or
	Fault fault.Kind
	// Schedule is a seeded schedule of several faults instead (plan.go).
	Schedule   Schedule
	Reconciler Reconciler
	Sink       Sink
	// WaitRejects: before collecting, wait until the sink rejected a stale write.
	WaitRejects bool
	// CutSinkToo: the partition also cuts the leader off from the sink, so
	// its writes fail and retry and the bridge holds a backlog when the
	// producer stops (a fast in-cluster sink never lets one build up).
	CutSinkToo bool
	// Exclusive: the scenario needs the whole cluster (it disturbs a node
	// or the apiserver, or times something other scenarios' load would
	// skew), so the suite runs it alone, after the others.
	Exclusive bool
	// Nemesis is the faults the witness injects (nemesis.go); none by default.
	Nemesis WitnessNemesis
	Expect  map[string]history.Expectation
}

// Multistep reports a scenario that runs a seeded schedule of several
// faults: a minute or more of waits, against 10-25 s for one fault.
func (d Def) Multistep() bool { return d.Schedule != "" }

// Chaos names what the scenario injects: its fault, or its schedule.
func (d Def) Chaos() string {
	if d.Schedule != "" {
		return string(d.Schedule)
	}
	return string(d.Fault)
}

// WaitRank ranks a scenario's waits coarsely, for the order scenarios
// start in when several run at once (longest first, so a long one does
// not run on alone at the end): 2 for a seeded schedule of several
// faults (a minute or more), 1 for a wait bound to drain_timeout (the
// step-down window, or a stale leader's writes past it) or a new leader
// that idles before its first write (25-35 s on the default timing), 0
// for one fault (8-20 s).
func (d Def) WaitRank() int {
	switch {
	case d.Multistep():
		return 2
	case d.Reconciler.IgnoreDemotion, d.Reconciler.LeadDelay > 0:
		return 1
	}
	if exp, ok := d.Expect[check.OldLeaderStepsDown]; ok && exp != history.Any {
		return 1
	}
	return 0
}

// Timing is the lease and bridge timing every scenario runs with.
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	DrainTimeout, WriteInterval, AbortLimit   time.Duration
	Partition                                 time.Duration // one cut; at least 2x the lease
}

// DefaultTiming is short enough for the suite to fit about 15 minutes on
// two cores, with a partition of twice the TTL. The drain timeout covers a
// full bridge (128 writes) at about 100 ms a write: on a loaded node a
// stepping-down leader's drain was seen to need more than 5s for 45 writes.
func DefaultTiming() Timing {
	return Timing{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
		DrainTimeout: 15 * time.Second, WriteInterval: 200 * time.Millisecond, AbortLimit: 500 * time.Millisecond,
		Partition: 8 * time.Second}
}

// Validate rejects timings that cannot show a takeover.
func (t Timing) Validate() error {
	if err := leader.ValidateTiming(t.LeaseDuration, t.RenewDeadline, t.RetryPeriod); err != nil {
		return err
	}
	switch {
	case t.Partition < 2*t.LeaseDuration:
		return fmt.Errorf("--partition %v must be at least twice --lease-duration %v", t.Partition, t.LeaseDuration)
	case t.DrainTimeout <= 0 || t.WriteInterval <= 0 || t.AbortLimit <= 0:
		return fmt.Errorf("--drain-timeout, --write-interval and --abort-limit must be positive")
	}
	return nil
}

// Args are the reconciler flags for this timing.
func (t Timing) Args() []string {
	return []string{"--lease-duration=" + t.LeaseDuration.String(), "--renew-deadline=" + t.RenewDeadline.String(),
		"--retry-period=" + t.RetryPeriod.String(), "--drain-timeout=" + t.DrainTimeout.String(),
		"--write-interval=" + t.WriteInterval.String()}
}

// ReconcilerArgs are every flag the scenario's reconciler runs with: the
// timing's, then the scenario's knobs (its write interval wins, last flag).
func (t Timing) ReconcilerArgs(d Def) []string { return append(t.Args(), d.Reconciler.Args()...) }

// Config is the history's record of how a scenario ran.
func (t Timing) Config(d Def) history.Config {
	if d.Reconciler.WriteInterval > 0 {
		t.WriteInterval = d.Reconciler.WriteInterval
	}
	return history.Config{LeaseDuration: history.Duration(t.LeaseDuration), RenewDeadline: history.Duration(t.RenewDeadline),
		RetryPeriod: history.Duration(t.RetryPeriod), DrainTimeout: history.Duration(t.DrainTimeout),
		WriteInterval: history.Duration(t.WriteInterval), AbortLimit: history.Duration(t.AbortLimit), FencingRequired: true,
		IgnoreDemotion: d.Reconciler.IgnoreDemotion, ReconcilerArgs: t.ReconcilerArgs(d), SinkArgs: d.Sink.Args(),
		WitnessArgs: d.WitnessArgs()}
}

// safety is what every correct run must show.
var safety = []string{check.TermMonotonic, check.TermStep, check.NoStaleCommit, check.EpochHeldByWriter,
	check.RowEpochMonotonic, check.RejectedNotInState, check.FloorMonotonic, check.Idempotency, check.IdempotencyMisuse, check.UnfencedWrites,
	check.WitnessAgrees, check.Linearizable}

func expect(pass []string, extra map[string]history.Expectation) map[string]history.Expectation {
	m := map[string]history.Expectation{}
	for _, c := range pass {
		m[c] = history.MustPass
	}
	for c, o := range extra {
		m[c] = o
	}
	return m
}

// control expects failOn to fail and reports every other check as informative.
func control(failOn ...string) map[string]history.Expectation {
	m := map[string]history.Expectation{}
	for _, c := range check.Names() {
		m[c] = history.Any
	}
	for _, c := range failOn {
		m[c] = history.MustFail
	}
	return m
}

// more holds the scenario lists that other files of this package add with
// register (one file per kind of fault), run after the core list in file
// name order.
var more []func() []Def

// register adds a list of scenarios to All, from an init function.
func register(list func() []Def) { more = append(more, list) }

// All is every scenario, in run order.
func All() []Def {
	all := core()
	for _, list := range more {
		all = append(all, list()...)
	}
	return all
}

// Matching is every scenario whose name sel matches, in run order.
func Matching(sel *regexp.Regexp) []Def {
	var out []Def
	for _, d := range All() {
		if sel.MatchString(d.Name) {
			out = append(out, d)
		}
	}
	return out
}

// core is the partition, shutdown and repeated-takeover scenarios and
// their controls.
func core() []Def {
	return []Def{
		{
			Name:        "partition-heal",
			Description: "the leader is cut off from the apiserver for longer than the TTL, then healed: a new leader, term +1, the old leader steps down and drains, zero stale commits",
			Fault:       fault.Partition,
			Expect: expect(safety, map[string]history.Expectation{check.OldLeaderStepsDown: history.MustPass, check.BridgeDrain: history.MustPass,
				check.BridgeJoin: history.MustPass, check.FailoverLiveness: history.MustPass, check.BridgeCapacity: history.MustPass}),
		},
		{
			Name:        "stale-leader-keeps-writing",
			Description: "the partitioned leader ignores its demotion and keeps writing: the sink rejects every stale write and commits none after the new leader's fence",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{IgnoreDemotion: true},
			WaitRejects: true,
			Expect: expect(safety, map[string]history.Expectation{check.RejectStaleSeen: history.MustPass, check.FailoverLiveness: history.MustPass,
				check.OldLeaderStepsDown: history.Any}),
		},
		{
			Name:        "shutdown-under-load",
			Description: "the leader pod is deleted while writing: its bridge aborts within the limit and nothing is written after the abort; a new leader takes over",
			Fault:       fault.PodDelete,
			// Under load: writes come faster than one sink round trip, so
			// the bridge holds a backlog when the shutdown aborts it.
			Reconciler: Reconciler{WriteInterval: 5 * time.Millisecond},
			Expect: expect(safety, map[string]history.Expectation{check.BridgeAbort: history.MustPass, check.BridgeJoin: history.MustPass,
				check.OldLeaderStepsDown: history.MustPass, check.FailoverLiveness: history.MustPass, check.BridgeCapacity: history.MustPass}),
		},
		{
			Name:        "repeated-takeovers",
			Description: "a seeded schedule of partitions in a row, a leader pod deleted, a rolling restart: the term goes +1 per takeover, never repeats, never goes back",
			Schedule:    Repeated,
			Expect: expect(safety, map[string]history.Expectation{check.OldLeaderStepsDown: history.MustPass,
				check.BridgeJoin: history.MustPass, check.FailoverLiveness: history.MustPass}),
		},
		{
			Name:        "neg-idempotency-misuse",
			Description: "negative control: --shared-keys: the Idempotency-Key is the write's sequence number, which starts again in every term, so a new leader reuses its predecessor's keys for other values; the sink answers 422 and the writes are given up",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{SharedKeys: true},
			Expect:      control(check.IdempotencyMisuse),
		},
		{
			Name:        "neg-fencing-off",
			Description: "negative control: --fencing=off with an unfenced sink: writes commit without an epoch",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{FencingOff: true}, Sink: Sink{Broken: UnfencedSink},
			Expect: control(check.UnfencedWrites),
		},
		{
			Name:        "neg-ignore-demotion-unfenced-sink",
			Description: "negative control: --ignore-demotion with an unfenced sink: the stale leader keeps sending and its writes commit after the new term's fence",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{IgnoreDemotion: true}, Sink: Sink{Broken: UnfencedSink},
			Expect: control(check.NoStaleCommit, check.OldLeaderStepsDown, check.Linearizable),
		},
		{
			Name:        "neg-live-epoch",
			Description: "negative control: --live-epoch --ignore-demotion: the stale leader stamps a term it never held",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{LiveEpoch: true, IgnoreDemotion: true},
			Expect:      control(check.EpochHeldByWriter),
		},
		{
			Name:        "neg-no-drain",
			Description: "negative control: --no-drain: a bridge stopped by its producer drops what it buffered (the partition also cuts the sink, so a backlog builds)",
			Fault:       fault.Partition,
			// A fast producer and an unreachable sink keep a backlog in the
			// bridge, so dropping it shows.
			Reconciler: Reconciler{NoDrain: true, WriteInterval: 5 * time.Millisecond},
			CutSinkToo: true,
			Expect:     control(check.BridgeDrain),
		},
		{
			Name:        "neg-per-key-floor-sink",
			Description: "negative control: --ignore-demotion with a sink that fences each key against its own last epoch: the stale leader commits rows the new leader has not written yet",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{IgnoreDemotion: true}, Sink: Sink{Broken: PerKeyFloorSink},
			Expect: control(check.NoStaleCommit, check.Linearizable),
		},
		{
			Name:        "neg-lying-sink",
			Description: "negative control: a sink whose /v1/history hides a commit its client saw acknowledged: the witness the harness owns shows the lie",
			Fault:       fault.Partition,
			Sink:        Sink{Broken: HideCommitSink},
			Expect:      control(check.WitnessAgrees),
		},
		{
			Name:        "neg-misreporting-sink",
			Description: "negative control: a sink whose /v1/history records as rejected a commit its client was answered OK for: the witness shows the answers differ from the records",
			Fault:       fault.Partition,
			Sink:        Sink{Broken: MisreportSink},
			Expect:      control(check.WitnessAgrees),
		},
		{
			Name:        "neg-term-on-renew",
			Description: "negative control: --term-on-renew: the term moves on renew",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{TermOnRenew: true},
			Expect:      control(check.TermStep),
		},
		{
			Name:        "neg-no-term-bump",
			Description: "negative control: --no-term-bump: a takeover keeps the old term",
			Fault:       fault.Partition,
			Reconciler:  Reconciler{NoTermBump: true},
			Expect:      control(check.TermStep),
		},
	}
}

// NegativeControl reports whether the scenario is a broken variant the
// suite must catch: some check must fail.
func (d Def) NegativeControl() bool {
	for _, o := range d.Expect {
		if o == history.MustFail {
			return true
		}
	}
	return false
}

// ByName finds a scenario.
func ByName(name string) (Def, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return Def{}, false
}
