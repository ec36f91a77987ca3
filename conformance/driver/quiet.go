package driver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Quiet keeps the fault steps of scenarios that run at once (--parallel)
// apart from other scenarios' deploys. A deploy starts five pods, a burst
// of a core or more on two, and failovers timed beside one were the slow
// ones before the gate. So a fault step waits while a deploy runs, and a
// deploy waits until no fault step is open; fault steps share, and so do
// deploys (two deploys at once time nothing). The session holds a fault
// step open from before its injection until its failover is over (the
// new leader's first commit), not through its heal and settle.
//
// Fault steps go first: a fault step may start while a deploy waits, so
// the longest scenario's steps are not held behind a deploy that is
// itself held behind other fault steps. A deploy that has waited
// HeavyPatience is not starved: from then on no new fault step starts
// until it has run. Every wait ends with the caller's context.
//
// A nil *Quiet gates nothing: one scenario at a time needs no gate (its
// own phases never overlap).
type Quiet struct {
	mu     sync.Mutex
	faults int // open fault steps
	heavy  int // heavy phases running
	// queue is the waiting heavy phases' arrival times, oldest first.
	queue   []*time.Time
	changed chan struct{} // closed and replaced at every change
	now     func() time.Time
}

// HeavyPatience is how long a waiting deploy lets new fault steps pass
// it: about one fault step's hold (the 5-7 s to a new leader's commit).
const HeavyPatience = 5 * time.Second

// NewQuiet returns an open gate.
func NewQuiet() *Quiet { return &Quiet{changed: make(chan struct{}), now: time.Now} }

// Heavy runs fn when no fault step is open; waited is how long it waited
// for that.
func (q *Quiet) Heavy(ctx context.Context, fn func() error) (waited time.Duration, err error) {
	if q == nil {
		return 0, fn()
	}
	start := q.now()
	q.mu.Lock()
	ticket := &start
	q.queue = append(q.queue, ticket)
	q.mu.Unlock()
	err = q.wait(ctx, "the open fault steps to end", func() bool {
		if q.faults > 0 {
			return false
		}
		q.leave(ticket)
		q.heavy++
		return true
	}, func() { q.leave(ticket) })
	waited = q.now().Sub(start)
	if err != nil {
		return waited, err
	}
	defer q.change(func() { q.heavy-- })
	return waited, fn()
}

// leave takes a heavy phase's ticket out of the queue.
func (q *Quiet) leave(ticket *time.Time) {
	q.queue = slices.DeleteFunc(q.queue, func(t *time.Time) bool { return t == ticket })
}

// Fault runs fn, a fault step, when no heavy phase runs and none has
// waited HeavyPatience. fn may call reopen before it returns to let
// heavy phases in for the rest of the step: once its failover is over,
// its heal and settle time nothing a deploy beside them could stretch.
// reopen may be called more than once.
func (q *Quiet) Fault(ctx context.Context, fn func(reopen func()) error) (waited time.Duration, err error) {
	if q == nil {
		return 0, fn(func() {})
	}
	start := q.now()
	err = q.wait(ctx, "the deploys under way to end", func() bool {
		if q.heavy > 0 || len(q.queue) > 0 && q.now().Sub(*q.queue[0]) >= HeavyPatience {
			return false
		}
		q.faults++
		return true
	}, func() {})
	waited = q.now().Sub(start)
	if err != nil {
		return waited, err
	}
	release := sync.OnceFunc(func() { q.change(func() { q.faults-- }) })
	defer release()
	return waited, fn(release)
}

// wait blocks until admit, called under the lock at every change, takes
// the gate; on ctx's end it calls leave under the lock and says what it
// waited for. Only a change can admit a waiter: a deploy's patience
// running out only holds fault steps back.
func (q *Quiet) wait(ctx context.Context, what string, admit func() bool, leave func()) error {
	for {
		q.mu.Lock()
		if admit() {
			q.mu.Unlock()
			return nil
		}
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			q.change(leave)
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-changed:
		}
	}
}

// change applies f under the lock and wakes every waiter.
func (q *Quiet) change(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f()
	close(q.changed)
	q.changed = make(chan struct{})
}
