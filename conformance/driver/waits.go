package driver

import (
	"context"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/eventlog"
)

// waitEvent waits until pod logged an event matching match; every second
// it re-reads the pod's log in case the follow stream stalled.
func (s *Session) waitEvent(ctx context.Context, pod, what string, match func(eventlog.Event) bool) error {
	return s.waitLog(ctx, pod, what, func(evs []eventlog.Event) bool { return slices.ContainsFunc(evs, match) })
}

// waitLog waits until pod's log, read in order, satisfies done.
func (s *Session) waitLog(ctx context.Context, pod, what string, done func([]eventlog.Event) bool) error {
	logs := s.dep.Events()
	last := time.Now()
	return s.Poll(ctx, pod+" logging "+what, func(ctx context.Context) (bool, error) {
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
