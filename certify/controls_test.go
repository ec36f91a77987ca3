package certify_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

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

// forgetIdem hides idempotency keys committed before this store was opened:
// keys do not survive a restart, records and the floor do.
type forgetIdem struct {
	store.Store
	mu   sync.Mutex
	seen map[string]bool
}

func (f *forgetIdem) Apply(ctx context.Context, req fence.Request, rule fence.Rule) (fence.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.Store.Apply(ctx, req, func(st fence.State, r fence.Request) fence.Decision {
		if !f.seen[r.IdempotencyKey] {
			st.Prior = nil
		}
		return rule(st, r)
	})
	if err == nil && d.Commit && req.IdempotencyKey != "" {
		f.seen[req.IdempotencyKey] = true
	}
	return d, err
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
			"idempotency/key-reuse-conflicts", "durability/idempotency-survives-restart", "durability/idempotency-survives-kill"}},

		{"amnesia (a new empty store on every restart)", func(t *testing.T) *sinktest.Sink {
			return sinktest.StartWith(t, func(context.Context) (store.Store, error) { return boltstore.Open(t.TempDir()) }, reference)
		}, []string{"durability"}, []string{"durability/floor-survives-restart", "durability/records-survive-restart", "durability/idempotency-survives-restart",
			"durability/floor-survives-kill", "durability/records-survive-kill", "durability/idempotency-survives-kill"}},

		{"idempotency keys lost on restart", func(t *testing.T) *sinktest.Sink {
			dir := t.TempDir()
			return sinktest.StartWith(t, func(context.Context) (store.Store, error) {
				st, err := boltstore.Open(dir)
				return &forgetIdem{Store: st, seen: map[string]bool{}}, err
			}, reference)
		}, []string{"durability"}, []string{"durability/idempotency-survives-restart", "durability/idempotency-survives-kill"}},

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
		}, []string{"core"}, []string{"core/write-commits", "core/equal-epoch-commits", "core/stale-write-rejected"}},
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
