package report

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/internal/junit"
)

// demoRun is a correct scenario, a caught negative control and an
// escaped one (a broken variant whose check is wrongly expected to pass).
func demoRun() *history.Run {
	ok := synth.Scenario("partition-heal", synth.Defect{Shutdown: true})
	ctl := synth.Scenario("neg-ignore-demotion-unfenced", synth.Defect{IgnoreDemotion: true, UnfencedSink: true})
	ctl.Expect = map[string]history.Expectation{check.NoStaleCommit: history.MustFail, check.RowEpochMonotonic: history.Any, check.TermStep: history.MustPass}
	esc := synth.Scenario("neg-no-drain-escaped", synth.Defect{})
	esc.Expect = map[string]history.Expectation{check.BridgeDrain: history.MustFail}
	stale := synth.Scenario("stale-leader-fenced", synth.Defect{IgnoreDemotion: true})
	stale.Expect[check.RejectStaleSeen] = history.MustPass
	stale.Expect[check.OldLeaderStepsDown] = history.Any
	return synth.Run("demo-run", ok, stale, ctl, esc)
}

func TestWriteAndJUnit(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("FENCECHECK_RENDER_DIR"); d != "" {
		dir = d // keep the output, e.g. to screenshot index.html
	}
	run := demoRun()
	run.Meta.Versions = map[string]string{"kubernetes": "v1.35.3", "kubelet": "v1.34.4, v1.35.3", "go": "go1.26.8"}
	rs := check.Evaluate(run)
	if err := Write(dir, run, rs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{HistoryFile, VerdictsFile, JUnitFile, SummaryFile, HTMLFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, JUnitFile))
	var doc junit.Suites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if doc.Tests != len(rs) || doc.Failures != 1 {
		t.Errorf("junit tests=%d failures=%d, want %d and 1 (the escaped control)", doc.Tests, doc.Failures, len(rs))
	}
	found := map[string]*junit.Case{}
	for i := range doc.Suites {
		for j := range doc.Suites[i].Cases {
			c := &doc.Suites[i].Cases[j]
			found[doc.Suites[i].Name+"/"+c.Name] = c
		}
	}
	if c := found["neg-ignore-demotion-unfenced/no-stale-commit"]; c == nil || c.Failure != nil || !strings.Contains(c.SystemOut, "verdict: CAUGHT") {
		t.Errorf("caught control must be a passing testcase: %+v", c)
	}
	if c := found["neg-no-drain-escaped/bridge-drain"]; c == nil || c.Failure == nil || c.Failure.Message != "bridge-drain ESCAPED (expected fail)" {
		t.Errorf("escaped control must be a failing testcase: %+v", c)
	}
	md, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	for _, want := range []string{"FAILED", "| bridge-drain | fail | ESCAPED |", "| no-stale-commit | fail | CAUGHT |", "| partition of pod-a | 1 → 2 |",
		"Ran on: go go1.26.8; kubelet v1.34.4, v1.35.3; kubernetes v1.35.3."} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	h, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if n := strings.Count(string(h), "<svg"); n != len(run.Scenarios) {
		t.Errorf("index.html has %d timelines, want %d", n, len(run.Scenarios))
	}
	for _, want := range []string{"term 1", "term 2", "cut off from the apiserver", "rejected", "pod-a", "sink", "Ran on: go go1.26.8; kubelet v1.34.4, v1.35.3; kubernetes v1.35.3."} {
		if !strings.Contains(string(h), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	// The timeline must be well-formed XML.
	s := string(h)
	i := strings.Index(s, "<svg")
	j := strings.Index(s[i:], "</svg>") + i + len("</svg>")
	var any struct{}
	if err := xml.Unmarshal([]byte(s[i:j]), &any); err != nil {
		t.Errorf("timeline SVG is not well-formed: %v", err)
	}
}

// A saved report re-checks to identical verdicts.
func TestRecheckSavedReport(t *testing.T) {
	dir := t.TempDir()
	run := demoRun()
	rs := check.Evaluate(run)
	if err := Write(dir, run, rs); err != nil {
		t.Fatal(err)
	}
	loaded, err := history.Load(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	saved, err := LoadVerdicts(filepath.Join(dir, VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	again := check.Evaluate(loaded)
	if !reflect.DeepEqual(saved, again) {
		t.Errorf("re-check differs from the saved verdicts")
	}
	if d := Diff(saved, again); len(d) != 0 {
		t.Errorf("Diff reports %v", d)
	}
	if saved[0].Status == check.StatusViolation {
		again[0].Status = check.StatusPass
	} else {
		again[0].Status = check.StatusViolation
	}
	if d := Diff(saved, again); len(d) != 1 {
		t.Errorf("Diff missed a changed verdict: %v", d)
	}
}

// A scenario that is not linearizable gets porcupine's page next to the
// reports, and both summaries link it; a linearizable one gets neither.
func TestLinearizabilityVisualization(t *testing.T) {
	dir := t.TempDir()
	bad := synth.Scenario("unfenced", synth.Defect{IgnoreDemotion: true, UnfencedSink: true})
	good := synth.Scenario("correct", synth.Defect{})
	run := synth.Run("lin-run", bad, good)
	if err := Write(dir, run, check.Evaluate(run)); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, check.LinearizabilityFile("unfenced")))
	if err != nil || !strings.Contains(string(page), "<html") {
		t.Fatalf("porcupine's page: %v, %d bytes", err, len(page))
	}
	if _, err := os.Stat(filepath.Join(dir, check.LinearizabilityFile("correct"))); err == nil {
		t.Error("a linearizable scenario got a visualization")
	}
	for _, f := range []string{SummaryFile, HTMLFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if n := strings.Count(string(b), "linearizable-"); !strings.Contains(string(b), `linearizable-unfenced.html`) || strings.Contains(string(b), "linearizable-correct.html") {
			t.Errorf("%s: want a link to linearizable-unfenced.html only (%d mentions)", f, n)
		}
	}
}

func TestSuiteFlagsDropTheTestRuntimes(t *testing.T) {
	in := []string{"-test.v=test2json", "-test.paniconexit0", "-test.timeout", "40m", "--kubeconfig", "k", "--parallel", "3", "-test.count=1"}
	want := []string{"--kubeconfig", "k", "--parallel", "3"}
	if got := SuiteFlags(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("SuiteFlags(%q) = %q, want %q", in, got, want)
	}
}

// What a run skipped and every expectation it changed at run time are in
// its history, so the reports rendered again from the saved history.json
// say them, byte for byte as the run wrote them.
func TestSkipsAndExpectationChangesComeFromTheHistory(t *testing.T) {
	run := demoRun()
	run.NotRunnable = []history.NotRunnable{{Scenario: "pause-leader", Reason: "its fault pause needs a process pause: the chaos-mesh executor has no pause"}}
	run.Scenarios[0].ChangeExpect(check.BridgeJoin, history.Any, "the controller under test logs no FCEVENT lines: this check reads them")
	dir := t.TempDir()
	if err := Write(dir, run, check.Evaluate(run)); err != nil {
		t.Fatal(err)
	}
	written := map[string][]byte{}
	for _, f := range []string{SummaryFile, HTMLFile, JUnitFile} {
		written[f], _ = os.ReadFile(filepath.Join(dir, f))
	}
	for f, want := range map[string][]string{
		SummaryFile: {"## Not runnable on this target (1 scenarios, no verdict)", "- pause-leader: its fault pause needs a process pause",
			"expectation of bridge-join changed at run time from pass to any: the controller under test logs no FCEVENT lines"},
		HTMLFile: {"Not runnable on this target", "pause-leader: its fault pause needs", "expectation of bridge-join changed at run time"},
	} {
		for _, w := range want {
			if !strings.Contains(string(written[f]), w) {
				t.Errorf("%s lacks %q", f, w)
			}
		}
	}
	again, err := history.Load(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(dir, again, check.Evaluate(again)); err != nil {
		t.Fatal(err)
	}
	for f, b := range written {
		if now, _ := os.ReadFile(filepath.Join(dir, f)); string(now) != string(b) {
			t.Errorf("%s differs when rendered again from the saved history", f)
		}
	}
}
