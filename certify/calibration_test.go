package certify_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/fencecheck/fencecheck/certify"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/broken"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// Calibration of the concurrency profile on real races: with certify's
// default settings it must catch each race control in at least 19 of 20
// runs. It takes minutes, so it runs when asked:
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
			for seed := int64(1); seed <= int64(n); seed++ {
				s := c.start(t)
				rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{certify.ProfileConcurrency}, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				if !rep.ProfilePassed(certify.ProfileConcurrency) {
					caught++
				}
			}
			fmt.Printf("calibration: %s: caught %d of %d\n", c.name, caught, n)
			if caught < n-n/20 {
				t.Errorf("caught %d of %d runs, want at least %d", caught, n, n-n/20)
			}
		})
	}
}

func TestCalibrateConcurrency(t *testing.T) {
	calibrate(t, boltRaceControls, calibrationRuns(t))
}
