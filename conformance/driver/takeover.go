package driver

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/wait"
)

// AfterTakeover waits for a new holder that commits, and for the old
// leader's own account of stepping down (or, for a leader that ignores
// its demotion, for its writes a TTL after the heal).
func (s *Session) AfterTakeover(ctx context.Context, old history.LeaseRecord, healed time.Time) error {
	oldHolder := old.Holder
	oldPod, err := s.PodOf(ctx, oldHolder)
	if err != nil {
		return err
	}
	newHolder, err := s.WaitHolder(ctx, oldHolder)
	if err != nil {
		return err
	}
	tookOver := time.Now() // the watch saw the new holder just now
	s.Logf("takeover %s -> %s", oldHolder, newHolder)
	if err := s.WaitCommits(ctx, healed, fault.SettleCommits); err != nil {
		return err
	}
	if s.def.WaitRejects {
		if err := s.WaitSink(ctx, "a REJECT_STALE_EPOCH at the sink", 1,
			func(a contract.Attempt) bool { return a.Result == contract.ResultRejectStale }); err != nil {
			return err
		}
	}
	if s.def.Reconciler.IgnoreDemotion {
		// The stale producer keeps writing: wait until it wrote one TTL
		// after the heal, when its elector has surely read the Lease again
		// (what a --live-epoch producer would stamp), and past drain_timeout
		// after the takeover, when a leader that steps down has stopped.
		after := healed.Add(s.dr.Timing.LeaseDuration)
		if t := tookOver.Add(s.dr.Timing.DrainTimeout); t.After(after) {
			after = t
		}
		return s.waitEvent(ctx, oldPod, "writes past "+after.Format("15:04:05.000"), func(ev eventlog.Event) bool {
			return ev.Kind == eventlog.KindWrite && ev.Time.After(after) && ev.Status != 0
		})
	}
	if s.silent(ctx, oldPod) {
		return s.observeDrainTimeout(ctx, oldPod, tookOver)
	}
	return s.waitLog(ctx, oldPod, steppedDownWhat, steppedDown)
}

const steppedDownWhat = "bridge_joined for its last bridge_spawned, or stopped"

// steppedDown: the log's last bridge joined, or the process stopped. A
// pod that led before in the same process has an earlier bridge's join in
// its log; only the join after its last spawn accounts for this term.
// Spawns and joins are paired by order, not by epoch: a controller's
// bridge epoch need not be the Lease's term (--term-on-renew moves the
// term under a running bridge).
func steppedDown(evs []eventlog.Event) bool {
	joined := false
	for _, ev := range evs {
		switch ev.Kind {
		case eventlog.KindStopped:
			return true
		case eventlog.KindBridgeSpawned:
			joined = false
		case eventlog.KindBridgeJoined:
			joined = true
		}
	}
	return joined
}

// WaitDrained waits until pod, the old leader of term, logged its last
// bridge joined (or stopped), but not past drain_timeout after the
// takeover at tookOver. A sink crash after it then never overlaps its
// drain, so how long the restarted sink takes (seconds more on a busy
// node) cannot push a drain past drain_timeout; one that overruns it by
// itself still does, and bridge-join judges it.
func (s *Session) WaitDrained(ctx context.Context, pod string, term uint64, tookOver time.Time) error {
	if s.silent(ctx, pod) {
		return s.observeDrainTimeout(ctx, pod, tookOver)
	}
	wctx, cancel := context.WithDeadline(ctx, tookOver.Add(s.dr.Timing.DrainTimeout))
	defer cancel()
	err := s.waitLog(wctx, pod, steppedDownWhat, steppedDown)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		s.Logf("%s logged no bridge_joined by drain_timeout after the takeover; crashing the sink anyway", pod)
		return nil
	}
	if err == nil {
		s.Logf("%s's bridge of term %d is done (%s after the takeover); crashing the sink", pod, term, time.Since(tookOver).Round(time.Millisecond))
	}
	return err
}

// A controller under test may keep no event log (FCEVENT lines are a MAY
// of docs/controller-contract.md): the waits on its account of stepping
// down then become the contract's own bound, evidence from the witness.

// silent reports whether pod never logged an event, after one fresh read
// of its log (a follow stream may lag).
func (s *Session) silent(ctx context.Context, pod string) bool {
	logs := s.dep.Events()
	if len(logs.Snapshot()[pod]) > 0 {
		return false
	}
	_ = logs.Refresh(ctx, pod) // a pod already gone has no log to read
	return len(logs.Snapshot()[pod]) == 0
}

// observeDrainTimeout lets drain_timeout pass after the takeover at tookOver:
// the time the contract gives an old leader to stop writing, so that what
// it sent in it (and after it, to the end of the recording) is on the
// witness's record for old-leader-steps-down. It is the length of the
// observation, not a wait for something to happen.
func (s *Session) observeDrainTimeout(ctx context.Context, pod string, tookOver time.Time) error {
	d := time.Until(tookOver.Add(s.dr.Timing.DrainTimeout))
	s.Logf("%s keeps no event log: observing drain_timeout (%v) after the takeover", pod, d.Round(time.Millisecond))
	if d <= 0 {
		return nil
	}
	return wait.Hold(ctx, d)
}
