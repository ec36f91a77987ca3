//go:build integration

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/kubetest"
	"github.com/fencecheck/fencecheck/leader"
)

// floorSink is the contract's fence rule in a few lines: one floor, PUTs
// below it refused; it records each PUT's epoch.
type floorSink struct {
	mu     sync.Mutex
	floor  uint64
	fences []uint64
	puts   map[uint64]int
}

func (s *floorSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, err := strconv.ParseUint(r.Header.Get(contract.HeaderEpoch), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		w.WriteHeader(400)
		w.Write([]byte(`{"result":"BAD_REQUEST"}`))
	case e < s.floor:
		w.WriteHeader(409)
		w.Write([]byte(`{"result":"REJECT_STALE_EPOCH","highest_epoch":` + strconv.FormatUint(s.floor, 10) + `}`))
	default:
		s.floor = e
		if r.Method == http.MethodPost {
			s.fences = append(s.fences, e)
		} else {
			s.puts[e]++
		}
		w.Write([]byte(`{"result":"OK"}`))
	}
}

func (s *floorSink) snapshot() (uint64, []uint64, map[uint64]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	puts := map[uint64]int{}
	for k, v := range s.puts {
		puts[k] = v
	}
	return s.floor, append([]uint64(nil), s.fences...), puts
}

// syncBuffer is an event log two managers' goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) events(t *testing.T) []eventlog.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	evs, err := eventlog.Parse(bytes.NewReader(b.b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// Two replicas of the --lock=term manager on a real apiserver: the first
// takes term 1, fences and writes; stopped (its context ends, as on
// SIGTERM), the second takes over at term 2, fences 2 before writing, and
// the Lease carries the term.
func TestTermManagerTakeover(t *testing.T) {
	srv := kubetest.Start(t, kubetest.Options{})
	sink := &floorSink{puts: map[uint64]int{}}
	hs := httptest.NewServer(sink)
	defer hs.Close()
	cfg := Config{Namespace: "default", LeaseName: leader.LeaseName, SinkURL: hs.URL, LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond, DrainTimeout: 2 * time.Second, WriteInterval: 20 * time.Millisecond, Rows: 4}
	s, _ := NewSink(hs.URL, "")
	logs := map[string]*syncBuffer{"a": {}, "b": {}}
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	done := map[string]chan error{"a": make(chan error, 1), "b": make(chan error, 1)}
	start := func(ctx context.Context, pod string) {
		c := cfg
		c.Pod = pod
		go func() { done[pod] <- runTerm(ctx, srv.Config, c, s, logs[pod]) }()
	}
	start(ctxA, "a")
	waitFor(t, "term 1 writes", func() bool { _, _, p := sink.snapshot(); return p[1] >= 5 })
	start(ctxB, "b")
	stopA()
	if err := <-done["a"]; err != nil {
		t.Fatalf("replica a: %v", err)
	}
	waitFor(t, "term 2 writes", func() bool { _, _, p := sink.snapshot(); return p[2] >= 5 })
	kube := kubernetes.NewForConfigOrDie(srv.Config)
	l, err := kube.CoordinationV1().Leases("default").Get(context.Background(), leader.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Annotations[leader.TermAnnotation]; got != "2" || !strings.HasPrefix(*l.Spec.HolderIdentity, "b_") {
		t.Errorf("Lease term %q holder %q, want term 2 held by b", got, *l.Spec.HolderIdentity)
	}
	floor, fences, _ := sink.snapshot()
	if floor != 2 || len(fences) != 2 || fences[0] != 1 || fences[1] != 2 {
		t.Errorf("floor %d fences %v, want fences 1 then 2", floor, fences)
	}
	kinds := map[string]int{}
	for _, ev := range logs["a"].events(t) {
		kinds[ev.Kind]++
	}
	for _, k := range []string{eventlog.KindAcquired, eventlog.KindFence, eventlog.KindBridgeSpawned, eventlog.KindBridgeAborted, eventlog.KindBridgeJoined, eventlog.KindStopped} {
		if kinds[k] == 0 {
			t.Errorf("replica a logged no %s event (%v)", k, kinds)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// A leader whose Lease is taken from it (another holder written over it,
// term 2) drains its bridge, then stands again in the same process with a
// new manager and takes term 3 once that holder's lease expires.
func TestTermManagerLosesAndStandsAgain(t *testing.T) {
	srv, sink, log, stop, done := leadingManager(t)
	kube := kubernetes.NewForConfigOrDie(srv.Config)
	leases := kube.CoordinationV1().Leases("default")
	l, err := leases.Get(context.Background(), leader.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := "other_00000000"
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = &other, &now, &now
	l.Annotations[leader.TermAnnotation] = "2"
	if _, err := leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "term 3 writes", func() bool { _, _, p := sink.snapshot(); return p[3] >= 5 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, ev := range log.events(t) {
		kinds[ev.Kind]++
	}
	if kinds[eventlog.KindBridgeDrained] != 1 || kinds[eventlog.KindAcquired] != 2 || kinds[eventlog.KindStarted] != 1 {
		t.Errorf("want one process, two terms, one drain: %v", kinds)
	}
	if _, fences, _ := sink.snapshot(); len(fences) != 2 || fences[1] != 3 {
		t.Errorf("fences %v, want 1 then 3", fences)
	}
}

// The leader's Lease is deleted: the leader (the live holder) re-creates it
// at once with term 2, drains term 1's bridge, and a new manager in the
// same process fences 2 and writes with it (before this it kept writing
// term 1 under a Lease that said 2: run s5-cr-fenced-2 on the cluster).
func TestTermManagerLeaseDeletedUnderIt(t *testing.T) {
	srv, sink, log, stop, done := leadingManager(t)
	leases := kubernetes.NewForConfigOrDie(srv.Config).CoordinationV1().Leases("default")
	if err := leases.Delete(context.Background(), leader.LeaseName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "term 2 writes", func() bool { _, _, p := sink.snapshot(); return p[2] >= 5 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l, err := leases.Get(context.Background(), leader.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Annotations[leader.TermAnnotation]; got != "2" || !strings.HasPrefix(*l.Spec.HolderIdentity, "a_") {
		t.Errorf("Lease term %q holder %q, want term 2 re-created by a", got, *l.Spec.HolderIdentity)
	}
	if _, fences, _ := sink.snapshot(); len(fences) != 2 || fences[0] != 1 || fences[1] != 2 {
		t.Errorf("fences %v, want 1 then 2", fences)
	}
	kinds := map[string]int{}
	for _, ev := range log.events(t) {
		kinds[ev.Kind]++
	}
	if kinds[eventlog.KindBridgeDrained] != 1 || kinds[eventlog.KindAcquired] != 2 {
		t.Errorf("want two terms in one process, term 1 drained: %v", kinds)
	}
}

// leadingManager runs one --lock=term replica, "a", on a fresh apiserver
// and returns once it writes term 1; stop ends it, done gives its result.
func leadingManager(t *testing.T) (*kubetest.Server, *floorSink, *syncBuffer, context.CancelFunc, chan error) {
	t.Helper()
	srv := kubetest.Start(t, kubetest.Options{})
	sink := &floorSink{puts: map[uint64]int{}}
	hs := httptest.NewServer(sink)
	t.Cleanup(hs.Close)
	cfg := Config{Namespace: "default", LeaseName: leader.LeaseName, SinkURL: hs.URL, Pod: "a", LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond, DrainTimeout: 2 * time.Second, WriteInterval: 20 * time.Millisecond, Rows: 4}
	s, _ := NewSink(hs.URL, "")
	log := &syncBuffer{}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	done := make(chan error, 1)
	go func() { done <- runTerm(ctx, srv.Config, cfg, s, log) }()
	waitFor(t, "term 1 writes", func() bool { _, _, p := sink.snapshot(); return p[1] >= 5 })
	return srv, sink, log, stop, done
}
