package driver

import (
	"context"
	"errors"
	"time"

	"github.com/fencecheck/fencecheck/leader"
)

// pauseLeader freezes the current leader for length (longer than the
// TTL: it wakes up believing it still leads) and waits for the takeover
// to settle.
func (s *Session) pauseLeader(ctx context.Context, length time.Duration) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader to pause")
	}
	pod := leader.PodOf(h.Holder)
	s.dr.log("%s: pausing %s for %v", s.def.Name, pod, length)
	w, err := s.dep.Pause(ctx, pod, length)
	s.record(w)
	if err != nil {
		return err
	}
	return s.afterTakeover(ctx, h, w.Recovered)
}
