package main

import (
	"errors"
	"testing"
	"time"
)

// A write is retried until a definite answer (docs/controller-contract.md,
// MUST 5): no answer, a 5xx and an answer without a contract result are
// retried, every contract answer below 500 is final.
func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		a    Answer
		want bool
	}{
		{Answer{Err: errors.New("reset")}, true},
		{Answer{Status: 503, Result: "ERROR"}, true},
		{Answer{Status: 500}, true},
		{Answer{Status: 404}, true}, // not the sink's: no contract result
		{Answer{Status: 200, Result: "OK"}, false},
		{Answer{Status: 200, Result: "OK_DUP"}, false},
		{Answer{Status: 409, Result: "REJECT_STALE_EPOCH"}, false},
		{Answer{Status: 422, Result: "IDEMPOTENCY_CONFLICT"}, false},
		{Answer{Status: 400, Result: "BAD_REQUEST"}, false},
	} {
		if got := c.a.Retryable(); got != c.want {
			t.Errorf("%+v: Retryable %v, want %v", c.a, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := newBackoff(time.Second)
	var got []time.Duration
	for range 6 {
		got = append(got, b.next(0))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want 100ms doubling to 1s", got)
		}
	}
	if d := b.next(3 * time.Second); d != 3*time.Second {
		t.Errorf("a longer Retry-After is honoured: %v", d)
	}
}
