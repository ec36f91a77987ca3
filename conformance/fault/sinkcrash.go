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

// SinkCrash cuts the leader off from the apiserver for the step's length
// and, once its successor has fenced the sink and writes, SIGKILLs the
// sink (its data kept) and restarts it; the witness refuses the clients'
// requests until the harness's probe below the acknowledged floor has
// been answered.
const SinkCrash Kind = "sink-crash"

// ProbeKey is the record the harness's probe writes: no plan writes it, so
// a probe that commits never overwrites a client's write.
const ProbeKey = "fencecheck-probe"

var sinkCrash = Fault{
	Kind:             SinkCrash,
	Doc:              "cut the leader off; after its successor's fence, SIGKILL the sink and restart it on its data, then probe below the acknowledged floor",
	Inject:           injectSinkCrash,
	Gate:             GateFault,
	Lasts:            true,
	Hits:             HitsSink, // the sink's fault: its takeover is its partition's window
	Takeover:         false,
	Waits:            WaitWindow,
	Style:            Style{Fill: "#424242", Opacity: "0.35", Color: "#000000", Label: "sink crash", Legend: "sink crash (SIGKILL)"},
	Checks:           []string{"floor-survives-restart", "acked-writes-durable"},
	LosesSinkHistory: true,
	Mix:              1,
}

// injectSinkCrash partitions the leader for the step's length and, once
// the successor's fence is acknowledged (the witness saw it) while it
// writes, crashes the sink and probes it; then waits for the takeover to
// settle as a partition's does.
func injectSinkCrash(ctx context.Context, e Env, st Step) error {
	h, oldPod, err := leaderPod(ctx, e, "to partition")
	if err != nil {
		return err
	}
	type cut struct {
		w   history.ChaosWindow
		err error
	}
	healed := make(chan cut, 1)
	e.Logf("partitioning %s (leader) for %v", oldPod, st.Length)
	go func() {
		w, err := e.Act().Partition(ctx, oldPod, st.Length, false)
		healed <- cut{w, err}
	}()
	err = crashAfterFence(ctx, e, h)
	c := <-healed // the partition heals at its deadline whatever happened here
	stamp(e, Partition, c.w)
	if err = errors.Join(err, c.err); err != nil {
		return err
	}
	return e.AfterTakeover(ctx, h, c.w.Recovered)
}

// crashAfterFence waits for the new holder's fence at the witness and the
// old one's drain, then crashes the sink and probes it.
func crashAfterFence(ctx context.Context, e Env, old history.LeaseRecord) error {
	newHolder, err := e.WaitHolder(ctx, old.Holder)
	if err != nil {
		return err
	}
	tookOver := time.Now()
	rec, _ := e.Leader()
	term := rec.Term
	e.Logf("takeover %s -> %s (term %d); waiting for its fence at the witness", old.Holder, newHolder, term)
	var floor uint64
	if err := e.Poll(ctx, fmt.Sprintf("the fence of term %d and a write after it acknowledged (witness)", term), func(ctx context.Context) (bool, error) {
		w, err := e.Act().Witness(ctx)
		if err != nil {
			return false, err
		}
		floor, _ = record.AckedFloor(w.Operations, time.Time{})
		return floor >= term && ackedWriteAt(w.Operations, term), nil
	}); err != nil {
		return err
	}
	oldPod, err := e.PodOf(ctx, old.Holder)
	if err != nil {
		return err
	}
	if err := e.WaitDrained(ctx, oldPod, old.Term, tookOver); err != nil {
		return err
	}
	return crashSink(ctx, e, floor)
}

// ackedWriteAt: a write of epoch term was acknowledged (writes flow).
func ackedWriteAt(ops []record.Operation, term uint64) bool {
	for _, o := range ops {
		if o.Method == contract.MethodPut && o.Type == record.OK && o.Epoch == term {
			return true
		}
	}
	return false
}

// crashSink closes the witness's gate, SIGKILLs the sink, and once it
// answers again sends the probe below floor through the witness, then
// opens the gate. The gate keeps the clients' writes of the current term
// from reaching the restarted sink first: a sink that forgot its floor
// would re-learn it from them and the probe would prove nothing.
func crashSink(ctx context.Context, e Env, floor uint64) error {
	if floor == 0 {
		return errors.New("sink crash: no floor acknowledged yet, so no probe below it")
	}
	var gs record.GateState
	if err := e.Act().WitnessAdmin(ctx, record.PathGate, record.GateRequest{Closed: true,
		Reason: "the harness is restarting the sink (sink-crash) and probes it first"}, &gs); err != nil {
		return fmt.Errorf("close the witness's gate: %w", err)
	}
	defer func() {
		if err := e.Act().WitnessAdmin(context.WithoutCancel(ctx), record.PathGate, record.GateRequest{}, &gs); err != nil {
			e.Logf("opening the witness's gate: %v", err)
		}
		e.Logf("gate open; %d client requests refused while the sink restarted", gs.Refused)
	}()
	e.Logf("SIGKILL of the sink (acknowledged floor %d)", floor)
	w, err := e.Act().CrashSink(ctx)
	stamp(e, SinkCrash, w)
	if err != nil {
		return fmt.Errorf("sink crash: %w", err)
	}
	e.Logf("sink back after %v", w.Recovered.Sub(w.Injected).Round(time.Millisecond))
	probe := record.ProbeRequest{Key: ProbeKey, Value: fmt.Sprintf("harness probe at epoch %d below floor %d", floor-1, floor),
		Epoch: floor - 1, IdempotencyKey: fmt.Sprintf("fencecheck-probe.%d", w.Injected.UnixNano())}
	// The sink may answer the harness before the witness reaches it
	// through its Service: a probe that got no definite answer (not sent,
	// or no answer) is sent again with the same Idempotency-Key, each one
	// recorded; floor-survives-restart judges those that were answered.
	var op record.Operation
	err = e.Poll(ctx, "the probe answered by the restarted sink", func(ctx context.Context) (bool, error) {
		if err := e.Act().WitnessAdmin(ctx, record.PathProbe, &probe, &op); err != nil {
			return false, err
		}
		if why := record.NotTheSinksAnswer(op); why != "" {
			e.Logf("probe #%d %s; again", op.ID, why)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	e.Logf("probe #%d at epoch %d answered %d %s by sink instance %s", op.ID, op.Epoch, op.Status, op.Result, op.SinkInstance)
	return nil
}
