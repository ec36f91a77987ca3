package driver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Quiet keeps the fault steps of scenarios that run at once (--parallel)
// apart from each other's heavy phases. A deploy starts five pods and a
// collect stops three: bursts of a core or more on two, and a failover
// timed while one ran took 0.47 s longer on average than one that
// overlapped none (s16-bench-p3, 43 failovers). So a fault step waits
// until no heavy phase runs, and a heavy phase waits until no fault step
// is open; fault steps share, heavy phases take turns. A fault step is
// open from before its injection until its failover is over (the new
// leader's first commit), not through its heal and settle. It is a
// readers-writer lock with the writers first, on a FIFO semaphore, so a
// waiting deploy is not starved by a stream of fault steps, and both
// waits end with the caller's context.
//
// A nil *Quiet gates nothing: one scenario at a time needs no gate (its
// own phases never overlap).
type Quiet struct{ sem *semaphore.Weighted }

// quietAll is a heavy phase's weight: every fault step's slot at once.
const quietAll = 1 << 30

// NewQuiet returns an open gate.
func NewQuiet() *Quiet { return &Quiet{sem: semaphore.NewWeighted(quietAll)} }

// Heavy runs fn when no fault step is open and no other heavy phase runs;
// waited is how long it waited for that.
func (q *Quiet) Heavy(ctx context.Context, fn func() error) (waited time.Duration, err error) {
	return q.run(ctx, quietAll, "the open fault steps to end", func(func()) error { return fn() })
}

// Fault runs fn, a fault step, when no heavy phase runs or waits. fn may
// call reopen before it returns to let heavy phases in for the rest of
// the step: once its failover is over, its heal and settle time nothing
// a deploy beside them could stretch. reopen may be called more than once.
func (q *Quiet) Fault(ctx context.Context, fn func(reopen func()) error) (waited time.Duration, err error) {
	return q.run(ctx, 1, "the deploys and collects under way to end", fn)
}

func (q *Quiet) run(ctx context.Context, weight int64, what string, fn func(release func()) error) (time.Duration, error) {
	if q == nil {
		return 0, fn(func() {})
	}
	start := time.Now()
	if err := q.sem.Acquire(ctx, weight); err != nil {
		return time.Since(start), fmt.Errorf("waiting for %s: %w", what, err)
	}
	waited := time.Since(start)
	release := sync.OnceFunc(func() { q.sem.Release(weight) })
	defer release()
	return waited, fn(release)
}
