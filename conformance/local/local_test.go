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
	dr := &driver.Driver{Target: target, Config: driver.Config{Timing: scenario.DefaultTiming(), Seed: 1, RunID: runID,
		Takeovers: 3, WaitTimeout: time.Minute, Logf: logf}}
	sel := regexp.MustCompile(os.Getenv("FENCECHECK_LOCAL_SCENARIOS"))
	started := time.Now()
	var ran []*history.Scenario
	for _, d := range scenario.All() {
		if !sel.MatchString(d.Name) {
			t.Logf("%s: not selected by FENCECHECK_LOCAL_SCENARIOS=%q", d.Name, sel)
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			h, err := dr.Run(context.Background(), d)
			ran = append(ran, h)
			if err != nil {
				t.Errorf("%s: %v", d.Name, err)
			}
			driver.Assess(h, t.Errorf, t.Logf)
		})
	}
	if len(ran) == 0 {
		t.Fatalf("no scenario matches FENCECHECK_LOCAL_SCENARIOS=%q", sel)
	}
	reports := os.Getenv("FENCECHECK_LOCAL_REPORTS")
	if reports == "" {
		reports = filepath.Join(dir, "reports")
	}
	r := &history.Run{Meta: history.Meta{RunID: runID, Seed: dr.Seed, Started: started, Ended: time.Now(),
		Versions: map[string]string{"go": runtime.Version(), "target": target.Name()}}, Scenarios: ran}
	if err := report.Write(reports, r, check.Evaluate(r)); err != nil {
		t.Fatal(err)
	}
	t.Logf("reports in %s\n%s", reports, report.TimingTable(scenario.MeasureWaits(r)))
}
