package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/fixtures/reconciler/bridge"
	"github.com/fencecheck/fencecheck/fixtures/reconciler/plan"
)

// FencedWriter is the --lock=term Runnable: one leadership term's work.
// The manager starts it once it holds the Lease and cancels its context
// when the Lease is lost or the process shuts down.
type FencedWriter struct {
	Cfg    Config
	Sink   *Sink
	Events *eventlog.Writer
	Term   func() uint64   // the term lock's committed term
	Root   context.Context // the process: its end (SIGTERM) aborts the bridge

	started atomic.Bool
	done    chan struct{}
}

// NeedLeaderElection: only the leader writes.
func (w *FencedWriter) NeedLeaderElection() bool { return true }

// Wait waits up to d for a started writer to return; it reports whether
// it did (a writer never started has nothing to wait for).
func (w *FencedWriter) Wait(d time.Duration) bool {
	if !w.started.Load() {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}

// Start fences at the term, then writes the plan through a bridge spawned
// with that term until ctx ends; a lost Lease drains the bridge, a
// shutdown aborts it.
func (w *FencedWriter) Start(ctx context.Context) error {
	w.started.Store(true)
	defer close(w.done)
	epoch := w.Term() // the spawn-time snapshot, never read again
	w.Events.Emit(eventlog.Event{Kind: eventlog.KindAcquired, Epoch: epoch, Detail: "lease=" + w.Cfg.Namespace + "/" + w.Cfg.LeaseName})
	if epoch == 0 {
		w.Events.Emit(eventlog.Event{Kind: eventlog.KindLost, Detail: "no committed term: not writing"})
		return nil
	}
	if !w.fence(ctx, epoch) {
		w.lost(epoch)
		return nil // no write without an acknowledged fence
	}
	pace := newPacer(w.Cfg.WriteInterval)
	defer pace.release()
	b := bridge.Spawn(w.Root, bridge.Config{Capacity: w.Cfg.BridgeCapacity, Epoch: epoch, Forward: func(ctx context.Context, env bridge.Envelope) {
		pace.wait(ctx)
		w.write(ctx, env)
	}})
	w.Events.Emit(bridge.SpawnedEvent(b))
	p := plan.Plan{Rows: w.Cfg.Rows, Generation: epoch, Identity: w.Events.Identity}
	// The live term is read only to stop: if the Lease was deleted and this
	// process re-created it, it holds a new term, and this term's writes
	// must end (the stamp stays the spawn-time epoch).
	for seq := uint64(0); ctx.Err() == nil && w.Term() == epoch; seq++ {
		it := p.Item(seq)
		if b.Send(ctx, bridge.Envelope{Key: it.Key, Value: it.Value, IdempotencyKey: it.IdempotencyKey, Seq: it.Seq}) != nil {
			break
		}
	}
	w.lost(epoch)
	pace.release() // the drain goes at sink speed
	b.CloseSender()
	for _, e := range bridge.ExitEvents(b.Join(w.Cfg.DrainTimeout)) {
		w.Events.Emit(e)
	}
	if now := w.Term(); ctx.Err() == nil && now != epoch {
		// An error ends the manager; runTerm stands again and the next
		// writer fences with the new term.
		return fmt.Errorf("%w: term %d -> %d", errRetermed, epoch, now)
	}
	return nil
}

// errRetermed: the Lease was re-created under this leader with a new term.
var errRetermed = errors.New("the Lease was re-created under this leader")

func (w *FencedWriter) lost(epoch uint64) {
	detail := "lease lost: stopping the producer, draining the bridge"
	if now := w.Term(); now != epoch && now != 0 {
		detail = fmt.Sprintf("Lease re-created under this leader with term %d: stopping the producer, draining the bridge", now)
	}
	if w.Root.Err() != nil {
		detail = "shutdown: aborting the bridge"
	}
	w.Events.Emit(eventlog.Event{Kind: eventlog.KindLost, Epoch: epoch, Detail: detail})
}

// fence raises the sink's floor to epoch, retrying while the sink does not
// answer; it reports whether the sink acknowledged it.
func (w *FencedWriter) fence(ctx context.Context, epoch uint64) bool {
	for {
		a := w.Sink.Fence(ctx, epoch)
		w.Events.Emit(eventlog.Event{Kind: eventlog.KindFence, Epoch: epoch, Result: result(a), Status: a.Status, Error: errText(a),
			Detail: fmt.Sprintf("sink_highest_epoch=%d", a.HighestEpoch)})
		if a.Status == 200 && a.Result == contract.ResultOK {
			return true
		}
		if !a.Retryable() || !pause(ctx, w.Cfg.RetryPeriod) {
			return false
		}
	}
}

// write sends one stamped envelope until it gets a definite answer,
// retrying a lost answer, a 5xx or an answer not the sink's with the same
// Idempotency-Key for as long as the sink stays away, until ctx ends (a
// shutdown, or the end of the drain); each attempt is one write event.
func (w *FencedWriter) write(ctx context.Context, env bridge.Envelope) {
	b := newBackoff(w.Cfg.RetryPeriod)
	for attempt := 1; ; attempt++ {
		sent := time.Now()
		a := w.Sink.Put(ctx, env.Key, env.Value, env.Epoch, env.IdempotencyKey)
		w.Events.Emit(eventlog.Event{Kind: eventlog.KindWrite, Key: env.Key, Value: env.Value, IdempotencyKey: env.IdempotencyKey,
			Epoch: env.Epoch, Result: result(a), Status: a.Status, Error: errText(a), DurationMs: float64(time.Since(sent)) / float64(time.Millisecond),
			Detail: fmt.Sprintf("seq=%d attempt=%d bridge_epoch=%d", env.Seq, attempt, env.Epoch)})
		if !a.Retryable() || ctx.Err() != nil || !pause(ctx, b.next(a.RetryAfter)) {
			return
		}
	}
}

// backoff is the pause before a write's next attempt: 100 ms doubling up
// to retry_period, or the sink's Retry-After when that is longer.
type backoff struct{ d, max time.Duration }

func newBackoff(limit time.Duration) *backoff {
	return &backoff{d: 100 * time.Millisecond, max: max(limit, 100*time.Millisecond)}
}

func (b *backoff) next(retryAfter time.Duration) time.Duration {
	d := b.d
	b.d = min(2*b.d, b.max)
	return max(d, retryAfter)
}

// PlainWriter is the --lock=default Runnable: what a typical controller's
// leader does, writing the plan with an Idempotency-Key and no epoch, and
// stopping when the manager stops it.
type PlainWriter struct {
	Cfg      Config
	Sink     *Sink
	Identity string
}

// NeedLeaderElection: only the leader writes.
func (w *PlainWriter) NeedLeaderElection() bool { return true }

// Start writes until ctx ends.
func (w *PlainWriter) Start(ctx context.Context) error {
	p := plan.Plan{Rows: w.Cfg.Rows, Generation: uint64(time.Now().UnixNano()), Identity: w.Identity}
	t := time.NewTicker(w.Cfg.WriteInterval)
	defer t.Stop()
	for seq := uint64(0); ; seq++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		it := p.Item(seq)
		b := newBackoff(w.Cfg.RetryPeriod)
		for {
			a := w.Sink.Put(ctx, it.Key, it.Value, 0, it.IdempotencyKey)
			if seq%50 == 0 || a.Status >= 300 && seq < 3 {
				log.Printf("write %s seq=%d: status %d %s %v", it.Key, seq, a.Status, a.Result, a.Err)
			}
			if !a.Retryable() || !pause(ctx, b.next(a.RetryAfter)) {
				break
			}
		}
	}
}

func result(a Answer) string {
	switch {
	case a.Err != nil:
		return "TRANSPORT_ERROR"
	case a.Result == "":
		return "HTTP_ERROR"
	}
	return a.Result
}

func errText(a Answer) string {
	if a.Err != nil {
		return a.Err.Error()
	}
	return ""
}

// pause waits d between attempts (not synchronisation); false once ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pacer spaces writes by an interval until released.
type pacer struct {
	t        *time.Ticker
	released chan struct{}
	once     sync.Once
}

func newPacer(d time.Duration) *pacer {
	return &pacer{t: time.NewTicker(d), released: make(chan struct{})}
}

func (p *pacer) wait(ctx context.Context) {
	select {
	case <-p.t.C:
	case <-p.released:
	case <-ctx.Done():
	}
}

func (p *pacer) release() { p.once.Do(func() { p.t.Stop(); close(p.released) }) }
