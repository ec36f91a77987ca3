package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/synth"
)

func savedReport(t *testing.T, escaped bool) string {
	t.Helper()
	ok := synth.Scenario("partition-heal", synth.Defect{})
	ctl := synth.Scenario("neg-no-drain", synth.Defect{NoDrain: !escaped})
	ctl.Expect = map[string]history.Expectation{check.BridgeDrain: history.MustFail, check.TermStep: history.MustPass}
	run := synth.Run("r", ok, ctl)
	dir := t.TempDir()
	if err := report.Write(dir, run, check.Evaluate(run)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCheckSavedReportIsIdentical(t *testing.T) {
	dir := savedReport(t, false)
	var out, errb bytes.Buffer
	if code := runCheck([]string{dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "identical to the saved verdicts.json") || !strings.Contains(out.String(), "ok   neg-no-drain/bridge-drain: expected fail, CAUGHT") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestCheckEscapedControlFails(t *testing.T) {
	dir := savedReport(t, true)
	var out, errb bytes.Buffer
	if code := runCheck([]string{dir}, &out, &errb); code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out.String())
	}
	if !strings.Contains(out.String(), "FAIL neg-no-drain/bridge-drain: expected fail, ESCAPED") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestCheckDetectsTamperedVerdicts(t *testing.T) {
	dir := savedReport(t, false)
	p := filepath.Join(dir, report.VerdictsFile)
	rs, err := report.LoadVerdicts(p)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Status == check.StatusViolation {
		rs[0].Status = check.StatusPass
	} else {
		rs[0].Status = check.StatusViolation
	}
	if err := report.SaveVerdicts(p, rs); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runCheck([]string{dir}, &out, &errb); code != exitDiffers {
		t.Fatalf("exit %d, want %d\n%s", code, exitDiffers, out.String())
	}
}

func TestCheckBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runCheck([]string{}, &out, &errb); code != exitUsage {
		t.Errorf("no DIR: exit %d", code)
	}
	if code := runCheck([]string{"--bogus", "x"}, &out, &errb); code != exitUsage {
		t.Errorf("unknown flag: exit %d", code)
	}
	if code := runCheck([]string{"--help"}, &out, &errb); code != exitOK {
		t.Errorf("--help: exit %d", code)
	}
	dir := t.TempDir()
	if code := runCheck([]string{dir}, &out, &errb); code != exitBadReport {
		t.Errorf("missing history: exit %d", code)
	}
	os.WriteFile(filepath.Join(dir, report.HistoryFile), []byte("{not json"), 0o644)
	errb.Reset()
	if code := runCheck([]string{dir}, &out, &errb); code != exitBadReport || !strings.Contains(errb.String(), "history") {
		t.Errorf("damaged history: exit %d: %s", code, errb.String())
	}
}

func TestReportRerenders(t *testing.T) {
	dir := savedReport(t, false)
	os.Remove(filepath.Join(dir, report.HTMLFile))
	before, _ := os.ReadFile(filepath.Join(dir, report.HistoryFile))
	var out, errb bytes.Buffer
	if code := runReport([]string{dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, report.HTMLFile)); err != nil {
		t.Error(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, report.HistoryFile))
	if !bytes.Equal(before, after) {
		t.Error("report must not rewrite history.json")
	}
}

func TestReportTiming(t *testing.T) {
	dir := savedReport(t, false)
	var out, errb bytes.Buffer
	if code := runReport([]string{"--timing", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "| partition-heal |") || !strings.Contains(out.String(), "**total**") || !strings.Contains(out.String(), "wall / longest unavoidable") {
		t.Errorf("timing output:\n%s", out.String())
	}
	out.Reset()
	if code := runReport([]string{"--timing", dir, dir}, &out, &errb); code != exitOK || strings.Count(out.String(), "| failover p50 |") != 1 {
		t.Fatalf("exit %d, side by side:\n%s%s", code, out.String(), errb.String())
	}
}
