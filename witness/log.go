package witness

import (
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/witness/record"
)

// opLog keeps operations in invocation order, at most max of them; past
// that it counts the rest as dropped, so a long run cannot exhaust memory
// and the history says it is incomplete.
type opLog struct {
	mu      sync.Mutex
	max     int
	next    uint64
	ops     []record.Operation
	dropped uint64
}

func newOpLog(max int) *opLog { return &opLog{max: max} }

// invoke numbers op and stamps its invocation time under one lock, so ID
// order is invocation order. It returns the op's slot, or -1 if dropped.
func (l *opLog) invoke(op record.Operation, now time.Time) (record.Operation, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	op.ID, op.Invoked = l.next, now
	if len(l.ops) >= l.max {
		l.dropped++
		return op, -1
	}
	l.ops = append(l.ops, op)
	return op, len(l.ops) - 1
}

// complete replaces the slot's invocation with the finished operation.
func (l *opLog) complete(slot int, op record.Operation) {
	if slot < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops[slot] = op
}

// snapshot copies the operations (in-flight ones still of type invoke).
func (l *opLog) snapshot() ([]record.Operation, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]record.Operation(nil), l.ops...), l.dropped
}
