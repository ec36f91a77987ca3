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
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/target/local"
	"github.com/fencecheck/fencecheck/internal/kubetest"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// build compiles ./cmd/name into dir.
func build(t *testing.T, dir, name string) string {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = repoRoot()
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, o)
	}
	return out
}

// TestLocalScenarios runs every scenario against real processes and
// judges it with the scenario's own expectations. FENCECHECK_LOCAL_SCENARIOS
// (a regexp) selects scenarios; FENCECHECK_LOCAL_REPORTS keeps the reports.
func TestLocalScenarios(t *testing.T) {
	dir := t.TempDir()
	api := kubetest.Start(t, kubetest.Options{})
	logf := func(format string, a ...any) {
		t.Logf("%s "+format, append([]any{time.Now().UTC().Format("15:04:05.000")}, a...)...)
	}
	target := local.New(local.Options{Kube: kubernetes.NewForConfigOrDie(api.Config), APIServer: "127.0.0.1:" + strconv.Itoa(api.Port),
		Kubeconfig: api.Kubeconfig, SinkBin: build(t, dir, "sink"), WitnessBin: build(t, dir, "witness"), ReconcilerBin: build(t, dir, "reconciler"), Dir: dir, Logf: logf})
	runID := "local-" + time.Now().UTC().Format("20060102-150405")
	sel := regexp.MustCompile(os.Getenv("FENCECHECK_LOCAL_SCENARIOS"))
	var defs []scenario.Def
	for _, d := range scenario.All() {
		if !sel.MatchString(d.Name) {
			t.Logf("%s: not selected by FENCECHECK_LOCAL_SCENARIOS=%q", d.Name, sel)
			continue
		}
		defs = append(defs, d)
	}
	if len(defs) == 0 {
		t.Fatalf("no scenario matches FENCECHECK_LOCAL_SCENARIOS=%q", sel)
	}
	reports := os.Getenv("FENCECHECK_LOCAL_REPORTS")
	if reports == "" {
		reports = filepath.Join(dir, "reports")
	}
	// One scenario at a time: the local processes share two cores with
	// the apiserver.
	run, err := driver.RunSuite(context.Background(), target, defs, driver.Options{
		Config: driver.Config{Timing: scenario.DefaultTiming(), Seed: 1, RunID: runID, Takeovers: 3, WaitTimeout: time.Minute, Logf: logf},
		Meta:   history.Meta{RunID: runID, Seed: 1, Versions: map[string]string{"go": runtime.Version(), "target": target.Name()}},
		Judged: func(h *history.Scenario, rs []check.Result, err error) {
			t.Run(h.Name, func(t *testing.T) {
				for _, p := range driver.Problems(h, rs, err) {
					t.Error(p)
				}
			})
		},
		Reports: reports,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range run.NotRunnable {
		t.Errorf("%s: not runnable on the local target: %s", n.Scenario, n.Reason)
	}
	t.Logf("reports in %s\n%s", reports, report.TimingTable(scenario.MeasureWaits(run)))
}
