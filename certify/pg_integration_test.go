//go:build integration

package certify_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/fixtures/sink/pgstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

func pgOpener(t *testing.T) sinktest.Opener {
	dsn := os.Getenv("FENCECHECK_PG_DSN")
	if dsn == "" {
		t.Fatal("FENCECHECK_PG_DSN is not set: run scripts/test-integration-sink.sh (it installs and starts PostgreSQL)")
	}
	prefix := fmt.Sprintf("certify%d", time.Now().UnixNano())
	t.Cleanup(func() {
		if s, err := pgstore.Open(context.Background(), dsn, prefix); err == nil {
			s.Drop(context.Background())
			s.Close()
		}
	})
	return func(ctx context.Context) (store.Store, error) { return pgstore.Open(ctx, dsn, prefix) }
}

// pgAlsoFails is what a control fails on PostgreSQL besides its
// expectedFailures: the idempotency key is a primary key there, so when
// racy's check-then-act lets two writers commit one key (the burst
// rounds send it from three at once), the second commit is a unique
// violation answered 500, which concurrency/answers-under-load reports.
var pgAlsoFails = map[string][]string{"racy": {"concurrency/answers-under-load"}}

// The same expectations as on bolt: the reference sink passes every
// profile on PostgreSQL and each negative control fails exactly its checks.
func TestCertifyVariantsOnPostgres(t *testing.T) {
	for variant, want := range expectedFailures {
		name := variant
		if name == "" {
			name = "reference"
		}
		t.Run(name, func(t *testing.T) {
			s := sinktest.Start(t, pgOpener(t), variant)
			rep := runCertify(t, s, 42)
			want := append(slices.Clone(want), pgAlsoFails[variant]...)
			if got := rep.Failed(); !slices.Equal(sorted(got), sorted(want)) {
				t.Errorf("failed checks\n got  %v\n want %v", got, want)
			}
		})
	}
}
