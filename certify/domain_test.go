package certify_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// disposableBolt starts variant on bbolt with a reset that gives a fresh
// sink (a new, empty store); resets counts the resets.
func disposableBolt(t *testing.T, variant string) (s *sinktest.Sink, reset func(context.Context) error, resets *int) {
	dir := t.TempDir()
	n := 0
	s = sinktest.Start(t, func(context.Context) (store.Store, error) { return boltstore.Open(dir) }, variant)
	return s, func(ctx context.Context) error { n++; dir = t.TempDir(); return s.Restart(ctx) }, &n
}

func floorOf(t *testing.T, url string) uint64 {
	t.Helper()
	f, _, err := (&client.Client{BaseURL: url}).Floor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The domain profile raises the floor for ever: it never runs unless the
// sink is declared disposable, and a certificate says NOT RUN, with the
// reason, never PASS.
func TestDomainProfileRunsOnlyOnADisposableSink(t *testing.T) {
	run, notRun, err := certify.PlanProfiles(certify.Config{})
	if err != nil || slices.Contains(run, certify.ProfileDomain) || !strings.Contains(notRun[certify.ProfileDomain], "--disposable") {
		t.Fatalf("default plan: run %v, not run %v, %v", run, notRun, err)
	}
	if _, _, err := certify.PlanProfiles(certify.Config{Profiles: []string{certify.ProfileDomain}}); err == nil || !strings.Contains(err.Error(), "--disposable") {
		t.Fatalf("--profile domain without --disposable: %v", err)
	}
	for _, cfg := range []certify.Config{{Disposable: true}, {Reset: func(context.Context) error { return nil }}} {
		if run, _, err := certify.PlanProfiles(cfg); err != nil || !slices.Contains(run, certify.ProfileDomain) {
			t.Fatalf("declared disposable: run %v, %v", run, err)
		}
	}
	rep := certify.Report{NotRun: notRun}
	if v := rep.ProfileVerdict(certify.ProfileDomain); v != certify.ProfileNotRun {
		t.Fatalf("verdict %s", v)
	}
	if md := certify.Certificate(rep); !strings.Contains(md, "| domain | NOT RUN: it raises the sink's floor to 2^64-1 for ever") {
		t.Fatalf("certificate:\n%s", md)
	}
}

// A sink already in use is judged as a fresh one: the reference sink
// fenced beforehand to 0, 5000 and 2^40 passes every profile a default run
// allows, durability with its restarts. The domain profile is NOT RUN
// (not declared disposable) and did not run: the floor stays far below
// the top. FENCECHECK_CERT_DIR=DIR saves each certificate in DIR/floor-F.
func TestCertifyAtFloors(t *testing.T) {
	for _, floor := range []uint64{0, 5000, 1 << 40} {
		t.Run(fmt.Sprint(floor), func(t *testing.T) {
			s := sinktest.Start(t, boltOpener(t.TempDir()), "")
			if floor > 0 {
				if _, _, err := (&client.Client{BaseURL: s.URL}).Fence(context.Background(), floor); err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Restart: s.Restart, Kill: s.Kill,
				RestartTimeout: 30 * time.Second, Seed: 42, Progress: &out})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("certify output:\n%s", out.String())
			if dir := os.Getenv("FENCECHECK_CERT_DIR"); dir != "" {
				if err := certify.WriteReports(filepath.Join(dir, fmt.Sprintf("floor-%d", floor)), rep); err != nil {
					t.Fatal(err)
				}
			}
			if f, u := rep.Failed(), rep.InconclusiveChecks(); len(f)+len(u) > 0 {
				t.Fatalf("failed %v, inconclusive %v", f, u)
			}
			for _, p := range certify.AllProfiles {
				want := certify.ProfilePass
				if p == certify.ProfileDomain {
					want = certify.ProfileNotRun
				}
				if got := rep.ProfileVerdict(p); got != want {
					t.Errorf("profile %s: %s, want %s", p, got, want)
				}
			}
			if md := certify.Certificate(rep); !strings.Contains(md, "| domain | NOT RUN: it raises") {
				t.Errorf("the certificate does not say why domain did not run:\n%s", md)
			}
			if f := floorOf(t, s.URL); f > floor+1<<20 {
				t.Errorf("the floor went from %d to %d: the walk ran", floor, f)
			}
		})
	}
}

// With a reset command the walk starts from a fresh sink, climbs to
// 2^64-1 and leaves the sink fresh again; declared disposable without one
// it walks the sink as it is and leaves it at the top.
func TestDomainWalk(t *testing.T) {
	s, reset, resets := disposableBolt(t, "")
	if _, _, err := (&client.Client{BaseURL: s.URL}).Fence(context.Background(), 5000); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{certify.ProfileDomain}, Reset: reset, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the domain profile with a reset before and after ran in %s", time.Since(start).Round(time.Millisecond))
	if !rep.ProfilePassed(certify.ProfileDomain) || *resets != 2 || floorOf(t, s.URL) != 0 {
		t.Fatalf("verdict %s, %d resets, floor %d after; failed %v", rep.ProfileVerdict(certify.ProfileDomain), *resets, floorOf(t, s.URL), rep.Results)
	}
	rep, err = certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{certify.ProfileDomain}, Disposable: true, Seed: 43})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ProfilePassed(certify.ProfileDomain) || floorOf(t, s.URL) != math.MaxUint64 {
		t.Fatalf("verdict %s, floor %d after", rep.ProfileVerdict(certify.ProfileDomain), floorOf(t, s.URL))
	}
}
