package driver

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Fault steps share the gate; a heavy phase waits for the open ones to
// end and, once it waits, a later fault step waits behind it (no
// starvation); nothing heavy and no fault step ever run at once.
func TestQuietKeepsFaultsApartFromHeavyPhases(t *testing.T) {
	q := NewQuiet()
	var faults, heavy atomic.Int32
	var overlap atomic.Bool
	check := func() {
		if faults.Load() > 0 && heavy.Load() > 0 || heavy.Load() > 1 {
			overlap.Store(true)
		}
	}
	inFault := make(chan struct{})
	release := make(chan struct{})
	// Two fault steps open at once.
	for range 2 {
		go q.Fault(context.Background(), func(func()) error {
			faults.Add(1)
			check()
			inFault <- struct{}{}
			<-release
			faults.Add(-1)
			return nil
		})
	}
	<-inFault
	<-inFault
	heavyDone := make(chan time.Duration)
	go func() {
		w, _ := q.Heavy(context.Background(), func() error { heavy.Add(1); check(); heavy.Add(-1); return nil })
		heavyDone <- w
	}()
	// The heavy phase is now queued: a new fault step must wait behind it.
	waitQueued(t, q)
	lateRan := make(chan struct{})
	go q.Fault(context.Background(), func(func()) error { faults.Add(1); check(); faults.Add(-1); close(lateRan); return nil })
	select {
	case <-lateRan:
		t.Fatal("a fault step ran past a waiting heavy phase")
	case <-time.After(50 * time.Millisecond): // a negative check: nothing may happen
	}
	close(release)
	if w := <-heavyDone; w <= 0 {
		t.Errorf("the heavy phase waited %v, want > 0", w)
	}
	<-lateRan
	if overlap.Load() {
		t.Fatal("a heavy phase ran beside a fault step or another heavy phase")
	}
}

// A fault step that reopens the gate lets a waiting heavy phase run
// before the step returns; its own later reopen, and its end, release
// nothing twice.
func TestQuietReopenLetsHeavyPhasesIn(t *testing.T) {
	q := NewQuiet()
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
	// Everything was released once: the whole weight is free again.
	if !q.sem.TryAcquire(quietAll) {
		t.Fatal("the gate is not whole again after the step and the heavy phase")
	}
}

// waitQueued waits until a heavy phase holds or waits for the gate: a
// fault step can then no longer start at once.
func waitQueued(t *testing.T, q *Quiet) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.sem.TryAcquire(1) {
		q.sem.Release(1)
		if time.Now().After(deadline) {
			t.Fatal("the heavy phase never queued")
		}
		time.Sleep(time.Millisecond)
	}
}

// A wait at the gate ends with the context, and says what it waited for;
// the step does not run. A nil gate runs everything at once.
func TestQuietWaitEndsWithTheContext(t *testing.T) {
	q := NewQuiet()
	hold := make(chan struct{})
	defer close(hold)
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
	var none *Quiet
	if w, err := none.Heavy(context.Background(), func() error { return errors.New("x") }); w != 0 || err == nil || err.Error() != "x" {
		t.Fatalf("nil gate: waited %v, err %v", w, err)
	}
}
