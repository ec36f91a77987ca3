package certify_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/broken"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// Calibration of the concurrency profile on real races: with certify's
// default settings it must catch each race control with a window (bbolt
// without its lock, check-then-act with 2 ms and with 0.5 ms) in every
// run, and check-then-act with no pause in at least 19 of 20. It takes
// minutes, so it runs when asked:
//
//	FENCECHECK_CALIBRATE=20 go test -run TestCalibrateConcurrency -v ./certify/
//
// (and on PostgreSQL with -tags integration through
// scripts/test-integration-sink.sh, see calibration_pg_integration_test.go).

type raceControl struct {
	name  string
	start func(t *testing.T) *sinktest.Sink
	// noWindow: the race needs the scheduler to interleave two
	// transactions (no pause between them), so a single run can miss it.
	noWindow bool
}

func checkThenAct(t *testing.T, open sinktest.Opener) *sinktest.Sink {
	return sinktest.StartWith(t, open, func(st store.Store) (sink.Config, error) {
		return sink.Config{Store: broken.CheckThenAct(st, 0)}, nil
	})
}

var boltRaceControls = []raceControl{
	{name: "bbolt without its lock", start: func(t *testing.T) *sinktest.Sink {
		return sinktest.StartWith(t, unlockedBolt(t.TempDir()), reference)
	}},
	{name: "check-then-act sink with no pause", start: func(t *testing.T) *sinktest.Sink {
		return checkThenAct(t, boltOpener(t.TempDir()))
	}, noWindow: true},
	{name: "racy variant (check-then-act, 2 ms pause)", start: func(t *testing.T) *sinktest.Sink {
		return sinktest.Start(t, boltOpener(t.TempDir()), "racy")
	}},
	{name: "racy-short variant (check-then-act, 0.5 ms pause)", start: func(t *testing.T) *sinktest.Sink {
		return sinktest.Start(t, boltOpener(t.TempDir()), "racy-short")
	}},
}

func calibrationRuns(t *testing.T) int {
	n, _ := strconv.Atoi(os.Getenv("FENCECHECK_CALIBRATE"))
	if n <= 0 {
		t.Skip("calibration runs only with FENCECHECK_CALIBRATE=<runs> (20 for the contract's figure)")
	}
	return n
}

// calibrate runs the concurrency profile n times (seeds 1..n, each on a
// fresh sink) and reports how often it failed.
func calibrate(t *testing.T, controls []raceControl, n int) {
	for _, c := range controls {
		t.Run(c.name, func(t *testing.T) {
			caught := 0
			var took time.Duration
			for seed := int64(1); seed <= int64(n); seed++ {
				s := c.start(t)
				start := time.Now()
				rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{certify.ProfileConcurrency}, Seed: seed})
				took += time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.ProfilePassed(certify.ProfileConcurrency) {
					caught++
				}
			}
			fmt.Printf("calibration: %s: caught %d of %d (%s a run)\n", c.name, caught, n, (took / time.Duration(n)).Round(time.Millisecond))
			want := n
			if c.noWindow {
				want = n - n/20
			}
			if caught < want {
				t.Errorf("caught %d of %d runs, want at least %d", caught, n, want)
			}
		})
	}
}

func TestCalibrateConcurrency(t *testing.T) {
	calibrate(t, boltRaceControls, calibrationRuns(t))
}

// TestCalibrateOutsideControls: the catch rate of each outside-sink
// control (fixtures/sink/broken/outside.go) with certify's default settings,
// seeds 1..n on a fresh sink each. Each has a defect a run always reaches,
// so each must be caught in every run; the table it prints is the proof
// in docs/sink-contract.md.
//
//	FENCECHECK_CALIBRATE=20 go test -run TestCalibrateOutsideControls -v ./certify/
func TestCalibrateOutsideControls(t *testing.T) {
	n := calibrationRuns(t)
	names := slices.Sorted(maps.Keys(outsideControls))
	var table strings.Builder
	table.WriteString("| control | profiles | caught | exactly its checks | checks that caught it (every run) |\n|---|---|---|---|---|\n")
	for _, name := range names {
		c := outsideControls[name]
		t.Run(name, func(t *testing.T) {
			caught, exact := 0, 0
			every := map[string]int{}
			for seed := int64(1); seed <= int64(n); seed++ {
				s := sinktest.Start(t, boltOpener(t.TempDir()), name)
				rep, err := certify.Run(context.Background(), certify.Config{
					SinkURL: s.URL, Restart: s.Restart, Kill: s.Kill, RestartTimeout: 30 * time.Second,
					Seed: seed, Profiles: c.profiles, Disposable: true,
				})
				if err != nil {
					t.Fatal(err)
				}
				failed := rep.Failed()
				if len(failed) > 0 {
					caught++
				}
				if slices.Equal(sorted(failed), sorted(c.want)) {
					exact++
				}
				for _, f := range failed {
					every[f]++
				}
			}
			var always []string
			for _, f := range slices.Sorted(maps.Keys(every)) {
				if every[f] == n {
					always = append(always, f)
				}
			}
			fmt.Fprintf(&table, "| `%s` | %s | %d of %d | %d of %d | %s |\n", name, strings.Join(c.profiles, ", "), caught, n, exact, n, strings.Join(always, ", "))
			if caught < n {
				t.Errorf("caught in %d of %d runs, want every run", caught, n)
			}
		})
	}
	fmt.Print(table.String())
}

// TestCalibrateConcurrentRetries: how soon idempotency/concurrent-retries-
// apply-once catches each race control (retryRounds rounds of 8 writers
// sending one keyed write at once), seeds 1..n on a fresh sink each. It
// prints the round that caught each run. Every run must be caught where
// the race has a window (a lock removed around a commit, a pause); with
// no window at all (check-then-act with no pause, 0 of 20 here) the rate
// is only printed: that race is the concurrency profile's, whose burst
// rounds TestCalibrateConcurrency holds to 19 of 20.
//
//	FENCECHECK_CALIBRATE=20 go test -run TestCalibrateConcurrentRetries -v ./certify/
func TestCalibrateConcurrentRetries(t *testing.T) {
	n := calibrationRuns(t)
	const check = certify.ProfileIdempotency + "/concurrent-retries-apply-once"
	for _, c := range boltRaceControls {
		t.Run(c.name, func(t *testing.T) {
			caught, rounds := 0, map[string]int{}
			for seed := int64(1); seed <= int64(n); seed++ {
				s := c.start(t)
				rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{certify.ProfileIdempotency}, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rep.Results {
					if r.Name == check && !r.Passed() {
						caught++
						round, _, _ := strings.Cut(r.Message, ":")
						rounds[round]++
					}
				}
			}
			fmt.Printf("calibration: %s: %s caught %d of %d, by %v\n", c.name, check, caught, n, rounds)
			if caught < n && !c.noWindow {
				t.Errorf("caught %d of %d runs, want every run", caught, n)
			}
		})
	}
}
