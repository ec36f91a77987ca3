package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/report"
)

// The reports are a pure function of history.json: `fencecheck report`
// on a saved run (testdata/saved/*: real runs, trimmed to a few
// scenarios, a negative control among them, with the reports the run's
// own build rendered) writes summary.md, index.html, junit.xml and the
// linearizability pages byte for byte as they were, and `fencecheck
// check` judges it as it was. README.md in testdata/saved says where each
// run comes from.
func TestSavedRunsRerenderByteForByte(t *testing.T) {
	runs, err := filepath.Glob(filepath.Join("testdata", "saved", "*", report.HistoryFile))
	if err != nil || len(runs) == 0 {
		t.Fatalf("no saved run in testdata/saved (%v)", err)
	}
	for _, h := range runs {
		saved := filepath.Dir(h)
		t.Run(filepath.Base(saved), func(t *testing.T) {
			// The run's own verdicts say whether it passed (a saved run
			// may keep a control that escaped); the re-check says the same.
			rs, err := report.LoadVerdicts(filepath.Join(saved, report.VerdictsFile))
			if err != nil {
				t.Fatal(err)
			}
			wantCode := exitOK
			if !check.AllOK(rs) {
				wantCode = exitFailed
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, report.HistoryFile), mustRead(t, h), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := runReport([]string{dir}, &out, &errb); code != wantCode {
				t.Fatalf("fencecheck report: exit %d\n%s%s", code, out.String(), errb.String())
			}
			pages, _ := filepath.Glob(filepath.Join(saved, "linearizable-*.html"))
			want := []string{report.SummaryFile, report.HTMLFile, report.JUnitFile}
			for _, p := range pages {
				want = append(want, filepath.Base(p))
			}
			for _, f := range want {
				if got := mustRead(t, filepath.Join(dir, f)); !bytes.Equal(got, mustRead(t, filepath.Join(saved, f))) {
					t.Errorf("%s re-rendered differs from the saved one (%d bytes, saved %d)", f, len(got), len(mustRead(t, filepath.Join(saved, f))))
				}
			}
			written, _ := filepath.Glob(filepath.Join(dir, "linearizable-*.html"))
			if len(written) != len(pages) {
				t.Errorf("%d linearizability pages re-rendered, %d saved", len(written), len(pages))
			}
			out.Reset()
			if code := runCheck([]string{saved}, &out, &errb); code != wantCode || !strings.Contains(out.String(), "identical to the saved verdicts.json") {
				t.Errorf("fencecheck check on the saved run: exit %d, want %d\n%s", code, wantCode, out.String())
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
