// Package fault is every kind of fault a scenario injects, each a value
// in one registry (All), in the manner of etcd's tests/robustness
// failpoints: a Fault owns its name, how it is injected through the
// target (Inject, acting through Env), how it meets the quiet gate, what
// it adds to the waits model, how the timeline draws it, the checks it
// brings, whether it must end in a takeover, and what a target must be
// able to do to run it. The driver runs every fault step, of a scenario
// with one fault or of a seeded schedule, through Fault.Inject; nothing
// else switches on a fault's name.
//
// Adding a fault kind is one file in this package (its Kind constant and
// its Fault value) and one line in All; TestEveryFaultIsComplete checks
// that the value has every part.
//
// The package also draws the seeded schedules of several faults
// (schedule.go). It does no I/O of its own: an Inject acts only through
// the Env the driver hands it, and the package imports no HTTP or
// Kubernetes client.
package fault

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// Kind names a kind of fault. It is the one name of the fault everywhere:
// a scenario's fault, a schedule step's kind, the phase that runs it and
// the chaos window it records (history.ChaosWindow.Kind, the same string
// in history.json).
type Kind string

// Fault is one kind of fault and everything the harness knows about it.
type Fault struct {
	Kind Kind
	// Doc says in a line what the fault does.
	Doc string
	// Inject runs one step of the fault through e: it acts on the target,
	// records the chaos window(s) it took effect in (Env.Record) and waits
	// until what it set off has settled (a takeover that commits, say).
	// st is the step: its Length for a fault that Lasts, its Role and
	// FollowerIndex for one with Roles.
	Inject func(ctx context.Context, e Env, st Step) error
	// Gate is how a step of the fault meets the quiet gate of scenarios
	// run at once.
	Gate Gate
	// Lasts: a step has a Length, drawn by a schedule as a multiple of the
	// TTL (a cut or a pause); a one-fault scenario's is the run's
	// partition length.
	Lasts bool
	// Roles: a schedule draws whether a step hits the leader or a follower.
	Roles bool
	// Hits is what the fault's windows act on, for failover-liveness.
	Hits Hits
	// Silences is what the fault does to the writes of the pods it hits,
	// for idempotency-misuse: whether a writer could retry during it.
	Silences Silence
	// Takeover: when it hits the leader, a takeover must follow
	// (failover-liveness calls one that did not a violation).
	Takeover bool
	// Waits is what one window of the fault adds to the waits a scenario
	// cannot avoid (scenario.MeasureWaits), its settle commits included.
	Waits func(w history.ChaosWindow, c history.Config) time.Duration
	// Style is how the report's timeline draws its windows.
	Style Style
	// Checks are the checks the fault brings (conformance/check names):
	// they must pass in a mixed run that drew it. Empty, not nil, when the
	// safety set and the takeover checks judge it all.
	Checks []string
	// LosesSinkHistory: the sink's own history of the attempts before the
	// fault is gone after it (the killed sink kept it in memory), so the
	// checks that read it expect nothing of a run that had it.
	LosesSinkHistory bool
	// WitnessRuntime: the fault arms the witness's nemesis while the
	// scenario runs, so the witness must run with --nemesis-runtime.
	WitnessRuntime bool
	// Needs is what a target must be able to do to run the fault (none:
	// every target can).
	Needs []Capability
	// Mix is the fault's weight in the mixed schedules (0: never drawn).
	// Changing a weight, or adding a drawn fault, changes the schedule
	// every seed draws.
	Mix int
}

// Gate is how a phase of a scenario meets the quiet gate (driver.Quiet)
// when scenarios run at once.
type Gate int

const (
	// GateNone: a wait (steady, a schedule's gap, the step-down window).
	GateNone Gate = iota
	// GateHeavy: a deploy, which starts pods: it waits for the open fault
	// steps, and fault steps wait for it.
	GateHeavy
	// GateFault: a fault step: it waits for quiet and holds it from before
	// its injection until its failover is over (a new acquisition, then a
	// commit in its term), or to its end when it has none.
	GateFault
)

// Hits is what a fault's window acts on.
type Hits int

const (
	// HitsPod: the window's pod (Pod): a failover it causes is the one of
	// the pod that led.
	HitsPod Hits = iota
	// HitsEveryPod: every reconciler pod (a rolling restart replaces each).
	HitsEveryPod
	// HitsSink: the sink or its path, never a leader: no failover is its.
	HitsSink
)

// Silence is what a fault does to a hit pod's retries.
type Silence int

const (
	// SilenceNone: the pod keeps sending as before.
	SilenceNone Silence = iota
	// SilenceEnds: the pod's process is stopped: a write it had not got
	// a definite answer for ends there, unretried.
	SilenceEnds
	// SilenceHides: while the window lasts the pod cannot act (frozen) or
	// its retries cannot reach the witness (cut off): the wait for a retry
	// starts again when it ends.
	SilenceHides
)

// Capability is something a target (or its chaos executor) can do that
// not every one can.
type Capability string

// Style is how the timeline draws a fault's windows.
type Style struct {
	Fill, Opacity, Color string // lane shading, label colour
	Label, Legend        string
	// AllLanes: not one pod's: a line across every lane.
	AllLanes bool
	// Band: a fault on the pod's traffic (the witness's): a band at the
	// lane's top, so a cut under it shows.
	Band bool
}

// SettleCommits is how many commits of a leader the driver waits for to
// call it live, after the deploy and after each takeover.
const SettleCommits = 5

// Of finds a fault by kind.
func Of(k Kind) (Fault, bool) {
	for _, f := range All {
		if f.Kind == k {
			return f, true
		}
	}
	return Fault{}, false
}

// Kinds is every registered kind, in registry order.
func Kinds() []Kind {
	out := make([]Kind, len(All))
	for i, f := range All {
		out[i] = f.Kind
	}
	return out
}

// Mixed are the kinds the mixed schedules draw, by weight, in registry
// order.
func Mixed() []Weight {
	var out []Weight
	for _, f := range All {
		if f.Mix > 0 {
			out = append(out, Weight{Kind: f.Kind, Weight: f.Mix})
		}
	}
	return out
}

// The waits a fault's window adds (Fault.Waits), each with the settle
// commits of the leader after it.

// settle is the time SettleCommits writes take.
func settle(c history.Config) time.Duration {
	return time.Duration(SettleCommits) * c.WriteInterval.D()
}

// WaitWindow: the window's own length (a cut, a pause, a crash), then the
// settle commits.
func WaitWindow(w history.ChaosWindow, c history.Config) time.Duration {
	return w.Recovered.Sub(w.Injected) + settle(c)
}

// WaitLease: one lease TTL (the successor waits it out after a pod
// deletion or restart), then the settle commits.
func WaitLease(_ history.ChaosWindow, c history.Config) time.Duration {
	return c.LeaseDuration.D() + settle(c)
}

// WaitNone: nothing (a fault on the sink's path whose takeover, if any, is
// another window's).
func WaitNone(history.ChaosWindow, history.Config) time.Duration { return 0 }
