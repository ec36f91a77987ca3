package certify_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
)

var durabilityChecks = func() []string {
	var out []string
	for _, c := range certify.Checks([]string{certify.ProfileDurability}) {
		out = append(out, c.Name)
	}
	return out
}()

func certifyDurability(t *testing.T, s *sinktest.Sink, restart, kill func(context.Context) error) certify.Report {
	t.Helper()
	var out strings.Builder
	rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{certify.ProfileDurability},
		Restart: restart, Kill: kill, Seed: 21, Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("certify output:\n%s", out.String())
	return rep
}

// A restart command that does nothing proves nothing: every durability
// check is inconclusive, none passes, and the profile is not a pass.
func TestDurabilityRestartThatDoesNothingIsInconclusive(t *testing.T) {
	s := sinktest.Start(t, boltOpener(t.TempDir()), "")
	noop := func(context.Context) error { return nil }
	rep := certifyDurability(t, s, noop, noop)
	if got := rep.InconclusiveChecks(); !slices.Equal(got, durabilityChecks) || len(rep.Failed()) > 0 {
		t.Fatalf("inconclusive %v failed %v, want every durability check inconclusive", got, rep.Failed())
	}
	if v := rep.ProfileVerdict(certify.ProfileDurability); v != certify.ProfileInconclusive {
		t.Fatalf("durability verdict %s, want %s", v, certify.ProfileInconclusive)
	}
}

// Without --kill-cmd the kill checks are inconclusive, never passed.
func TestDurabilityWithoutKillIsInconclusive(t *testing.T) {
	s := sinktest.Start(t, boltOpener(t.TempDir()), "")
	rep := certifyDurability(t, s, s.Restart, nil)
	want := []string{"durability/floor-survives-kill", "durability/records-survive-kill", "durability/idempotency-survives-kill"}
	if got := rep.InconclusiveChecks(); !slices.Equal(got, want) || len(rep.Failed()) > 0 {
		t.Fatalf("inconclusive %v failed %v, want %v", got, rep.Failed(), want)
	}
}

// A sink that sends no instance id is believed restarted when it was seen
// unreachable in between; the restart here serves 503 until a probe saw it.
func TestDurabilityProofByUnreachable(t *testing.T) {
	var down atomic.Bool
	seen := make(chan struct{}, 1)
	s := wrapped(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				select {
				case seen <- struct{}{}:
				default:
				}
				http.Error(w, "restarting", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(noInstanceID{w}, r)
		})
	})
	restart := func(ctx context.Context) error {
		down.Store(true)
		defer down.Store(false)
		select {
		case <-seen:
		case <-ctx.Done():
			return ctx.Err()
		}
		return s.Restart(ctx)
	}
	rep := certifyDurability(t, s, restart, restart)
	if !rep.ProfilePassed(certify.ProfileDurability) {
		t.Fatalf("durability %s: failed %v inconclusive %v", rep.ProfileVerdict(certify.ProfileDurability), rep.Failed(), rep.InconclusiveChecks())
	}
}

// noInstanceID hides the reference sink's instance id, as a vendor sink
// that sends none.
type noInstanceID struct{ http.ResponseWriter }

func (n noInstanceID) WriteHeader(code int) {
	n.Header().Del(contract.HeaderInstanceID)
	n.ResponseWriter.WriteHeader(code)
}
