package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
)

// pollEvery is how often a condition on the sink or the logs is read.
const pollEvery = 250 * time.Millisecond

// holder is the latest recorded Lease holder.
func (s *Session) holder() (history.LeaseRecord, bool) {
	rs := s.lease.Snapshot().Records
	if len(rs) == 0 {
		return history.LeaseRecord{}, false
	}
	return rs[len(rs)-1], true
}

// waitHolder waits until the Lease has a holder other than not.
func (s *Session) waitHolder(ctx context.Context, not string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.dr.WaitTimeout)
	defer cancel()
	var h string
	err := s.lease.WaitFor(ctx, "a Lease holder other than "+not, func(rs []history.LeaseRecord) bool {
		if len(rs) == 0 {
			return false
		}
		h = rs[len(rs)-1].Holder
		return h != "" && h != not
	})
	return h, err
}

// poll runs cond until it holds or the session's wait timeout ends.
func (s *Session) poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	return Poll(ctx, s.dr.WaitTimeout, what, cond)
}

// GiveUp wraps an error that makes Poll give up at once (the process it
// waits for exited, say): waiting longer cannot help.
func GiveUp(err error) error { return giveUpError{err} }

type giveUpError struct{ error }

func (e giveUpError) Unwrap() error { return e.error }

// Poll runs cond every pollEvery until it holds or timeout ends; the
// error says what was awaited and the last error cond returned.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		var g giveUpError
		if errors.As(err, &g) {
			return fmt.Errorf("waiting for %s: %w", what, g.error)
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// waitSink waits until the sink's history has an attempt matching match.
func (s *Session) waitSink(ctx context.Context, what string, n int, match func(contract.Attempt) bool) error {
	return s.poll(ctx, what, func(ctx context.Context) (bool, error) {
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

// waitCommits waits until the sink committed n writes after since.
func (s *Session) waitCommits(ctx context.Context, since time.Time, n int) error {
	return s.waitSink(ctx, fmt.Sprintf("%d commits after %s", n, since.Format("15:04:05.000")), n,
		func(a contract.Attempt) bool { return a.Committed() && a.Arrived.After(since) })
}

// waitEvent waits until pod logged an event matching match; every second
// it re-reads the pod's log in case the follow stream stalled.
func (s *Session) waitEvent(ctx context.Context, pod, what string, match func(eventlog.Event) bool) error {
	return s.waitLog(ctx, pod, what, func(evs []eventlog.Event) bool { return slices.ContainsFunc(evs, match) })
}

// waitLog waits until pod's log, read in order, satisfies done.
func (s *Session) waitLog(ctx context.Context, pod, what string, done func([]eventlog.Event) bool) error {
	logs := s.dep.Events()
	last := time.Now()
	return s.poll(ctx, pod+" logging "+what, func(ctx context.Context) (bool, error) {
		if done(logs.Snapshot()[pod]) {
			return true, nil
		}
		if time.Since(last) > time.Second {
			last = time.Now()
			if err := logs.Refresh(ctx, pod); err != nil {
				return false, err
			}
		}
		return false, nil
	})
}
