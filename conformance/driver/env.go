package driver

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/leader"
)

// The session is the fault.Env its faults act through.
var _ fault.Env = (*Session)(nil)

// Logf logs a line about the scenario.
func (s *Session) Logf(format string, a ...any) {
	s.dr.log("%s: %s", s.def.Name, fmt.Sprintf(format, a...))
}

// Act is the scenario's deployment.
func (s *Session) Act() fault.Actions { return s.dep }

// Record keeps a chaos window that took effect, even when the wait after
// it failed.
func (s *Session) Record(w history.ChaosWindow) {
	if !w.Injected.IsZero() {
		s.Hist.Chaos = append(s.Hist.Chaos, w)
	}
}

// Leader is the latest recorded Lease record.
func (s *Session) Leader() (history.LeaseRecord, bool) {
	rs := s.lease.Snapshot().Records
	if len(rs) == 0 {
		return history.LeaseRecord{}, false
	}
	return rs[len(rs)-1], true
}

// PodOf is the pod of a Lease holder identity: the one place the driver
// maps a holder to a pod, by the contract's rule (leader.HolderPod)
// against every reconciler pod the scenario has run (the running ones,
// and those seen before, since a holder may outlive its pod).
func (s *Session) PodOf(ctx context.Context, holder string) (string, error) {
	pods, err := s.dep.Pods(ctx)
	if err != nil {
		return "", fmt.Errorf("the pod of holder %q: list the reconciler pods: %w", holder, err)
	}
	s.podsMu.Lock()
	defer s.podsMu.Unlock()
	if s.podsSeen == nil {
		s.podsSeen = map[string]string{}
	}
	for _, p := range pods {
		s.podsSeen[p] = p
	}
	for p := range s.dep.Events().Snapshot() {
		s.podsSeen[p] = p
	}
	return leader.HolderPod(holder, s.podsSeen)
}

// Lease is every Lease record so far.
func (s *Session) Lease() []history.LeaseRecord { return s.lease.Snapshot().Records }

// CutSinkToo: the scenario's leader partitions cut the sink too.
func (s *Session) CutSinkToo() bool { return s.def.CutSinkToo }

// Seed is the run's seed.
func (s *Session) Seed() int64 { return s.dr.Seed }

// DeleteLease deletes the reconcilers' Lease through the target's
// apiserver (the same on every target; the window's pod is the fault's to
// fill).
func (s *Session) DeleteLease(ctx context.Context) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Injected: time.Now()}
	err := s.dr.Target.Kube().CoordinationV1().Leases(s.NS).Delete(ctx, leader.LeaseName, metav1.DeleteOptions{})
	w.Recovered = time.Now()
	if err != nil {
		return w, fmt.Errorf("delete Lease %s/%s: %w", s.NS, leader.LeaseName, err)
	}
	return w, nil
}

// ReopenGate lets heavy phases in for the rest of the fault step under
// way, if any; why goes to the log.
func (s *Session) ReopenGate(why string) {
	if s.reopen != nil {
		s.reopen()
		s.Logf("quiet gate reopened: %s", why)
	}
}

// WaitLease waits until cond holds on the Lease records.
func (s *Session) WaitLease(ctx context.Context, what string, cond func([]history.LeaseRecord) bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.dr.WaitTimeout)
	defer cancel()
	return s.lease.WaitFor(ctx, what, cond)
}

// WaitHolder waits until the Lease has a holder other than not.
func (s *Session) WaitHolder(ctx context.Context, not string) (string, error) {
	var h string
	err := s.WaitLease(ctx, "a Lease holder other than "+not, func(rs []history.LeaseRecord) bool {
		if len(rs) == 0 {
			return false
		}
		h = rs[len(rs)-1].Holder
		return h != "" && h != not
	})
	return h, err
}

// Poll runs cond until it holds or the session's wait timeout ends.
func (s *Session) Poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	return wait.Poll(ctx, s.dr.WaitTimeout, what, cond)
}

// WaitSink waits until n attempts in the sink's history match.
func (s *Session) WaitSink(ctx context.Context, what string, n int, match func(contract.Attempt) bool) error {
	return s.Poll(ctx, what, func(ctx context.Context) (bool, error) {
		as, err := s.dep.Sink().History(ctx)
		if err != nil && !isDropped(err) {
			return false, err
		}
		c := 0
		for _, a := range as {
			if match(a) {
				c++
			}
		}
		return c >= n, nil
	})
}

// WaitCommits waits until the sink committed n writes after since.
func (s *Session) WaitCommits(ctx context.Context, since time.Time, n int) error {
	return s.WaitSink(ctx, fmt.Sprintf("%d commits after %s", n, since.Format("15:04:05.000")), n,
		func(a contract.Attempt) bool { return a.Committed() && a.Arrived.After(since) })
}

// WaitStopped waits until pod logged its stopped event; a pod that keeps
// no event log has nothing to say it stopped (its deletion returned once
// it was gone).
func (s *Session) WaitStopped(ctx context.Context, pod string) error {
	if s.silent(ctx, pod) {
		return nil
	}
	return s.waitEvent(ctx, pod, "stopped", func(ev eventlog.Event) bool { return ev.Kind == eventlog.KindStopped })
}
