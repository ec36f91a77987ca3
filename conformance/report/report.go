// Package report writes a run's reports into one directory:
// history.json (the evidence), verdicts.json (what the checks said),
// junit.xml (one testcase per scenario×check), summary.md and index.html
// (with an SVG timeline per scenario).
package report

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// File names inside a report directory.
const (
	HistoryFile  = "history.json"
	VerdictsFile = "verdicts.json"
	JUnitFile    = "junit.xml"
	SummaryFile  = "summary.md"
	HTMLFile     = "index.html"
)

// Write saves the history and renders every report from it.
func Write(dir string, run *history.Run, results []check.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := history.Save(filepath.Join(dir, HistoryFile), run); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return Render(dir, run, results)
}

// Render writes every report except history.json.
func Render(dir string, run *history.Run, results []check.Result) error {
	if err := SaveVerdicts(filepath.Join(dir, VerdictsFile), results); err != nil {
		return err
	}
	files := map[string][]byte{
		JUnitFile:   JUnit(run, results),
		SummaryFile: Markdown(run, results),
		HTMLFile:    HTML(run, results),
	}
	for _, s := range run.Scenarios {
		for _, r := range results {
			if r.Scenario == s.Name && linearizabilityViolated(r) {
				files[check.LinearizabilityFile(s.Name)] = linearizabilityPage(s)
			}
		}
	}
	for name, b := range files {
		if err := writeAtomic(filepath.Join(dir, name), b); err != nil {
			return fmt.Errorf("report: %s: %w", name, err)
		}
	}
	return nil
}

// linearizabilityViolated: the result is a linearizable violation, whose
// scenario gets porcupine's visualization next to the reports.
func linearizabilityViolated(r check.Result) bool {
	return r.Check == check.Linearizable && r.Status != check.StatusPass && r.Status != check.StatusInconclusive
}

// linearizabilityPage is porcupine's visualization of s, or a page that
// says why there is none, so the reports' link never dangles.
func linearizabilityPage(s *history.Scenario) []byte {
	b, ok, err := check.LinearizabilityHTML(s)
	if ok {
		return b
	}
	why := "the history is linearizable when judged again"
	if err != nil {
		why = err.Error()
	}
	return []byte("<!doctype html><html><body><p>No visualization: " + html.EscapeString(why) + "</p></body></html>\n")
}

// SaveVerdicts writes the results as JSON.
func SaveVerdicts(path string, results []check.Result) error {
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'))
}

// LoadVerdicts reads a verdicts.json.
func LoadVerdicts(path string) ([]check.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rs []check.Result
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Counts summarises results.
type Counts struct{ Total, OK, Failed, CaughtControls, Informative int }

// Count tallies results.
func Count(rs []check.Result) Counts {
	var c Counts
	for _, r := range rs {
		c.Total++
		if r.OK {
			c.OK++
		} else {
			c.Failed++
		}
		switch r.Outcome() {
		case check.Caught:
			c.CaughtControls++
		case check.Informative:
			c.Informative++
		}
	}
	return c
}

// Diff lists the differences between two sets of results (saved vs
// re-checked), keyed by scenario/check.
func Diff(a, b []check.Result) []string {
	key := func(r check.Result) string { return r.Scenario + "/" + r.Check }
	am := map[string]check.Result{}
	for _, r := range a {
		am[key(r)] = r
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range b {
		k := key(r)
		seen[k] = true
		o, ok := am[k]
		switch {
		case !ok:
			out = append(out, k+": not in the saved verdicts")
		case o.Status != r.Status || o.Expected != r.Expected || o.OK != r.OK:
			out = append(out, fmt.Sprintf("%s: saved %s expected=%s, now %s expected=%s", k, o.Status, o.Expected, r.Status, r.Expected))
		case fmt.Sprint(o.Evidence) != fmt.Sprint(r.Evidence):
			out = append(out, k+": same verdict, different evidence")
		}
	}
	for _, r := range a {
		if !seen[key(r)] {
			out = append(out, key(r)+": saved, but not produced now")
		}
	}
	return out
}
