package fault

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/witness/record"
)

// The lost-answers step counts a lost answer once a later request with its
// Idempotency-Key was answered, and only those lost after it began.
func TestRetriedLost(t *testing.T) {
	t0 := time.Unix(100, 0)
	lost := func(id uint64, key string, at time.Time) record.Operation {
		return record.Operation{ID: id, Method: "PUT", IdempotencyKey: key, Type: record.OK, Status: 200, Invoked: at,
			Nemesis: &record.Fault{LostAnswer: true}}
	}
	ops := []record.Operation{
		lost(1, "old", t0.Add(-time.Second)),
		{ID: 2, Method: "PUT", IdempotencyKey: "old", Type: record.OK, Status: 200, Invoked: t0},
		lost(3, "a", t0.Add(time.Second)),
		{ID: 4, Method: "PUT", IdempotencyKey: "a", Type: record.Info, Invoked: t0.Add(2 * time.Second)}, // no answer yet
		lost(5, "b", t0.Add(3*time.Second)),
		{ID: 6, Method: "PUT", IdempotencyKey: "b", Type: record.OK, Status: 200, Invoked: t0.Add(4 * time.Second)},
	}
	if n := retriedLost(ops, t0); n != 1 {
		t.Fatalf("retried lost answers: %d, want 1 (b)", n)
	}
	ops = append(ops, record.Operation{ID: 7, Method: "PUT", IdempotencyKey: "a", Type: record.OK, Status: 200, Invoked: t0.Add(5 * time.Second)})
	if n := retriedLost(ops, t0); n != 2 {
		t.Fatalf("retried lost answers: %d, want 2", n)
	}
}
