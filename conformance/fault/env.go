package fault

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Actions are what a target does to a scenario's deployment for a fault:
// each returns once the change took effect, with the window it recorded
// (Pod, Node, Injected, Recovered; the fault names its Kind). Both
// targets implement them (the driver's Deployment embeds this).
type Actions interface {
	// Pods are the running reconciler pods, sorted.
	Pods(ctx context.Context) ([]string, error)
	// Partition cuts pod off from the apiserver (and from the sink when
	// alsoSink) for length and returns once the cut is healed.
	Partition(ctx context.Context, pod string, length time.Duration, alsoSink bool) (history.ChaosWindow, error)
	// Pause stops every process of pod (the cluster: the cgroup freezer;
	// locally: SIGSTOP) for length and returns once it runs again.
	Pause(ctx context.Context, pod string, length time.Duration) (history.ChaosWindow, error)
	// DeletePod deletes pod (SIGTERM) and returns once it has exited; a
	// replacement starts, as a ReplicaSet's would.
	DeletePod(ctx context.Context, pod string) (history.ChaosWindow, error)
	// RollingRestart replaces every reconciler pod, one at a time, and
	// returns when the new ones are ready and the old ones gone. The
	// window names leader, the pod whose replacement is the takeover.
	RollingRestart(ctx context.Context, leader string) (history.ChaosWindow, error)
	// CrashSink SIGKILLs the sink process, its data kept (the same volume
	// or data dir), and returns once the restarted sink answers; the
	// window's Injected is taken just before the kill.
	CrashSink(ctx context.Context) (history.ChaosWindow, error)
	// Witness reads the history of the witness, the harness's recording
	// proxy between the reconcilers and the sink.
	Witness(ctx context.Context) (*record.History, error)
	// WitnessAdmin POSTs req as JSON to path on the witness's admin
	// listener and decodes the answer into resp. A target whose sink
	// requires a writer token sets it as the Authorization of a
	// *record.ProbeRequest before sending it.
	WitnessAdmin(ctx context.Context, path string, req, resp any) error
}

// Env is a running scenario as a fault sees it: the target's actions,
// the Lease as the harness's own watch records it, the waits the driver
// knows (each bounded by the scenario's wait timeout), and where the
// windows go. The driver's session implements it.
type Env interface {
	// Logf logs a line about the scenario (its name is added).
	Logf(format string, a ...any)
	// Act is the deployment to act on.
	Act() Actions
	// Record keeps a window that took effect (one with an Injected time),
	// even when what followed it failed.
	Record(w history.ChaosWindow)
	// Leader is the Lease's latest record; false (or an empty Holder)
	// when nothing was recorded yet or nobody holds it.
	Leader() (history.LeaseRecord, bool)
	// PodOf is the pod of a Lease holder identity, by the contract's rule
	// against the scenario's pods (leader.HolderPod); a holder that names
	// none of them is an error naming it.
	PodOf(ctx context.Context, holder string) (string, error)
	// Lease is every Lease record so far.
	Lease() []history.LeaseRecord
	// CutSinkToo: the scenario's leader partitions cut the sink too.
	CutSinkToo() bool
	// Seed is the run's seed, for a fault that draws (its replay is the
	// same seed).
	Seed() int64
	// DeleteLease deletes the reconcilers' Lease (the replicas re-create
	// it) and returns once the delete was accepted.
	DeleteLease(ctx context.Context) (history.ChaosWindow, error)
	// ReopenGate lets other scenarios' deploys in for the rest of the
	// step (a step that times no failover); why goes to the log.
	ReopenGate(why string)

	// WaitLease waits until cond holds on the Lease records.
	WaitLease(ctx context.Context, what string, cond func([]history.LeaseRecord) bool) error
	// WaitHolder waits until the Lease has a holder other than not.
	WaitHolder(ctx context.Context, not string) (string, error)
	// WaitSink waits until n attempts in the sink's history match.
	WaitSink(ctx context.Context, what string, n int, match func(contract.Attempt) bool) error
	// WaitCommits waits until the sink committed n writes after since.
	WaitCommits(ctx context.Context, since time.Time, n int) error
	// WaitStopped waits until pod logged that it stopped (at once for a
	// pod that keeps no event log: its deletion returned once it was gone).
	WaitStopped(ctx context.Context, pod string) error
	// WaitDrained waits until pod, the old leader of term, logged its last
	// bridge joined (or stopped), but not past drain_timeout after the
	// takeover at tookOver (then it returns nil and says so).
	WaitDrained(ctx context.Context, pod string, term uint64, tookOver time.Time) error
	// AfterTakeover waits for a holder other than old's that commits after
	// healed, and for the old leader's step-down (or, for a leader that
	// ignores its demotion, for its writes a TTL after the heal).
	AfterTakeover(ctx context.Context, old history.LeaseRecord, healed time.Time) error
	// Poll runs cond until it holds.
	Poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error
}

// leaderPod is the current leader's Lease record and pod, or an error
// that says there is no leader to act on (what: "to partition").
func leaderPod(ctx context.Context, e Env, what string) (history.LeaseRecord, string, error) {
	h, ok := e.Leader()
	if !ok || h.Holder == "" {
		return h, "", errors.New("no leader " + what)
	}
	pod, err := e.PodOf(ctx, h.Holder)
	if err != nil {
		return h, "", fmt.Errorf("%s: %w", what, err)
	}
	return h, pod, nil
}

// stamp names a window that took effect and records it.
func stamp(e Env, k Kind, w history.ChaosWindow) {
	w.Kind = string(k)
	e.Record(w)
}
