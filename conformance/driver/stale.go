package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/chaos/schedule"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/leader"
)

// DeleteLease deletes the reconcilers' Lease in ns: what both targets do
// for Deployment.DeleteLease (the window's pod is the driver's to fill).
func DeleteLease(ctx context.Context, kube kubernetes.Interface, ns string) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Kind: history.ChaosLeaseDelete, Injected: time.Now()}
	err := kube.CoordinationV1().Leases(ns).Delete(ctx, leader.LeaseName, metav1.DeleteOptions{})
	w.Recovered = time.Now()
	if err != nil {
		return w, fmt.Errorf("delete Lease %s/%s: %w", ns, leader.LeaseName, err)
	}
	return w, nil
}

// deleteLease deletes the Lease under its holder and waits for the
// replicas to re-create it. If another replica re-created it, that is a
// takeover. If the holder did, it must move its writes to the re-created
// Lease's term: the wait is for commits of that term, not for a term change
// (a holder that restarts the term at 1 may keep the term it had).
func (s *Session) deleteLease(ctx context.Context) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader: no Lease to delete")
	}
	oldPod := leader.PodOf(h.Holder)
	before := len(s.lease.Snapshot().Records)
	s.dr.log("%s: deleting the Lease (holder %s, term %d)", s.def.Name, h.Holder, h.Term)
	w, err := s.dep.DeleteLease(ctx)
	w.Pod = oldPod
	s.record(w)
	if err != nil {
		return err
	}
	rec, err := s.waitRecreated(ctx, before, h.UID)
	if err != nil {
		return err
	}
	s.dr.log("%s: Lease re-created by %s at term %d", s.def.Name, rec.Holder, rec.Term)
	if rec.Holder != h.Holder {
		return s.afterTakeover(ctx, h, w.Injected)
	}
	return s.waitSink(ctx, fmt.Sprintf("%d commits of the re-created Lease's term %d", scenario.SettleCommits, rec.Term), scenario.SettleCommits,
		func(a contract.Attempt) bool {
			return a.Committed() && a.Epoch == rec.Term && a.Arrived.After(w.Injected)
		})
}

// waitRecreated waits for a held Lease of another incarnation than uid,
// recorded at index from or later (after the DELETED event, or after a
// relist that shows a new UID).
func (s *Session) waitRecreated(ctx context.Context, from int, uid string) (history.LeaseRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, s.dr.WaitTimeout)
	defer cancel()
	var out history.LeaseRecord
	err := s.lease.WaitFor(ctx, "the Lease re-created with a holder", func(rs []history.LeaseRecord) bool {
		deleted := false
		for i := from; i < len(rs); i++ {
			r := rs[i]
			if r.Event == "DELETED" {
				deleted = true
				continue
			}
			if (deleted || r.UID != uid) && r.Holder != "" {
				out = r
				return true
			}
		}
		return false
	})
	return out, err
}

// mixed runs the seeded schedule of mixed fault kinds (scenario.MixedKinds)
// and records it in the history, so the report shows what to replay; the
// checks of the kinds it drew must pass (scenario.MixedExpect).
func (s *Session) mixed(ctx context.Context, everyKind bool) error {
	sch, err := schedule.Generate(MixedConfig(s.dr.Seed, s.dr.Timing, everyKind))
	if err != nil {
		return err
	}
	if s.Hist.Schedule, err = sch.Marshal(); err != nil {
		return err
	}
	s.Hist.Expect = scenario.MixedExpect(s.Hist.Expect, sch)
	return s.runSchedule(ctx, sch)
}

// MixedConfig is the mixed schedule's generator config for a seed: every
// cut and pause at least twice the TTL, so the leader surely goes stale.
// With everyKind, one step per kind of scenario.MixedKinds, and shorter
// gaps so the run stays within about three minutes.
func MixedConfig(seed int64, t scenario.Timing, everyKind bool) schedule.Config {
	cfg := schedule.DefaultConfig(uint64(seed), t.LeaseDuration)
	cfg.Steps = scenario.MixedSteps
	cfg.MinMultiple = max(cfg.MinMultiple, 2) // a cut of the leader surely ends in a takeover
	cfg.MaxMultiple = max(cfg.MaxMultiple, cfg.MinMultiple)
	cfg.Kinds = scenario.MixedKinds
	if everyKind {
		cfg.EveryKind, cfg.Steps = true, len(cfg.Kinds)
		cfg.MaxMultiple = cfg.MinMultiple + 0.5
		cfg.MinGap, cfg.MaxGap = t.LeaseDuration/2, t.LeaseDuration
	}
	return cfg
}

// runSchedule runs every step of a schedule, each kind by its runner,
// after the step's gap.
func (s *Session) runSchedule(ctx context.Context, sch schedule.Schedule) error {
	runners := map[schedule.Kind]func(context.Context, schedule.Step) error{
		schedule.Partition: func(ctx context.Context, st schedule.Step) error {
			return s.partition(ctx, st.Length, st.Role, st.FollowerIndex)
		},
		schedule.PodDelete:      func(ctx context.Context, _ schedule.Step) error { return s.deleteLeader(ctx) },
		schedule.LeaseDelete:    func(ctx context.Context, _ schedule.Step) error { return s.deleteLease(ctx) },
		schedule.RollingRestart: func(ctx context.Context, _ schedule.Step) error { return s.rollingRestart(ctx) },
		schedule.Pause:          func(ctx context.Context, st schedule.Step) error { return s.pauseLeader(ctx, st.Length) },
		schedule.HeldWrites:     func(ctx context.Context, st schedule.Step) error { return s.heldWrites(ctx, st.Length) },
		schedule.LostAnswers:    func(ctx context.Context, _ schedule.Step) error { return s.lostAnswers(ctx) },
		schedule.SinkCrash:      func(ctx context.Context, st schedule.Step) error { return s.sinkCrashMidTakeover(ctx, st.Length) },
	}
	for _, st := range sch.Steps {
		if _, ok := runners[st.KindOf()]; !ok {
			return fmt.Errorf("schedule step %d: the driver has no runner for kind %q", st.Index, st.KindOf())
		}
	}
	for _, st := range sch.Steps {
		if st.Gap > 0 {
			// The schedule's quiet time between bursts: chaos timing, not
			// synchronisation (a phase of its own for the waits model).
			if err := s.phase(ctx, fmt.Sprintf("%s%d", scenario.PhaseGap, st.Index), func() error { return Hold(ctx, st.Gap) }); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("%s-%d", st.KindOf(), st.Index)
		if st.KindOf() == schedule.Partition {
			name += "-" + string(st.Role)
		}
		if err := s.phase(ctx, name, func() error { return runners[st.KindOf()](ctx, st) }); err != nil {
			return err
		}
	}
	return nil
}
