package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/leader"
	"github.com/fencecheck/fencecheck/witness/record"
)

// sinkCrashMidTakeover partitions the leader for length and, once the
// successor's fence is acknowledged (the witness saw it) while it writes,
// crashes the sink and probes it; then waits for the takeover to settle as
// a partition's does.
func (s *Session) sinkCrashMidTakeover(ctx context.Context, length time.Duration) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader to partition")
	}
	oldPod := leader.PodOf(h.Holder)
	type cut struct {
		w   history.ChaosWindow
		err error
	}
	healed := make(chan cut, 1)
	s.dr.log("%s: partitioning %s (leader) for %v", s.def.Name, oldPod, length)
	go func() {
		w, err := s.dep.Partition(ctx, oldPod, length, false)
		healed <- cut{w, err}
	}()
	err := s.crashAfterFence(ctx, h)
	c := <-healed // the partition heals at its deadline whatever happened here
	s.record(c.w)
	if err = errors.Join(err, c.err); err != nil {
		return err
	}
	return s.afterTakeover(ctx, h, c.w.Recovered)
}

// crashAfterFence waits for the new holder's fence at the witness and the
// old one's drain, then crashes the sink and probes it.
func (s *Session) crashAfterFence(ctx context.Context, old history.LeaseRecord) error {
	oldHolder := old.Holder
	newHolder, err := s.waitHolder(ctx, oldHolder)
	if err != nil {
		return err
	}
	tookOver := time.Now()
	rec, _ := s.holder()
	term := rec.Term
	s.dr.log("%s: takeover %s -> %s (term %d); waiting for its fence at the witness", s.def.Name, oldHolder, newHolder, term)
	var floor uint64
	if err := s.poll(ctx, fmt.Sprintf("the fence of term %d and a write after it acknowledged (witness)", term), func(ctx context.Context) (bool, error) {
		w, err := s.dep.Witness(ctx)
		if err != nil {
			return false, err
		}
		floor, _ = check.AckedFloor(w.Operations, time.Time{})
		return floor >= term && ackedWriteAt(w.Operations, term), nil
	}); err != nil {
		return err
	}
	if err := s.waitDrained(ctx, leader.PodOf(oldHolder), old.Term, tookOver); err != nil {
		return err
	}
	return s.crashSink(ctx, floor)
}

// waitDrained waits until pod, the old leader of term, logged its last
// bridge joined (or stopped), but not past drain_timeout after the
// takeover at tookOver.
// Its drain then never overlaps the crash, so how long the restarted sink
// takes (seconds more on a busy node) cannot push a drain past
// drain_timeout; one that overruns it by itself still does, and
// bridge-join judges it.
func (s *Session) waitDrained(ctx context.Context, pod string, term uint64, tookOver time.Time) error {
	if s.silent(ctx, pod) {
		return s.observeDrainTimeout(ctx, pod, tookOver)
	}
	wctx, cancel := context.WithDeadline(ctx, tookOver.Add(s.dr.Timing.DrainTimeout))
	defer cancel()
	err := s.waitLog(wctx, pod, steppedDownWhat, steppedDown)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		s.dr.log("%s: %s logged no bridge_joined by drain_timeout after the takeover; crashing the sink anyway", s.def.Name, pod)
		return nil
	}
	if err == nil {
		s.dr.log("%s: %s's bridge of term %d is done (%s after the takeover); crashing the sink", s.def.Name, pod, term, time.Since(tookOver).Round(time.Millisecond))
	}
	return err
}

// ackedWriteAt: a write of epoch term was acknowledged (writes flow).
func ackedWriteAt(ops []record.Operation, term uint64) bool {
	for _, o := range ops {
		if o.Method == "PUT" && o.Type == record.OK && o.Epoch == term {
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
func (s *Session) crashSink(ctx context.Context, floor uint64) error {
	if floor == 0 {
		return errors.New("sink crash: no floor acknowledged yet, so no probe below it")
	}
	var st record.GateState
	if err := s.dep.WitnessAdmin(ctx, record.PathGate, record.GateRequest{Closed: true,
		Reason: "the harness is restarting the sink (sink-crash) and probes it first"}, &st); err != nil {
		return fmt.Errorf("close the witness's gate: %w", err)
	}
	defer func() {
		if err := s.dep.WitnessAdmin(context.WithoutCancel(ctx), record.PathGate, record.GateRequest{}, &st); err != nil {
			s.dr.log("%s: opening the witness's gate: %v", s.def.Name, err)
		}
		s.dr.log("%s: gate open; %d client requests refused while the sink restarted", s.def.Name, st.Refused)
	}()
	s.dr.log("%s: SIGKILL of the sink (acknowledged floor %d)", s.def.Name, floor)
	w, err := s.dep.CrashSink(ctx)
	s.record(w)
	if err != nil {
		return fmt.Errorf("sink crash: %w", err)
	}
	s.dr.log("%s: sink back after %v", s.def.Name, w.Recovered.Sub(w.Injected).Round(time.Millisecond))
	probe := record.ProbeRequest{Key: scenario.ProbeKey, Value: fmt.Sprintf("harness probe at epoch %d below floor %d", floor-1, floor),
		Epoch: floor - 1, IdempotencyKey: fmt.Sprintf("fencecheck-probe.%d", w.Injected.UnixNano())}
	// The sink may answer the harness before the witness reaches it
	// through its Service: a probe that got no definite answer (not sent,
	// or no answer) is sent again with the same Idempotency-Key, each one
	// recorded; floor-survives-restart judges those that were answered.
	var op record.Operation
	err = s.poll(ctx, "the probe answered by the restarted sink", func(ctx context.Context) (bool, error) {
		if err := s.dep.WitnessAdmin(ctx, record.PathProbe, &probe, &op); err != nil {
			return false, err
		}
		if why := check.NotTheSinksAnswer(op); why != "" {
			s.dr.log("%s: probe #%d %s; again", s.def.Name, op.ID, why)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	s.dr.log("%s: probe #%d at epoch %d answered %d %s by sink instance %s", s.def.Name, op.ID, op.Epoch, op.Status, op.Result, op.SinkInstance)
	return nil
}
