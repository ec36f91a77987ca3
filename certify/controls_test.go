package certify_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/contract"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/fence"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// More negative controls, test-only, so that every certify check has a
// broken sink it must catch (the six shipped variants leave some uncovered).

func reference(st store.Store) (sink.Config, error) { return sink.Config{Store: st}, nil }

// unlockedBolt opens bbolt with its lock removed (a real race, no pause).
func unlockedBolt(dir string) sinktest.Opener {
	return func(context.Context) (store.Store, error) {
		st, err := boltstore.Open(dir)
		if err != nil {
			return nil, err
		}
		return st.Unlocked(), nil
	}
}

// forgetIdem remembers only the idempotency keys it committed itself since
// it was opened (keys do not survive a restart, records and the floor do),
// and with keep > 0 only the last keep of them.
type forgetIdem struct {
	store.Store
	keep int
	mu   sync.Mutex
	seen []string
}

func (f *forgetIdem) Apply(ctx context.Context, req fence.Request, rule fence.Rule) (fence.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.Store.Apply(ctx, req, func(st fence.State, r fence.Request) fence.Decision {
		if !slices.Contains(f.seen, r.IdempotencyKey) {
			st.Prior = nil
		}
		return rule(st, r)
	})
	if err == nil && d.Commit && req.IdempotencyKey != "" {
		f.seen = append(f.seen, req.IdempotencyKey)
		if f.keep > 0 && len(f.seen) > f.keep {
			f.seen = f.seen[1:]
		}
	}
	return d, err
}

// hangupAmnesia applies the write of a client that hung up before its
// answer but does not remember its idempotency key (as a sink that saves
// keys only once the answer is delivered). hungUp finds the client's
// request context, which the reference sink detaches from the store call.
type hangupAmnesia struct{ store.Store }

type clientCtxKey struct{}

// hangupWindow is how long the control waits to see whether the client
// hung up: the defect's window, not synchronization. Every idempotent write
// of a certify run waits it out, so it sets this control's time (57 s at
// 100 ms). certify hangs up as soon as its request is written, and the
// hang-up was already visible when Apply started, 3-5 µs after, in every
// measured run, also with three busy loops on the two cores (2026-12-07,
// AMD EPYC): 20 ms is thousands of times that.
const hangupWindow = 20 * time.Millisecond

func (h hangupAmnesia) Apply(ctx context.Context, req fence.Request, rule fence.Rule) (fence.Decision, error) {
	client, _ := ctx.Value(clientCtxKey{}).(context.Context)
	if req.IdempotencyKey == "" || client == nil {
		return h.Store.Apply(ctx, req, rule)
	}
	timer := time.NewTimer(hangupWindow)
	defer timer.Stop()
	select {
	case <-client.Done():
		req.IdempotencyKey = "" // gone: commit, forget the key
	case <-timer.C:
	}
	return h.Store.Apply(ctx, req, rule)
}

func keepClientCtx(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientCtxKey{}, r.Context())))
	})
}

func TestCertifyCatchesMoreControls(t *testing.T) {
	cases := []struct {
		name     string
		start    func(t *testing.T) *sinktest.Sink
		profiles []string
		want     []string
	}{
		{"no-idempotency", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, boltOpener(t.TempDir()), func(st store.Store) (sink.Config, error) {
				return sink.Config{Store: st, Rule: func(s fence.State, r fence.Request) fence.Decision {
					s.Prior = nil
					return fence.Decide(s, r)
				}}, nil
			})
		}, nil, []string{"idempotency/retry-is-ok-dup", "idempotency/dup-not-reapplied", "idempotency/dup-after-takeover",
			"idempotency/key-reuse-conflicts", "idempotency/retry-after-many-writes", "idempotency/concurrent-retries-apply-once",
			"idempotency/retry-after-lost-answer", "idempotency/model-retries", "durability/idempotency-survives-restart", "durability/idempotency-survives-kill",
			"concurrency/linearizable", // the workload retries keyed writes
		}},

		{"amnesia (a new empty store on every restart)", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, func(context.Context) (store.Store, error) { return boltstore.Open(t.TempDir()) }, reference)
		}, []string{"durability"}, []string{"durability/floor-survives-restart", "durability/records-survive-restart", "durability/idempotency-survives-restart",
			"durability/floor-survives-kill", "durability/records-survive-kill", "durability/idempotency-survives-kill"}},

		{"idempotency keys lost on restart", func(t *testing.T) *sinktest.Sink {
			dir := t.TempDir()
			return sinktest.StartWith(t, func(context.Context) (store.Store, error) {
				st, err := boltstore.Open(dir)
				return &forgetIdem{Store: st}, err
			}, reference)
		}, []string{"durability"}, []string{"durability/idempotency-survives-restart", "durability/idempotency-survives-kill"}},

		{"remembers only its last 16 idempotency keys", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, boltOpener(t.TempDir()), func(st store.Store) (sink.Config, error) {
				return sink.Config{Store: &forgetIdem{Store: st, keep: 16}}, nil
			})
		}, []string{"idempotency", "durability"}, []string{"idempotency/retry-after-many-writes",
			"idempotency/model-retries", // some retries come more than 16 keyed writes later
			"durability/idempotency-survives-restart", "durability/idempotency-survives-kill"}},

		{"bbolt without its lock (idempotency key checked and written in two transactions)", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, unlockedBolt(t.TempDir()), reference)
		}, []string{"idempotency"}, []string{"idempotency/concurrent-retries-apply-once"}},

		{"forgets the idempotency key of a client that hung up", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, boltOpener(t.TempDir()), func(st store.Store) (sink.Config, error) {
				return sink.Config{Store: hangupAmnesia{st}}, nil
			}, keepClientCtx)
		}, []string{"idempotency"}, []string{"idempotency/retry-after-lost-answer"}},

		{"value limit off by one (refuses exactly 1 MiB)", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, boltOpener(t.TempDir()), reference, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.ContentLength >= contract.MaxValueBytes {
						http.Error(w, "too large", http.StatusRequestEntityTooLarge)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
		}, []string{"core", "hygiene"}, []string{"hygiene/value-size-limit"}},

		{"overloaded (every 5th request 503)", func(t *testing.T) *sinktest.Sink {
			var n atomic.Int64
			return sinktest.StartWith(t, boltOpener(t.TempDir()), reference, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1)%5 == 0 && r.Method != http.MethodGet {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
		}, []string{"concurrency"}, []string{"concurrency/answers-under-load"}},

		{"lenient Idempotency-Key (a malformed key is ignored, not refused)", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, boltOpener(t.TempDir()), reference, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if k := r.Header.Get(contract.HeaderIdempotencyKey); k != "" && contract.ValidIdempotencyKey(k) != nil {
						r.Header.Del(contract.HeaderIdempotencyKey)
					}
					h.ServeHTTP(w, r)
				})
			})
		}, []string{"idempotency", "hygiene"}, []string{"hygiene/malformed-idempotency-key-rejected"}},

		{"reads lie (GET returns 404)", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, boltOpener(t.TempDir()), reference, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && r.URL.Path != contract.PathFence {
						w.WriteHeader(http.StatusNotFound)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
		}, []string{"core"}, []string{"core/write-commits", "core/equal-epoch-commits", "core/stale-write-rejected", "core/model-sequences"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t)
			rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: c.profiles, Restart: s.Restart, Kill: s.Kill, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Failed(); !slices.Equal(sorted(got), sorted(c.want)) {
				t.Errorf("failed checks\n got  %v\n want %v", got, c.want)
			}
		})
	}
}
