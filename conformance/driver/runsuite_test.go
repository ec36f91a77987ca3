package driver

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// noPause is a target that cannot pause a process (Chaos Mesh's); it is
// never asked to open a namespace here.
type noPause struct{}

func (noPause) Name() string                                     { return "no-pause" }
func (noPause) Kube() kubernetes.Interface                       { return nil }
func (noPause) Open(context.Context, string) (Deployment, error) { panic("not runnable: never opened") }
func (noPause) Lacks(c fault.Capability) string {
	if c == fault.ProcessPause {
		return "this executor has no pause"
	}
	return ""
}

// A scenario whose fault (or schedule) needs what the target lacks is not
// run: the run records it with why, and a run with nothing else judged
// nothing (an error, not a pass).
func TestRunSuiteRecordsNotRunnable(t *testing.T) {
	var defs []scenario.Def
	for _, n := range []string{"pause-leader", "mixed-faults"} {
		d, _ := scenario.ByName(n)
		defs = append(defs, d)
	}
	run, err := RunSuite(context.Background(), noPause{}, defs, Options{Meta: history.Meta{RunID: "r"}})
	if err == nil || len(run.Scenarios) != 0 {
		t.Fatalf("err %v, %d scenarios: nothing ran, which is no pass", err, len(run.Scenarios))
	}
	if len(run.NotRunnable) != 2 {
		t.Fatalf("not runnable %+v, want both", run.NotRunnable)
	}
	for _, n := range run.NotRunnable {
		if !strings.Contains(n.Reason, "needs a process pause: this executor has no pause") {
			t.Errorf("%s: reason %q", n.Scenario, n.Reason)
		}
	}
	heal, _ := scenario.ByName("partition-heal")
	if why := NotRunnable(noPause{}, heal); why != "" {
		t.Errorf("partition-heal not runnable without a pause? %s", why)
	}
}

// Problems names the error that stopped a scenario and each result not as
// expected, and nothing else.
func TestProblems(t *testing.T) {
	h := &history.Scenario{Name: "s"}
	rs := []check.Result{{Scenario: "s", Expected: history.MustPass, Verdict: check.Verdict{Check: "a", Status: check.StatusPass}, OK: true},
		{Scenario: "s", Expected: history.MustFail, Verdict: check.Verdict{Check: "b", Status: check.StatusPass}}}
	if p := Problems(h, rs, nil); len(p) != 1 || !strings.HasPrefix(p[0], "ESCAPED s/b") {
		t.Errorf("problems %q", p)
	}
	if p := Problems(h, rs[:1], context.Canceled); len(p) != 1 || !strings.Contains(p[0], "context canceled") {
		t.Errorf("problems %q", p)
	}
}
