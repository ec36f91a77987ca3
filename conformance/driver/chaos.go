package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/chaos/schedule"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/leader"
)

// Chaos runs the scenario's chaos and waits for its takeovers to settle.
func (s *Session) Chaos(ctx context.Context) error {
	switch s.def.Chaos {
	case scenario.PartitionOnce:
		return s.phase(ctx, "partition", func() error { return s.partition(ctx, s.dr.Timing.Partition, schedule.Leader, 0) })
	case scenario.ShutdownLeader:
		return s.phase(ctx, "shutdown-leader", func() error { return s.deleteLeader(ctx) })
	case scenario.Repeated:
		return s.repeated(ctx)
	case scenario.SinkCrash:
		return s.phase(ctx, "partition+sink-crash", func() error { return s.sinkCrashMidTakeover(ctx, s.dr.Timing.Partition) })
	case scenario.LeaseDeleted:
		return s.phase(ctx, "delete-lease", func() error { return s.deleteLease(ctx) })
	case scenario.PlannedHandover:
		return s.phase(ctx, "rolling-restart", func() error { return s.rollingRestart(ctx) })
	case scenario.MixedFaults:
		return s.mixed(ctx, false)
	case scenario.MixedEveryKind:
		return s.mixed(ctx, true)
	case scenario.PauseLeader:
		return s.phase(ctx, "pause", func() error { return s.pauseLeader(ctx, s.dr.Timing.Partition) })
	}
	return fmt.Errorf("unknown chaos %q", s.def.Chaos)
}

// record keeps a chaos window that took effect, even when the wait after
// it failed.
func (s *Session) record(w history.ChaosWindow) {
	if !w.Injected.IsZero() {
		s.Hist.Chaos = append(s.Hist.Chaos, w)
	}
}

// partition cuts the current leader (or a follower) off from the
// apiserver for length, waits for the heal and, for a leader, for the
// takeover to settle.
func (s *Session) partition(ctx context.Context, length time.Duration, role schedule.Role, followerIndex int) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader to partition")
	}
	leaderPod := leader.PodOf(h.Holder)
	target := leaderPod
	if role == schedule.Follower {
		pods, err := s.dep.Pods(ctx)
		if err != nil {
			return err
		}
		var followers []string
		for _, p := range pods {
			if p != leaderPod {
				followers = append(followers, p)
			}
		}
		if len(followers) == 0 {
			return errors.New("no follower to partition")
		}
		target = followers[followerIndex%len(followers)]
		// A follower's cut has no failover to time: nothing in it needs
		// quiet, so other scenarios' deploys may run beside it.
		s.reopenGate("a follower's cut times no failover")
	}
	s.dr.log("%s: partitioning %s (%s) for %v", s.def.Name, target, role, length)
	w, err := s.dep.Partition(ctx, target, length, s.def.CutSinkToo && role == schedule.Leader)
	s.record(w)
	if err != nil || role == schedule.Follower {
		return err
	}
	return s.afterTakeover(ctx, h, w.Recovered)
}

// afterTakeover waits for a new holder that commits, and for the old
// leader's own account of stepping down (or, for a leader that ignores
// its demotion, for its writes a TTL after the heal).
func (s *Session) afterTakeover(ctx context.Context, old history.LeaseRecord, healed time.Time) error {
	oldHolder, oldPod := old.Holder, leader.PodOf(old.Holder)
	newHolder, err := s.waitHolder(ctx, oldHolder)
	if err != nil {
		return err
	}
	tookOver := time.Now() // the watch saw the new holder just now
	s.dr.log("%s: takeover %s -> %s", s.def.Name, oldHolder, newHolder)
	if err := s.waitCommits(ctx, healed, scenario.SettleCommits); err != nil {
		return err
	}
	if s.def.WaitRejects {
		if err := s.waitSink(ctx, "a REJECT_STALE_EPOCH at the sink", 1,
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

// deleteLeader deletes the leader pod (SIGTERM while it writes) and waits
// for its successor.
func (s *Session) deleteLeader(ctx context.Context) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader to delete")
	}
	pod := leader.PodOf(h.Holder)
	s.dr.log("%s: deleting leader pod %s", s.def.Name, pod)
	w, err := s.dep.DeletePod(ctx, pod)
	s.record(w)
	if err != nil {
		return err
	}
	if s.silent(ctx, pod) {
		// No event log to say it stopped: DeletePod returned once it was gone.
	} else if err := s.waitEvent(ctx, pod, "stopped", func(ev eventlog.Event) bool { return ev.Kind == eventlog.KindStopped }); err != nil {
		return err
	}
	return s.afterTakeover(ctx, h, w.Injected)
}

// rollingRestart replaces every reconciler and waits for a committing
// leader among the new pods.
func (s *Session) rollingRestart(ctx context.Context) error {
	h, _ := s.holder()
	s.dr.log("%s: rolling restart", s.def.Name)
	w, err := s.dep.RollingRestart(ctx, leader.PodOf(h.Holder))
	s.record(w)
	if err != nil {
		return err
	}
	if _, err := s.waitHolder(ctx, h.Holder); err != nil {
		return err
	}
	return s.waitCommits(ctx, w.Recovered, scenario.SettleCommits)
}

// repeated runs the seeded schedule, then a leader delete and a rolling
// restart.
func (s *Session) repeated(ctx context.Context) error {
	cfg := schedule.DefaultConfig(uint64(s.dr.Seed), s.dr.Timing.LeaseDuration)
	cfg.Steps = max(s.dr.Takeovers, 1)
	// Every cut at least twice the TTL, so a takeover surely happens
	// before the heal (the successor may wait up to TTL + 2.2x retry).
	cfg.MinMultiple = max(cfg.MinMultiple, 2)
	cfg.MaxMultiple = max(cfg.MaxMultiple, cfg.MinMultiple)
	sch, err := schedule.Generate(cfg)
	if err != nil {
		return err
	}
	if s.Hist.Schedule, err = sch.Marshal(); err != nil {
		return err
	}
	if err := s.runSchedule(ctx, sch); err != nil {
		return err
	}
	if err := s.phase(ctx, "delete-leader", func() error { return s.deleteLeader(ctx) }); err != nil {
		return err
	}
	return s.phase(ctx, "rolling-restart", func() error { return s.rollingRestart(ctx) })
}

// Hold lets d pass: the length of a fault or of a schedule's gap, which is
// what a scenario is made of, never a wait for something to happen.
func Hold(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
