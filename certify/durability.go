package certify

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// durableSetup is the state written before the one restart the durability
// checks share: a record with an idempotency key (epoch e), a fence to e+3
// and a record at e+4, so the floor is e+4 before the restart.
type durableSetup struct {
	done    bool
	err     error
	ex      []Exchange
	e       uint64
	k1, k2  string
	v1, v2  string
	i1      string
	elapsed time.Duration
}

// durable runs the setup and the restart once per run.
func (s *session) durable() *durableSetup {
	if d := s.shared.durable; d != nil {
		return d
	}
	d := &durableSetup{done: true}
	s.shared.durable = d
	saved, savedName := s.ex, s.name
	s.ex, s.name = nil, "durability"
	defer func() { d.ex = s.ex; s.ex, s.name = saved, savedName }()

	d.e, d.err = s.base()
	if d.err != nil {
		return d
	}
	d.k1, d.k2, d.i1 = s.key(), s.key(), s.idem()
	d.v1, d.v2 = s.value(), s.value()
	if d.err = all(
		func() error { return s.putOK(d.k1, d.v1, d.e, d.i1) },
		func() error { return s.fenceOK(d.e + 3) },
		func() error { return s.putOK(d.k2, d.v2, d.e+4, "") },
	); d.err != nil {
		d.err = fmt.Errorf("setup before the restart failed: %w", d.err)
		return d
	}
	start := time.Now()
	d.err = s.restartAndWait()
	d.elapsed = time.Since(start)
	return d
}

// restartAndWait runs the restart and polls GET /v1/fence until the sink
// answers 200 again or the deadline passes.
func (s *session) restartAndWait() error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RestartTimeout)
	defer cancel()
	fmt.Fprintf(s.cfg.Progress, "...  restarting the sink (deadline %s)\n", s.cfg.RestartTimeout)
	if err := s.cfg.Restart(ctx); err != nil {
		return fmt.Errorf("restart command failed: %w", err)
	}
	var last string
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		_, rep, err := s.cl.Floor(ctx)
		if err == nil && rep.Status == http.StatusOK {
			fmt.Fprintf(s.cfg.Progress, "...  sink answers again\n")
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("status %d", rep.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sink did not answer GET /v1/fence within %s after the restart (last: %s)", s.cfg.RestartTimeout, last)
		case <-tick.C:
		}
	}
}

// withSetup runs a durability check after the shared setup, reporting the
// setup's transcript when it failed.
func withSetup(s *session, check func(d *durableSetup) error) error {
	d := s.durable()
	if d.err != nil {
		s.ex = append(d.ex, s.ex...)
		return d.err
	}
	return check(d)
}

func checkFloorSurvives(s *session) error {
	return withSetup(s, func(d *durableSetup) error {
		k := s.key()
		return all(
			func() error { return s.floorAtLeast(d.e + 4) },
			func() error { return s.putStale(k, s.v("stale"), d.e+3, "", d.e+4) },
			func() error { return s.absent(k) },
		)
	})
}

func checkRecordsSurvive(s *session) error {
	return withSetup(s, func(d *durableSetup) error {
		return all(
			func() error { return s.recordIs(d.k1, d.v1, d.e) },
			func() error { return s.recordIs(d.k2, d.v2, d.e+4) },
		)
	})
}

func checkIdemSurvives(s *session) error {
	return withSetup(s, func(d *durableSetup) error {
		return all(
			func() error {
				return s.putExpect(d.k1, d.v1, d.e, d.i1, http.StatusOK, "OK_DUP", d.e)
			},
			func() error { return s.recordIs(d.k1, d.v1, d.e) },
		)
	})
}
