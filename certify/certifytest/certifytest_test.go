package certifytest_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/certify/certifytest"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// TestSink is what a vendor writes. Here the sink is the reference sink,
// or the negative control named by $CERTIFYTEST_VARIANT when
// TestFailuresAreSubtests runs this test in a child process.
func TestSink(t *testing.T) {
	dir := t.TempDir()
	s := sinktest.Start(t, func(context.Context) (store.Store, error) { return boltstore.Open(dir) }, os.Getenv("CERTIFYTEST_VARIANT"))
	rep := certifytest.Run(t, s.URL, certifytest.Options{Restart: s.Restart, Kill: s.Kill, Seed: 1})
	if len(rep.Results) == 0 {
		t.Fatal("no checks ran")
	}
}

// A broken sink fails exactly the subtests of its checks: run TestSink on
// the ignore-fence control in a child process and read its verdicts.
func TestFailuresAreSubtests(t *testing.T) {
	if os.Getenv("CERTIFYTEST_VARIANT") != "" {
		t.Skip("in the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSink$", "-test.v")
	cmd.Env = append(os.Environ(), "CERTIFYTEST_VARIANT=ignore-fence")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("TestSink passed on ignore-fence:\n%s", out)
	}
	var failed []string
	for _, line := range strings.Split(string(out), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "--- FAIL: TestSink/") {
			failed = append(failed, strings.Fields(strings.TrimPrefix(l, "--- FAIL: "))[0])
		}
	}
	want := []string{
		"TestSink/core", "TestSink/core/fence-raises-floor", "TestSink/core/fence-below-floor-rejected", "TestSink/core/model-sequences",
		"TestSink/idempotency", "TestSink/idempotency/model-retries",
		// the fence never raised the floor, so no durability check has evidence
		"TestSink/durability", "TestSink/durability/floor-survives-restart", "TestSink/durability/records-survive-restart",
		"TestSink/durability/idempotency-survives-restart", "TestSink/durability/floor-survives-kill",
		"TestSink/durability/records-survive-kill", "TestSink/durability/idempotency-survives-kill",
		"TestSink/concurrency", "TestSink/concurrency/linearizable",
	}
	if !slices.Equal(sorted(failed), sorted(want)) {
		t.Errorf("failed subtests\n got  %v\n want %v\n%s", failed, want, out)
	}
	if !strings.Contains(string(out), "INCONCLUSIVE, not a pass") {
		t.Errorf("the inconclusive durability checks are not reported as such:\n%s", out)
	}
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
