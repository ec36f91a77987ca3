package certify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
)

// Idempotency checks with the retries real clients send: long after the
// first commit, from several writers at once, and after a lost answer.

// manyWrites is how many writes come between a commit and its retry.
const manyWrites = 300

func checkRetryAfterMany(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, i, v := s.key(), s.idem(), s.value()
	if err := s.putOK(k, v, e, i); err != nil {
		return err
	}
	// later leaders writing other keys, each write with its own key; only
	// failures are kept in the transcript
	for n := range manyWrites {
		mark := len(s.ex)
		if err := s.putOK(s.key(), s.value(), e+1+uint64(n), s.idem()); err != nil {
			return fmt.Errorf("write %d of %d after the first commit: %w", n+1, manyWrites, err)
		}
		s.ex = s.ex[:mark]
	}
	s.ex = append(s.ex, Exchange{Request: fmt.Sprintf("(%d writes with their own Idempotency-Keys, at epochs %d to %d, all OK)", manyWrites, e+1, e+manyWrites)})
	return all(
		func() error { return s.putExpect(k, v, e, i, http.StatusOK, contract.ResultOKDup, e) },
		func() error { return s.recordIs(k, v, e) },
	)
}

// checkConcurrentRetries sends one keyed write from retryWriters writers at
// once, retryRounds times. A sink that checks the key and writes it in two
// steps is caught only when two requests land between them, so each round
// is a draw: on bbolt without its lock the first round caught it in 15 of
// 20 runs idle and 25 of 30 on the emulated slower machine with three busy
// loops beside it, yet one run of `make unit` there missed it in all of 5
// rounds (2026-12-07, AMD EPYC; TestCalibrateConcurrentRetries). A round
// takes about 10 ms on a local sink, so 20 rounds cost little. A
// check-then-act with no window at all is the concurrency profile's.
const (
	retryWriters = 8
	retryRounds  = 20
)

func checkConcurrentRetries(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	for round := range retryRounds {
		// each round a newer leader: a sink refusing equal epochs is not
		// this check's business
		e := e + uint64(round)
		k, i, v := s.key(), s.idem(), s.value()
		type answer struct {
			wr  contract.WriteResponse
			rep client.Reply
			err error
		}
		answers := make([]answer, retryWriters)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range retryWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start // all at once
				a := &answers[w]
				a.wr, a.rep, a.err = s.cl.Put(s.ctx, k, []byte(v), e, i)
			}()
		}
		close(start)
		wg.Wait()
		ok, dup := 0, 0
		for _, a := range answers {
			s.record(describePut(k, []byte(v), map[string]string{contract.HeaderEpoch: contract.FormatEpoch(e), contract.HeaderIdempotencyKey: i}), a.rep, a.err)
			switch {
			case a.err != nil:
				return fmt.Errorf("round %d: PUT %s: %w", round+1, k, a.err)
			case a.rep.Status == http.StatusOK && a.wr.Result == contract.ResultOK && a.wr.Epoch == e:
				ok++
			case a.rep.Status == http.StatusOK && a.wr.Result == contract.ResultOKDup && a.wr.Epoch == e:
				dup++
			default:
				return fmt.Errorf("round %d: PUT %s at epoch %d: want 200 OK or OK_DUP with epoch %d, got %d %s", round+1, k, e, e, a.rep.Status, body(a.rep.Body))
			}
		}
		if ok != 1 {
			return fmt.Errorf("round %d: the same write (one Idempotency-Key) sent by %d writers at once was applied %d times (%d OK, %d OK_DUP); want exactly one OK", round+1, retryWriters, ok, ok, dup)
		}
		if err := s.recordIs(k, v, e); err != nil {
			return err
		}
		s.ex = nil // this round passed
	}
	return nil
}

// lostAnswerWait bounds the wait for a write whose answer was lost to
// become visible; a sink may also drop it (then the retry applies it).
const lostAnswerWait = 5 * time.Second

func checkLostAnswer(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, i, v := s.key(), s.idem(), s.value()
	if err := s.putLost(k, v, e, i); err != nil {
		return err
	}
	landed, err := s.waitVisible(k, v, e)
	if err != nil {
		return err
	}
	if !landed {
		// the sink dropped the write: the retry is its first apply, and
		// a second retry must see it
		s.ex = append(s.ex, Exchange{Request: fmt.Sprintf("(the write did not become visible within %s: dropped with the connection)", lostAnswerWait)})
		return all(
			func() error { return s.putOK(k, v, e, i) },
			func() error { return s.putExpect(k, v, e, i, http.StatusOK, contract.ResultOKDup, e) },
			func() error { return s.recordIs(k, v, e) },
		)
	}
	// it landed: a newer leader writes the key, and the retry of the lost
	// write must be reported, not applied over it
	return all(
		func() error { return s.putOK(k, s.v("later"), e+1, s.idem()) },
		func() error {
			err := s.putExpect(k, v, e, i, http.StatusOK, contract.ResultOKDup, e)
			if err != nil {
				return fmt.Errorf("the write whose answer was lost did land (it read back), so its retry must be OK_DUP: %w", err)
			}
			return nil
		},
		func() error { return s.recordIs(k, s.v("later"), e+1) },
	)
}

// putLost sends a PUT and hangs up as soon as the request is written, as a
// client whose answer is lost does.
func (s *session) putLost(k, v string, e uint64, i string) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { cancel() }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.cfg.SinkURL+contract.RecordPath(k), bytes.NewReader([]byte(v)))
	if err != nil {
		return err
	}
	req.Header.Set(contract.HeaderEpoch, contract.FormatEpoch(e))
	req.Header.Set(contract.HeaderIdempotencyKey, i)
	resp, err := s.cfg.HTTP.Do(req)
	desc := describePut(k, []byte(v), map[string]string{contract.HeaderEpoch: contract.FormatEpoch(e), contract.HeaderIdempotencyKey: i})
	if err == nil {
		resp.Body.Close()
		s.ex = append(s.ex, Exchange{Request: desc + " (hung up after sending, but an answer came first)"})
		return nil
	}
	if !errors.Is(err, context.Canceled) || s.ctx.Err() != nil {
		return fmt.Errorf("sending the write whose answer is to be lost: %w", err)
	}
	s.ex = append(s.ex, Exchange{Request: desc + " (hung up after sending: the answer is lost)"})
	return nil
}

// waitVisible polls GET until the record reads v at epoch e (true), or the
// wait ends with the record absent (false). Anything else is a failure.
func (s *session) waitVisible(k, v string, e uint64) (bool, error) {
	deadline := time.Now().Add(lostAnswerWait)
	for {
		rec, found, rep, err := s.cl.Get(s.ctx, k)
		switch {
		case err != nil:
			s.record("GET "+contract.RecordPath(k), rep, err)
			return false, fmt.Errorf("GET %s: %w", k, err)
		case found && rec.Value == v && rec.Epoch == e:
			s.record("GET "+contract.RecordPath(k), rep, err)
			return true, nil
		case found:
			s.record("GET "+contract.RecordPath(k), rep, err)
			return false, fmt.Errorf("GET %s: value %s epoch %d, but only the lost write (value %s epoch %d) was sent", k, quote(rec.Value, 40), rec.Epoch, quote(v, 40), e)
		}
		if time.Now().After(deadline) {
			s.record("GET "+contract.RecordPath(k), rep, err)
			return false, nil
		}
		select {
		case <-s.ctx.Done():
			return false, s.ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling interval under the deadline
		}
	}
}
