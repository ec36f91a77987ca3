package lib_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A red run's log ends with what was not as expected: the FAIL lines of
// recheck.txt and their evidence, nothing of the results that were.
func TestUnexpectedResultsShowsOnlyTheFailures(t *testing.T) {
	recheck := filepath.Join(t.TempDir(), "recheck.txt")
	text := `ok   partition-heal/term-monotonic: expected pass, PASS
FAIL partition-heal/failover-liveness: expected pass, VIOLATION
       within: partition of reconciler-a: first commit 9.1s after the injection (bound 8.6s)
ok   partition-heal/idempotency: expected pass, PASS
       evidence of a passing result, printed with -v
FAIL neg-racy-sink/no-stale-commit: expected fail, PASS (ESCAPED)
       37 commits, none stale
748 results: 746 as expected, 2 not (31 negative controls caught, 516 informative)
`
	if err := os.WriteFile(recheck, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "unexpected_results "+recheck, 20*time.Second)
	if err != nil {
		t.Fatalf("unexpected_results: %v\n%s", err, out)
	}
	want := `FAIL partition-heal/failover-liveness: expected pass, VIOLATION
       within: partition of reconciler-a: first commit 9.1s after the injection (bound 8.6s)
FAIL neg-racy-sink/no-stale-commit: expected fail, PASS (ESCAPED)
       37 commits, none stale
`
	if out != want {
		t.Fatalf("unexpected_results printed:\n%s\nwant:\n%s", out, want)
	}
	if out, err := run(t, "unexpected_results "+filepath.Join(t.TempDir(), "missing"), 20*time.Second); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("a missing recheck.txt: %q, %v; want nothing and no error", out, err)
	}
}
