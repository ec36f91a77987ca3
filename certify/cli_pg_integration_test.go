//go:build integration

package certify_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/fixtures/sink/pgstore"
)

// cmd/sink --store=postgres as a subprocess, certified on every profile (the
// domain walk too) by the CLI, restarted by --restart-cmd (SIGTERM) and
// --kill-cmd (SIGKILL): the PostgreSQL path of the binary.
func TestCLIAllProfilesOnPostgresBinary(t *testing.T) {
	dsn := os.Getenv("FENCECHECK_PG_DSN")
	if dsn == "" {
		t.Fatal("FENCECHECK_PG_DSN is not set: run scripts/test-integration-sink.sh (it installs and starts PostgreSQL)")
	}
	prefix := fmt.Sprintf("cli%d", time.Now().UnixNano())
	t.Cleanup(func() {
		if s, err := pgstore.Open(context.Background(), dsn, prefix); err == nil {
			s.Drop(context.Background())
			s.Close()
		}
	})
	// The binary reads FENCECHECK_PG_DSN from the environment it inherits.
	p := startProcSink(t, "--store=postgres --pg-prefix="+prefix)
	reports := t.TempDir()
	code, out := runCLI(t, "certify", "--sink-url", p.url, "--restart-cmd", p.restartCmd, "--kill-cmd", p.killCmd, "--restart-timeout", "60s", "--report", reports,
		"--disposable") // the walk to 2^64-1 too: epochs are numeric(20,0) there
	t.Logf("fencecheck certify output:\n%s", out)
	if code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if rep := readReport(t, reports); len(rep.Results) != len(certify.Checks(nil)) || len(rep.Failed()) != 0 {
		t.Fatalf("%d checks, failed %v", len(rep.Results), rep.Failed())
	}
}
