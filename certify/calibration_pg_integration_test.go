//go:build integration

package certify_test

import (
	"context"
	"testing"

	"github.com/fencecheck/fencecheck/fixtures/sink/pgstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// The PostgreSQL race controls, calibrated like the bbolt ones:
//
//	FENCECHECK_CALIBRATE=20 bash scripts/test-integration-sink.sh
func TestCalibrateConcurrencyOnPostgres(t *testing.T) {
	n := calibrationRuns(t)
	calibrate(t, []raceControl{
		{name: "PostgreSQL without its lock", start: func(t *testing.T) *sinktest.Sink {
			open := pgOpener(t)
			return sinktest.StartWith(t, func(ctx context.Context) (store.Store, error) {
				st, err := open(ctx)
				if err != nil {
					return nil, err
				}
				return st.(*pgstore.Store).Unlocked(), nil
			}, reference)
		}},
		{name: "check-then-act sink with no pause on PostgreSQL", start: func(t *testing.T) *sinktest.Sink {
			return checkThenAct(t, pgOpener(t))
		}, noWindow: true},
		{name: "racy-short variant (check-then-act, 0.5 ms pause) on PostgreSQL", start: func(t *testing.T) *sinktest.Sink {
			return sinktest.Start(t, pgOpener(t), "racy-short")
		}},
	}, n)
}
