package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// Exit codes of check and report.
const (
	exitOK        = 0
	exitFailed    = 1 // a verdict differs from what its scenario expects
	exitUsage     = 2
	exitDiffers   = 3 // the re-check differs from the saved verdicts.json
	exitBadReport = 4 // the report directory cannot be read
)

func init() {
	register("check", "re-check a saved run (DIR/history.json) offline with the same verdicts", func(args []string) int {
		return runCheck(args, os.Stdout, os.Stderr)
	})
	register("report", "re-render the reports of a saved run (DIR/history.json) from its history", func(args []string) int {
		return runReport(args, os.Stdout, os.Stderr)
	})
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print the evidence of every verdict, not only of unexpected ones")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: fencecheck check [-v] DIR

Re-runs every check on DIR/history.json, compares each verdict with what
its scenario expects (a caught negative control is as expected), and, when
DIR/verdicts.json exists, with the verdicts saved by the run.
Exit 0: all as expected and identical to the saved verdicts; 1: a verdict
is not as expected; 3: the re-check differs from verdicts.json; 2: usage;
4: DIR cannot be read.`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, 1); !ok {
		return code
	}
	dir := fs.Arg(0)
	run, ok := loadRun(stderr, "check", dir)
	if !ok {
		return exitBadReport
	}
	results := check.Evaluate(run)
	for _, r := range results {
		mark := "ok  "
		if !r.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(stdout, "%s %s/%s: expected %s, %s\n", mark, r.Scenario, r.Check, r.Expected, r.Outcome())
		if !r.OK || *verbose {
			for _, e := range r.Evidence {
				fmt.Fprintf(stdout, "       %s\n", e)
			}
		}
	}
	c := report.Count(results)
	fmt.Fprintf(stdout, "%d results: %d as expected, %d not (%d negative controls caught, %d informative)\n", c.Total, c.OK, c.Failed, c.CaughtControls, c.Informative)
	code := exitOK
	if c.Failed > 0 {
		code = exitFailed
	}
	saved, err := report.LoadVerdicts(filepath.Join(dir, report.VerdictsFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintln(stdout, "no verdicts.json saved: nothing to compare with")
	case err != nil:
		fmt.Fprintf(stderr, "fencecheck check: %v\n", err)
		return exitBadReport
	default:
		if d := report.Diff(saved, results); len(d) > 0 {
			fmt.Fprintf(stdout, "the re-check differs from %s:\n", report.VerdictsFile)
			for _, line := range d {
				fmt.Fprintf(stdout, "  %s\n", line)
			}
			if code == exitOK {
				code = exitDiffers
			}
		} else {
			fmt.Fprintf(stdout, "identical to the saved %s\n", report.VerdictsFile)
		}
	}
	return code
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timing := fs.Bool("timing", false, "only print each scenario's wall time against its unavoidable waits and the run's (Markdown), write nothing; with several DIRs, the runs side by side")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: fencecheck report [--timing] DIR
       fencecheck report --timing DIR DIR...

Re-checks DIR/history.json and rewrites verdicts.json, junit.xml,
summary.md and index.html in DIR (history.json is not touched).`)
		fs.PrintDefaults()
	}
	// --timing takes several DIRs.
	n := 1
	if slices.ContainsFunc(args, func(a string) bool { return strings.TrimLeft(a, "-") == "timing" }) {
		n = max(len(args)-1, 1)
	}
	if code, ok := parseArgs(fs, args, n); !ok {
		return code
	}
	if *timing && fs.NArg() > 1 {
		return timingSideBySide(fs.Args(), stdout, stderr)
	}
	dir := fs.Arg(0)
	run, ok := loadRun(stderr, "report", dir)
	if !ok {
		return exitBadReport
	}
	if *timing {
		fmt.Fprint(stdout, report.TimingTable(scenario.MeasureWaits(run)))
		fmt.Fprint(stdout, "\n"+report.RunTable(report.MeasureRun(run)))
		return exitOK
	}
	results := check.Evaluate(run)
	if err := report.Render(dir, run, results); err != nil {
		fmt.Fprintf(stderr, "fencecheck report: %v\n", err)
		return exitBadReport
	}
	fmt.Fprintf(stdout, "wrote %s, %s, %s, %s in %s\n", report.VerdictsFile, report.JUnitFile, report.SummaryFile, report.HTMLFile, dir)
	if !check.AllOK(results) {
		return exitFailed
	}
	return exitOK
}

// timingSideBySide prints the runs of dirs side by side.
func timingSideBySide(dirs []string, stdout, stderr io.Writer) int {
	var rts []report.RunTiming
	for _, d := range dirs {
		run, ok := loadRun(stderr, "report", d)
		if !ok {
			return exitBadReport
		}
		rts = append(rts, report.MeasureRun(run))
	}
	fmt.Fprint(stdout, report.RunTable(rts...))
	return exitOK
}

// loadRun reads DIR/history.json for subcommand cmd, saying why it cannot.
func loadRun(stderr io.Writer, cmd, dir string) (*history.Run, bool) {
	run, err := history.Load(filepath.Join(dir, report.HistoryFile))
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck %s: %v\n", cmd, err)
		return nil, false
	}
	return run, true
}
