// Package collect is the I/O that fills a scenario's history from a live
// cluster: a Lease watcher that records every version (and every gap),
// followers for the reconciler pods' event logs, and fetches of the sink's
// history and final state through the apiserver's service proxy.
package collect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
)

// Logf receives progress lines.
type Logf func(format string, args ...any)

// LeaseRecord converts one observed Lease version.
func LeaseRecord(l *coordv1.Lease, event string, annotation string, observed time.Time) history.LeaseRecord {
	r := history.LeaseRecord{Observed: observed, Event: event, ResourceVersion: l.ResourceVersion, UID: string(l.UID)}
	if l.Spec.HolderIdentity != nil {
		r.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		t := l.Spec.AcquireTime.Time
		r.AcquireTime = &t
	}
	if l.Spec.RenewTime != nil {
		t := l.Spec.RenewTime.Time
		r.RenewTime = &t
	}
	if l.Spec.LeaseTransitions != nil {
		r.Transitions = *l.Spec.LeaseTransitions
	}
	if raw, ok := l.Annotations[annotation]; ok {
		r.TermRaw = raw
		if t, err := contract.ParseEpoch(raw); err == nil {
			r.Term, r.TermOK = t, true
		}
	}
	return r
}

// LeaseWatcher records every version of one Lease: a list, then a watch
// from the list's resourceVersion, resumed from the last resourceVersion
// after a disconnect. A 410 Gone (the version was compacted away) cannot be
// resumed: it is recorded as a gap and the watcher lists again.
type LeaseWatcher struct {
	client          kubernetes.Interface
	namespace, name string
	annotation      string
	logf            Logf

	mu     sync.Mutex
	w      history.LeaseWatch
	cancel context.CancelFunc
	done   chan struct{}
	now    func() time.Time
}

// WatchLease lists the Lease and starts watching it. It returns once the
// initial list succeeded, so the watch's Start precedes what follows.
func WatchLease(ctx context.Context, client kubernetes.Interface, namespace, name, annotation string, logf Logf) (*LeaseWatcher, error) {
	lw := &LeaseWatcher{client: client, namespace: namespace, name: name, annotation: annotation, logf: logf, done: make(chan struct{}), now: time.Now}
	lw.w = history.LeaseWatch{Name: name, Start: lw.now()}
	rv, err := lw.list(ctx)
	if err != nil {
		return nil, err
	}
	ctx, lw.cancel = context.WithCancel(ctx)
	go lw.run(ctx, rv)
	return lw, nil
}

func (lw *LeaseWatcher) log(format string, a ...any) {
	if lw.logf != nil {
		lw.logf(format, a...)
	}
}

func (lw *LeaseWatcher) opts(rv string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name=" + lw.name, ResourceVersion: rv, AllowWatchBookmarks: true}
}

func (lw *LeaseWatcher) list(ctx context.Context) (string, error) {
	l, err := lw.client.CoordinationV1().Leases(lw.namespace).List(ctx, lw.opts(""))
	if err != nil {
		return "", fmt.Errorf("list lease %s/%s: %w", lw.namespace, lw.name, err)
	}
	now := lw.now()
	lw.mu.Lock()
	for i := range l.Items {
		lw.w.Records = append(lw.w.Records, LeaseRecord(&l.Items[i], "LIST", lw.annotation, now))
	}
	lw.mu.Unlock()
	return l.ResourceVersion, nil
}

func (lw *LeaseWatcher) record(l *coordv1.Lease, event string) {
	lw.mu.Lock()
	lw.w.Records = append(lw.w.Records, LeaseRecord(l, event, lw.annotation, lw.now()))
	lw.mu.Unlock()
}

func (lw *LeaseWatcher) gap(from time.Time, reason string) {
	lw.mu.Lock()
	lw.w.Gaps = append(lw.w.Gaps, history.Gap{From: from, To: lw.now(), Reason: reason})
	lw.mu.Unlock()
	lw.log("lease watch: GAP recorded (%s)", reason)
}

// lastSeen is when the watch last had proof it was current.
func (lw *LeaseWatcher) lastSeen(fallback time.Time) time.Time {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if n := len(lw.w.Records); n > 0 && lw.w.Records[n-1].Observed.After(fallback) {
		return lw.w.Records[n-1].Observed
	}
	return fallback
}

func isGone(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func (lw *LeaseWatcher) run(ctx context.Context, rv string) {
	defer close(lw.done)
	current := lw.now() // when the watch last had proof it was current
	for ctx.Err() == nil {
		w, err := lw.client.CoordinationV1().Leases(lw.namespace).Watch(ctx, lw.opts(rv))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if isGone(err) {
				rv = lw.relist(ctx, lw.lastSeen(current), err.Error())
				current = lw.now()
				continue
			}
			lw.log("lease watch: %v; retrying from resourceVersion %s", err, rv)
			pause(ctx, 200*time.Millisecond)
			continue
		}
		rv, current = lw.consume(ctx, w, rv, current)
	}
}

// consume reads one watch until it ends; it returns where to resume.
func (lw *LeaseWatcher) consume(ctx context.Context, w watch.Interface, rv string, current time.Time) (string, time.Time) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, current
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, current // closed by the server: resume from rv, nothing lost
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				l, ok := ev.Object.(*coordv1.Lease)
				if !ok {
					lw.log("lease watch: unexpected object %T", ev.Object)
					continue
				}
				lw.record(l, string(ev.Type))
				rv, current = l.ResourceVersion, lw.now()
			case watch.Bookmark:
				if m, err := metaOf(ev.Object); err == nil {
					rv, current = m.GetResourceVersion(), lw.now()
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				var st apierrors.APIStatus
				if errors.As(err, &st) && (st.Status().Code == http.StatusGone || isGone(err)) {
					return lw.relist(ctx, lw.lastSeen(current), err.Error()), lw.now()
				}
				lw.log("lease watch: error event %v; resuming from %s", err, rv)
				return rv, current
			}
		}
	}
}

// relist records a gap from `from` to now and lists again.
func (lw *LeaseWatcher) relist(ctx context.Context, from time.Time, reason string) string {
	for ctx.Err() == nil {
		rv, err := lw.list(ctx)
		if err == nil {
			lw.gap(from, "410 Gone, relisted: "+reason)
			return rv
		}
		lw.log("lease watch: relist failed: %v; retrying", err)
		pause(ctx, 200*time.Millisecond)
	}
	lw.gap(from, "410 Gone, stopped before the relist: "+reason)
	return ""
}

// Snapshot returns a copy of what was recorded so far.
func (lw *LeaseWatcher) Snapshot() history.LeaseWatch {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	w := lw.w
	w.Records = append([]history.LeaseRecord(nil), lw.w.Records...)
	w.Gaps = append([]history.Gap(nil), lw.w.Gaps...)
	return w
}

// Stop ends the watch and returns the full record, End set to now.
func (lw *LeaseWatcher) Stop() history.LeaseWatch {
	lw.cancel()
	<-lw.done
	lw.mu.Lock()
	lw.w.End = lw.now()
	lw.mu.Unlock()
	return lw.Snapshot()
}

// WaitFor polls the recorded versions until cond holds or ctx ends.
func (lw *LeaseWatcher) WaitFor(ctx context.Context, what string, cond func([]history.LeaseRecord) bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if cond(lw.Snapshot().Records) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// pause waits d or until ctx ends (a back-off between setup retries).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func metaOf(o any) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", o)
	}
	return m, nil
}
