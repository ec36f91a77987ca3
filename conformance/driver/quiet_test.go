package driver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Quiet's clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestQuiet() (*Quiet, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	q := NewQuiet()
	q.now = c.now
	return q, c
}

// Fault steps share the gate and go first: a new one passes a deploy
// that waits for the open ones, until that deploy has waited
// HeavyPatience; then new fault steps wait for it (no starvation). A
// deploy never runs beside a fault step.
func TestQuietKeepsFaultsApartFromHeavyPhases(t *testing.T) {
	q, clock := newTestQuiet()
	var faults, heavy atomic.Int32
	var overlap atomic.Bool
	check := func() {
		if faults.Load() > 0 && heavy.Load() > 0 {
			overlap.Store(true)
		}
	}
	release := make(chan struct{})
	openFault := func() chan struct{} {
		in := make(chan struct{})
		go q.Fault(context.Background(), func(func()) error {
			faults.Add(1)
			check()
			close(in)
			<-release
			faults.Add(-1)
			return nil
		})
		return in
	}
	<-openFault()
	heavyDone := make(chan time.Duration)
	go func() {
		w, _ := q.Heavy(context.Background(), func() error { heavy.Add(1); check(); heavy.Add(-1); return nil })
		heavyDone <- w
	}()
	waitQueued(t, q)
	// A fresh waiting deploy lets a new fault step pass.
	select {
	case <-openFault():
	case <-time.After(10 * time.Second):
		t.Fatal("a fault step waited behind a deploy that had waited no time")
	}
	// Once the deploy has waited HeavyPatience, a new fault step waits.
	clock.add(HeavyPatience)
	late := openFault()
	select {
	case <-late:
		t.Fatal("a fault step ran past a deploy that had waited HeavyPatience")
	case <-time.After(50 * time.Millisecond): // a negative check: nothing may happen
	}
	close(release) // the two open steps end; the deploy runs, then the late step
	if w := <-heavyDone; w < HeavyPatience {
		t.Errorf("the heavy phase waited %v, want at least %v", w, HeavyPatience)
	}
	<-late
	if overlap.Load() {
		t.Fatal("a heavy phase ran beside a fault step")
	}
}

// Deploys share the gate: waiting together, they run together once the
// fault steps end.
func TestQuietHeavyPhasesShare(t *testing.T) {
	q, _ := newTestQuiet()
	hold := make(chan struct{})
	in := make(chan struct{})
	go q.Fault(context.Background(), func(func()) error { close(in); <-hold; return nil })
	<-in
	both := make(chan struct{})
	var inside atomic.Int32
	for i := range 2 {
		go q.Heavy(context.Background(), func() error {
			if inside.Add(1) == 2 {
				close(both)
			}
			<-both // each returns only once the other is inside too
			return nil
		})
		waitQueuedN(t, q, i+1)
	}
	close(hold)
	select {
	case <-both:
	case <-time.After(10 * time.Second):
		t.Fatal("two deploys did not run at once")
	}
}

// A fault step that reopens the gate lets a waiting heavy phase run
// before the step returns; its own later reopen, and its end, release
// nothing twice.
func TestQuietReopenLetsHeavyPhasesIn(t *testing.T) {
	q, _ := newTestQuiet()
	reopened := make(chan func())
	stepDone := make(chan struct{})
	heavyRan := make(chan struct{})
	go func() {
		q.Fault(context.Background(), func(reopen func()) error {
			reopened <- reopen
			<-heavyRan // the heavy phase runs while the step is still open
			reopen()   // a second call is harmless
			return nil
		})
		close(stepDone)
	}()
	reopen := <-reopened
	go q.Heavy(context.Background(), func() error { close(heavyRan); return nil })
	waitQueued(t, q)
	reopen()
	select {
	case <-heavyRan:
	case <-time.After(10 * time.Second):
		t.Fatal("the heavy phase still waits after the fault step reopened the gate")
	}
	<-stepDone
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.faults != 0 || q.heavy != 0 || len(q.queue) != 0 {
		t.Fatalf("after the step and the heavy phase: %d faults open, heavy %v, %d queued; want the gate whole", q.faults, q.heavy, len(q.queue))
	}
}

// waitQueued waits until a heavy phase waits for the gate.
func waitQueued(t *testing.T, q *Quiet) { t.Helper(); waitQueuedN(t, q, 1) }

func waitQueuedN(t *testing.T, q *Quiet, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q.mu.Lock()
		queued := len(q.queue)
		q.mu.Unlock()
		if queued >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d heavy phases queued, want %d", queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A wait at the gate ends with the context, and says what it waited for;
// the step does not run, and a deploy that gave up leaves the queue. A
// nil gate runs everything at once.
func TestQuietWaitEndsWithTheContext(t *testing.T) {
	q, _ := newTestQuiet()
	hold := make(chan struct{})
	started := make(chan struct{})
	go q.Heavy(context.Background(), func() error { close(started); <-hold; return nil })
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ran := false
	_, err := q.Fault(ctx, func(func()) error { ran = true; return nil })
	if ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ran %v, err %v; want not run, deadline exceeded", ran, err)
	}
	close(hold)
	// And a deploy's wait, behind an open fault step.
	holdFault, inFault := make(chan struct{}), make(chan struct{})
	defer close(holdFault)
	go q.Fault(context.Background(), func(func()) error { close(inFault); <-holdFault; return nil })
	<-inFault
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	_, err = q.Heavy(ctx2, func() error { ran = true; return nil })
	if ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("heavy: ran %v, err %v; want not run, deadline exceeded", ran, err)
	}
	q.mu.Lock()
	queued := len(q.queue)
	q.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d deploys still queued after theirs gave up", queued)
	}
	var none *Quiet
	if w, err := none.Heavy(context.Background(), func() error { return errors.New("x") }); w != 0 || err == nil || err.Error() != "x" {
		t.Fatalf("nil gate: waited %v, err %v", w, err)
	}
}
