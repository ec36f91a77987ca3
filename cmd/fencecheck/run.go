package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/localrun"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/target/local"
	"github.com/fencecheck/fencecheck/internal/kubetest"
)

func init() {
	register("run", "run the conformance scenarios on the local target (no cluster: etcd, kube-apiserver and our processes)", func(args []string) int {
		return runRun(args, os.Stdout, os.Stderr)
	})
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "where the scenarios run: local (the cluster target is `make conformance`)")
	scenarios := fs.String("scenarios", "", "a regexp: run only the scenarios it matches (default: all)")
	reports := fs.String("reports", "", "the report directory (default: reports/<run-id>, with reports/latest pointing at it)")
	runID := fs.String("run-id", "", "the run's id (default: local-<UTC time>)")
	seed := fs.Int64("seed", 0, "chaos schedule seed (default: random, recorded in the history)")
	takeovers := fs.Int("takeovers", 3, "takeovers per chaos scenario")
	binDir := fs.String("bin-dir", "", "a directory holding sink, witness and reconciler already built (default: go build them from this module)")
	kubeBins := fs.String("kube-bin-dir", "", "the directory with etcd and kube-apiserver (default: $"+kubetest.EnvBinDir+" or the newest scripts/k8s-bins.sh build)")
	timeout := fs.Duration("scenario-timeout", time.Minute, "the bound of every wait in a scenario")
	parallel := fs.Int("parallel", 3, "scenarios run at once, each with its own processes, behind the quiet gate (fault steps kept apart from other scenarios' starts), as on the cluster")
	list := fs.Bool("list", false, "list the selected scenarios and whether the local target can run each, then exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: fencecheck run --target local [flags]

Runs the conformance scenarios with the same checks and reports as
make conformance (history.json, verdicts.json, summary.md, index.html,
junit.xml), on the local target: one etcd and kube-apiserver, the sink, the
witness and three reconcilers as processes on this machine. It needs only
etcd and kube-apiserver (bash scripts/k8s-bins.sh --apiserver-only), not
docker or a node image. Scenarios that need what the local target lacks
are recorded as not runnable, with why. After the run the reports are
re-checked offline (fencecheck check).
Exit 0: every verdict as expected; 1: not; 2: usage; 4: the run could not
start (a missing binary, no apiserver).`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, 0); !ok {
		return code
	}
	switch *target {
	case "local":
	case "":
		fmt.Fprintln(stderr, "run: --target is required: local (the kind cluster is `make conformance`)")
		return exitUsage
	default:
		fmt.Fprintf(stderr, "run: unknown target %q: local is the only one here; the kind cluster is `make conformance`\n", *target)
		return exitUsage
	}
	if *parallel < 1 {
		fmt.Fprintf(stderr, "run: --parallel %d: at least 1\n", *parallel)
		return exitUsage
	}
	sel, err := regexp.Compile(*scenarios)
	if err != nil {
		fmt.Fprintf(stderr, "run: --scenarios: %v\n", err)
		return exitUsage
	}
	defs := scenario.Matching(sel)
	if len(defs) == 0 {
		fmt.Fprintf(stderr, "run: no scenario matches --scenarios=%q (fencecheck run --target local --list lists them)\n", *scenarios)
		return exitUsage
	}
	if *list {
		for _, d := range defs {
			why := driver.NotRunnable(local.New(local.Options{}), d)
			if why == "" {
				why = "runnable"
			} else {
				why = "not runnable: " + why
			}
			fmt.Fprintf(stdout, "%-44s %s\n", d.Name, why)
		}
		return exitOK
	}
	if *runID == "" {
		*runID = "local-" + time.Now().UTC().Format("20060102-150405")
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lr := localRun{stdout: stdout, start: time.Now()}
	code := lr.run(ctx, runOptions{defs: defs, reports: *reports, runID: *runID, seed: *seed, takeovers: *takeovers,
		binDir: *binDir, kubeBins: *kubeBins, timeout: *timeout, parallel: *parallel, flags: append([]string{"run"}, args...)})
	return code
}

type runOptions struct {
	defs             []scenario.Def
	reports, runID   string
	seed             int64
	takeovers        int
	binDir, kubeBins string
	timeout          time.Duration
	parallel         int
	flags            []string // the command line, for the history
}

// localRun prints progress lines with the time since the start.
type localRun struct {
	stdout io.Writer
	start  time.Time
}

func (lr localRun) logf(format string, a ...any) {
	fmt.Fprintf(lr.stdout, "%s +%4ds  %s\n", time.Now().UTC().Format("15:04:05.000"), int(time.Since(lr.start).Seconds()), fmt.Sprintf(format, a...))
}

func (lr localRun) run(ctx context.Context, o runOptions) int {
	work, err := os.MkdirTemp("", "fencecheck-run-")
	if err != nil {
		lr.logf("run: %v", err)
		return exitBadReport
	}
	defer os.RemoveAll(work)
	reports := o.reports
	latest := reports == ""
	if latest {
		reports = filepath.Join("reports", o.runID)
	}
	lr.logf("%d scenarios on the local target, %d at a time; reports in %s", len(o.defs), o.parallel, reports)
	var done atomic.Int32 // Judged may be called from several goroutines
	run, err := localrun.Run(ctx, localrun.Options{Defs: o.defs, BinDir: o.binDir, KubeBinDir: o.kubeBins, Work: work, Logf: lr.logf,
		Suite: driver.Options{
			Config: driver.Config{Timing: scenario.DefaultTiming(), Seed: o.seed, RunID: o.runID, Takeovers: o.takeovers, WaitTimeout: o.timeout, Logf: lr.logf},
			Meta:   history.Meta{RunID: o.runID, Seed: o.seed, Flags: o.flags},
			Judged: func(h *history.Scenario, rs []check.Result, err error) {
				c := report.Count(rs)
				lr.logf("[%d/%d] %s: %d of %d as expected", done.Add(1), len(o.defs), h.Name, c.OK, c.Total)
			},
			Reports:  reports,
			Parallel: o.parallel, QuietGate: true,
		}})
	if err != nil {
		lr.logf("run: %v", err)
		if run == nil || len(run.Scenarios) == 0 {
			return exitBadReport
		}
		return exitFailed
	}
	if latest {
		link := filepath.Join("reports", "latest")
		_ = os.Remove(link)
		if err := os.Symlink(o.runID, link); err != nil {
			lr.logf("run: reports/latest: %v", err)
		}
	}
	for _, n := range run.NotRunnable {
		lr.logf("NOT RUNNABLE %s: %s", n.Scenario, n.Reason)
	}
	// The same offline re-check as make conformance: the saved history
	// judged again must give the saved verdicts.
	var recheck strings.Builder
	rc := runCheck([]string{reports}, &recheck, &recheck)
	if err := os.WriteFile(filepath.Join(reports, "recheck.txt"), []byte(recheck.String()), 0o644); err != nil {
		lr.logf("run: %v", err)
	}
	lr.logf("offline re-check: exit %d (%s)", rc, filepath.Join(reports, "recheck.txt"))
	lr.logf("report: %s", filepath.Join(reports, report.HTMLFile))
	if rc != exitOK {
		return exitFailed
	}
	return exitOK
}
