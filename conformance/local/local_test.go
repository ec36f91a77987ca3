//go:build integration

// Package local runs every conformance scenario on the host, without a
// cluster: the driver of the cluster suite against the local target
// (conformance/target/local: a local etcd + kube-apiserver, the real sink
// and reconciler processes). The same scenario definitions, recorders,
// checks and reports judge the result.
package local

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/localrun"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// TestLocalScenarios runs scenarios against real processes, through the
// code of `fencecheck run --target local` (localrun), and judges each with
// its own expectations, three at a time behind the quiet gate as on the
// cluster. FENCECHECK_LOCAL_SCENARIOS (a regexp) selects scenarios;
// FENCECHECK_LOCAL_PARALLEL sets how many run at once;
// FENCECHECK_LOCAL_REPORTS keeps the reports.
func TestLocalScenarios(t *testing.T) {
	dir := t.TempDir()
	logf := func(format string, a ...any) {
		t.Logf("%s "+format, append([]any{time.Now().UTC().Format("15:04:05.000")}, a...)...)
	}
	runID := "local-" + time.Now().UTC().Format("20060102-150405")
	sel := regexp.MustCompile(os.Getenv("FENCECHECK_LOCAL_SCENARIOS"))
	defs := scenario.Matching(sel)
	if len(defs) == 0 {
		t.Fatalf("no scenario matches FENCECHECK_LOCAL_SCENARIOS=%q", sel)
	}
	parallel := 3
	if v := os.Getenv("FENCECHECK_LOCAL_PARALLEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FENCECHECK_LOCAL_PARALLEL=%q: want a whole number, at least 1", v)
		}
		parallel = n
	}
	reports := os.Getenv("FENCECHECK_LOCAL_REPORTS")
	if reports == "" {
		reports = filepath.Join(dir, "reports")
	}
	run, err := localrun.Run(context.Background(), localrun.Options{Defs: defs, Work: dir, Logf: logf, Suite: driver.Options{
		Config:   driver.Config{Timing: scenario.DefaultTiming(), Seed: 1, RunID: runID, Takeovers: 3, WaitTimeout: time.Minute, Logf: logf},
		Meta:     history.Meta{RunID: runID, Seed: 1},
		Parallel: parallel, QuietGate: true,
		Judged: func(h *history.Scenario, rs []check.Result, err error) {
			t.Run(h.Name, func(t *testing.T) {
				for _, p := range driver.Problems(h, rs, err) {
					t.Error(p)
				}
			})
		},
		Reports: reports,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range run.NotRunnable {
		t.Errorf("%s: not runnable on the local target: %s", n.Scenario, n.Reason)
	}
	// The history says which Kubernetes the verdicts are about.
	if v := run.Meta.Versions["kubernetes"]; !strings.HasPrefix(v, "v1.") {
		t.Errorf("the history records kubernetes %q, want the apiserver's version (%v)", v, run.Meta.Versions)
	}
	t.Logf("reports in %s\n%s", reports, report.TimingTable(scenario.MeasureWaits(run)))
}
