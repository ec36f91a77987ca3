//go:build conformance

// Package suite is the fencecheck conformance suite on a live cluster, run
// with sigs.k8s.io/e2e-framework: one feature per scenario, each in a fresh
// namespace. e2e-framework's flags work (--kubeconfig, --feature,
// --skip-features, --labels ...), plus the suite's own (see TestMain).
// After the run it writes reports/<run-id>/ (history.json, verdicts.json,
// junit.xml, summary.md, index.html).
package suite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/fencecheck/fencecheck/chaos"
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/target/cluster"
)

var (
	testenv env.Environment
	drv     = &driver.Driver{}
	// ctrlDrv runs the user's controller (--controller); nil without it.
	ctrlDrv *driver.Driver

	seed            = flag.Int64("seed", time.Now().UnixNano()%1_000_000, "seed of the chaos schedule (recorded in the report)")
	reportsDir      = flag.String("reports", "", "directory for this run's reports (default <repo>/reports/<run-id>)")
	runID           = flag.String("run-id", "", "run id (default: UTC time)")
	deployTimeout   = flag.Duration("deploy-timeout", 3*time.Minute, "how long a Deployment may take to become ready")
	scenarioTimeout = flag.Duration("scenario-timeout", 2*time.Minute, "how long any one wait inside a scenario may take")
	executorName    = flag.String("executor", "auto", "chaos executor: auto, builtin, chaos-mesh")
	keepNamespaces  = flag.Bool("keep-namespaces", false, "keep each scenario's namespace for inspection")
	takeovers       = flag.Int("takeovers", 3, "partitions in the repeated-takeovers scenario")
	parallel        = flag.Int("parallel", defaultParallel, "scenarios run at once, each in its own namespace (1: one after another; a scenario marked Exclusive always runs alone)")
	quietGate       = flag.Bool("quiet-gate", true, "with --parallel above 1, keep every fault step, until its failover is over, apart from other scenarios' deploys (driver.Quiet): failover times as at 1")
	controllerDir   = flag.String("controller", "", "directory of a user's controller manifests to test instead of our fixture (docs/controller-contract.md); relative to the repository root")
	timing          = scenario.DefaultTiming()

	mu       sync.Mutex
	recorded []*history.Scenario
	started  time.Time
	// canPause is false under an executor with no process pause (Chaos
	// Mesh); notRunnable holds each scenario skipped for it, and why.
	canPause     = true
	executorUsed string
	notRunnable  = map[string]string{}
)

func init() {
	flag.DurationVar(&timing.LeaseDuration, "lease-duration", timing.LeaseDuration, "reconciler --lease-duration")
	flag.DurationVar(&timing.RenewDeadline, "renew-deadline", timing.RenewDeadline, "reconciler --renew-deadline")
	flag.DurationVar(&timing.RetryPeriod, "retry-period", timing.RetryPeriod, "reconciler --retry-period")
	flag.DurationVar(&timing.DrainTimeout, "drain-timeout", timing.DrainTimeout, "reconciler --drain-timeout")
	flag.DurationVar(&timing.WriteInterval, "write-interval", timing.WriteInterval, "reconciler --write-interval")
	flag.DurationVar(&timing.AbortLimit, "abort-limit", timing.AbortLimit, "how long a bridge may take to abort on shutdown")
	flag.DurationVar(&timing.Partition, "partition", timing.Partition, "length of one partition (at least 2x the lease)")
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s conformance: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, a...))
}

func repoRoot() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no go.mod above %s", dir)
}

func TestMain(m *testing.M) {
	started = time.Now()
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if *runID == "" {
		*runID = started.UTC().Format("20060102-150405")
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if *reportsDir == "" {
		*reportsDir = filepath.Join(root, "reports", *runID)
	}
	if cfg.KubeconfigFile() == "" {
		// controller-runtime registers --kubeconfig first, so e2e-framework's
		// own variable stays empty: read the flag, then $KUBECONFIG.
		if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
			cfg.WithKubeconfigFile(f.Value.String())
		} else {
			cfg.WithKubeconfigFile(os.Getenv("KUBECONFIG"))
		}
	}
	testenv = env.NewWithConfig(cfg)
	testenv.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if err := timing.Validate(); err != nil {
			return ctx, err
		}
		if *imageRepo != "" && cfg.KubeconfigFile() == "" {
			_, err := pushSuiteImages(ctx, "") // says what is wrong with the flag, or that there is no cluster
			return ctx, err
		}
		if cfg.KubeconfigFile() == "" {
			return ctx, fmt.Errorf("no cluster: pass --kubeconfig or set KUBECONFIG (make conformance brings the kind cluster up: scripts/conformance.sh)")
		}
		if _, err := os.Stat(cfg.KubeconfigFile()); err != nil {
			return ctx, fmt.Errorf("kubeconfig %s: %v: run `flock $FENCECHECK_CACHE/kind.lock make kind-up images` or pass --kubeconfig", cfg.KubeconfigFile(), err)
		}
		cl, err := cfg.NewClient()
		if err != nil {
			return ctx, fmt.Errorf("kubeconfig %s: %w", cfg.KubeconfigFile(), err)
		}
		// client-go's default limit, 5 requests a second (burst 10), is
		// shared by every scenario that runs at once: at --parallel 3 deploy
		// and collect queued behind it (12 waits over 1 s in one run of ten
		// scenarios). The apiserver's priority and fairness still guards it.
		rc := rest.CopyConfig(cl.RESTConfig())
		rc.QPS, rc.Burst = harnessQPS, 2*harnessQPS
		kube, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return ctx, err
		}
		v, err := kube.Discovery().ServerVersion()
		if err != nil {
			return ctx, fmt.Errorf("cluster at %s unreachable (%v): run `flock $FENCECHECK_CACHE/kind.lock make kind-up images` or pass --kubeconfig", cfg.KubeconfigFile(), err)
		}
		res, err := resources.New(rc)
		if err != nil {
			return ctx, err
		}
		if pushed, err = pushSuiteImages(ctx, cfg.KubeconfigFile()); err != nil {
			return ctx, err
		}
		ex, err := chaos.ByName(ctx, rc, *executorName, chaos.Options{Logf: logf, Images: pushed})
		if err != nil {
			return ctx, err
		}
		logf("cluster %s (kubernetes %s); chaos executor %s; installing it", rc.Host, v.GitVersion, ex.Name())
		_, canPause = ex.(chaos.Pauser)
		executorUsed = ex.Name()
		if err := ex.Install(ctx); err != nil {
			return ctx, fmt.Errorf("install chaos executor %s: %w (is the chaos-agent image loaded? scripts/images.sh chaos-agent)", ex.Name(), err)
		}
		target := cluster.New(cluster.Options{Kube: kube, Res: res, Exec: ex, Root: root, DeployTimeout: *deployTimeout, Keep: *keepNamespaces, Logf: logf, Images: pushed})
		var quiet *driver.Quiet
		if *parallel > 1 && *quietGate {
			quiet = driver.NewQuiet() // fault steps apart from other scenarios' deploys
		}
		*drv = driver.Driver{Target: target, Config: driver.Config{Timing: timing, Seed: *seed, RunID: *runID,
			Takeovers: *takeovers, WaitTimeout: *scenarioTimeout, Logf: logf, Quiet: quiet}}
		if *controllerDir != "" {
			dir := *controllerDir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(root, dir)
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return ctx, fmt.Errorf("--controller %s: not a directory of manifests", *controllerDir)
			}
			ct := cluster.New(cluster.Options{Kube: kube, Res: res, Exec: ex, Root: root, DeployTimeout: *deployTimeout, Keep: *keepNamespaces, Logf: logf, Controller: dir, Images: pushed})
			ctrlDrv = &driver.Driver{Target: ct, Config: drv.Config}
			logf("controller under test: %s (scenarios that need our fixture's modes run on our fixture)", dir)
		}
		return ctx, nil
	})
	code := testenv.Run(m)
	if ran() == 0 && code == 0 {
		// Nothing checked is not a pass (a --feature regex that matches
		// no scenario, say): the run fails and says so.
		fmt.Fprintln(os.Stderr, "conformance: no scenario ran (does --feature match a scenario name?): failing the run")
		code = 1
	}
	if err := writeReports(code); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: writing reports:", err)
		code = 1
	}
	os.Exit(code)
}

// ran is how many scenarios recorded a history.
func ran() int {
	mu.Lock()
	defer mu.Unlock()
	return len(recorded)
}

func writeReports(code int) error {
	mu.Lock()
	defer mu.Unlock()
	if err := os.MkdirAll(*reportsDir, 0o755); err != nil {
		return err
	}
	if len(recorded) == 0 {
		msg := fmt.Sprintf("# fencecheck conformance %s: NO SCENARIO RAN (exit %d)\n\nSetup failed or every feature was filtered out (a run that checks nothing fails); see the test output.\n", *runID, code) + notRunnableSection()
		return os.WriteFile(filepath.Join(*reportsDir, report.SummaryFile), []byte(msg), 0o644)
	}
	// Workers finish in any order: report in the scenarios' own order.
	rank := map[string]int{}
	for i, d := range scenario.All() {
		rank[d.Name] = i
	}
	sort.SliceStable(recorded, func(i, j int) bool { return rank[recorded[i].Name] < rank[recorded[j].Name] })
	r := &history.Run{Meta: history.Meta{RunID: *runID, Seed: *seed, Started: started, Ended: time.Now(),
		Versions: map[string]string{"go": runtime.Version()}, Flags: os.Args[1:]}, Scenarios: recorded}
	for src, ref := range pushed {
		r.Meta.Versions["image "+src] = ref // what ran, by digest (--image-repo)
	}
	results := check.Evaluate(r)
	if err := report.Write(*reportsDir, r, results); err != nil {
		return err
	}
	if extra := notRunnableSection(); extra != "" {
		f, err := os.OpenFile(filepath.Join(*reportsDir, report.SummaryFile), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(extra)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		logf("%d scenarios not runnable with the %s executor (listed in %s)", len(notRunnable), executorUsed, report.SummaryFile)
	}
	c := report.Count(results)
	logf("reports in %s: %d results, %d as expected, %d not, %d negative controls caught", *reportsDir, c.Total, c.OK, c.Failed, c.CaughtControls)
	return nil
}

type sessionKey struct{}

// state is one feature's session and how its setup went.
type state struct {
	s        *driver.Session
	setupErr error
}

// feature turns a scenario definition into an e2e-framework feature:
// setup deploys and records, one assessment applies the chaos, one judges
// the history, teardown keeps what was recorded and closes the namespace.
func feature(d scenario.Def) features.Feature {
	kind := "scenario"
	if d.NegativeControl() {
		kind = "negative-control"
	}
	return features.New(d.Name).
		WithLabel("kind", kind).
		WithLabel("chaos", string(d.Chaos)).
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if reason := unrunnable(d); reason != "" {
				mu.Lock()
				notRunnable[d.Name] = reason
				mu.Unlock()
				t.Skipf("%s: NOT RUNNABLE: %s", d.Name, reason) // nothing deployed yet: no teardown needed
			}
			// No t.Fatal here: at feature level it would skip the teardown.
			dr, note := driverFor(d)
			s, err := dr.Start(ctx, d)
			if note != "" {
				if s.Hist.UnderTest == nil {
					s.Hist.UnderTest = &history.UnderTest{Controller: "built-in fixture (manifests/reconciler)"}
				}
				s.Hist.UnderTest.Note = note
				t.Logf("%s: %s", d.Name, note)
			}
			if err != nil {
				t.Errorf("%s: setup: %v", d.Name, err)
			}
			return context.WithValue(ctx, sessionKey{}, &state{s: s, setupErr: err})
		}).
		Assess("chaos", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			st := ctx.Value(sessionKey{}).(*state)
			if st.setupErr != nil {
				t.Fatalf("%s: not run, the setup failed: %v", d.Name, st.setupErr)
			}
			if err := st.s.Chaos(ctx); err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			return ctx
		}).
		Assess("checks", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			h, err := ctx.Value(sessionKey{}).(*state).s.Finish(ctx)
			notApplicable(d, h)
			keep(h)
			if err != nil {
				t.Errorf("%s: collecting the history: %v", d.Name, err)
			}
			driver.Assess(h, t.Errorf, t.Logf)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			st, _ := ctx.Value(sessionKey{}).(*state)
			if st == nil || st.s == nil {
				return ctx
			}
			// Setup or chaos failed: keep what was recorded as evidence
			// (Finish returns the same history when it already ran).
			h, _ := st.s.Finish(context.WithoutCancel(ctx))
			notApplicable(d, h)
			keep(h)
			if err := st.s.Close(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("close %s: %v", st.s.NS, err)
			}
			return ctx
		}).Feature()
}

// unrunnable says why d cannot run with this run's executor ("" if it can).
func unrunnable(d scenario.Def) string {
	if canPause {
		return ""
	}
	switch d.Chaos {
	case scenario.PauseLeader:
		return fmt.Sprintf("it pauses a process, and the %s executor has no pause (docs/chaos.md); run it with --chaos=builtin", executorUsed)
	case scenario.MixedFaults, scenario.MixedEveryKind:
		// Their schedules draw pauses among the other kinds.
		return fmt.Sprintf("its schedule draws process pauses, and the %s executor has no pause (docs/chaos.md); run it with --chaos=builtin", executorUsed)
	}
	return ""
}

// notRunnableSection lists the scenarios skipped as not runnable, for the
// summary ("" when none).
func notRunnableSection() string {
	if len(notRunnable) == 0 {
		return ""
	}
	names := make([]string, 0, len(notRunnable))
	for n := range notRunnable {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Not runnable with the %s executor (%d scenarios, no verdict)\n\n", executorUsed, len(names))
	for _, n := range names {
		fmt.Fprintf(&b, "- %s: %s\n", n, notRunnable[n])
	}
	return b.String()
}

// driverFor is the driver of d: the user's controller's, unless there is
// none or d needs our fixture's modes (the note then says so).
func driverFor(d scenario.Def) (*driver.Driver, string) {
	if ctrlDrv == nil {
		return drv, ""
	}
	if m := d.FixtureModes(); len(m) > 0 {
		return drv, fmt.Sprintf("runs on our fixture, not on %s: it needs the fixture's %s", *controllerDir, strings.Join(m, " "))
	}
	return ctrlDrv, ""
}

// notApplicable: a user's controller without an event log is not judged
// on the checks that read it (once per history).
func notApplicable(d scenario.Def, h *history.Scenario) {
	if dr, _ := driverFor(d); dr != ctrlDrv || h == nil || h.Missing[history.EvidenceEvents] != nil {
		return
	}
	if scenario.EventChecksNotApplicable(h) {
		logf("%s: %s", d.Name, scenario.NoEventLog)
	}
}

// keep records a scenario's history for the run's reports, once.
func keep(h *history.Scenario) {
	mu.Lock()
	defer mu.Unlock()
	for _, r := range recorded {
		if r == h {
			return
		}
	}
	recorded = append(recorded, h)
}

// defaultParallel: three scenarios at once, with the quiet gate
// (driver.Quiet: no fault step, from before its injection to its new
// leader's first commit, beside another scenario's deploy). Without the
// gate, every run at 3 kept the verdicts, but failovers timed beside a
// deploy took 5.42 s against 4.95 s (s16-bench-p3, 16 of 44). With it,
// the whole suite at 3 gave 5.07 / 5.73 / 5.92 s (p50 / p90 / p99)
// against 5.27 / 6.22 / 6.56 s at 1, same seed (s17-final), in 0.36x
// the wall. At 4 (speed-b1-p4, before the gate) a drain overran
// drain_timeout; at 2 the tail grew 6% (docs/ci.md). The suite's
// --parallel is registered before e2e-framework parses its flags, so it
// replaces e2e-framework's own --parallel (a bool, every feature at once).
const defaultParallel = 3

// harnessQPS is the suite's client-side request rate to the apiserver.
const harnessQPS = 100

func TestConformance(t *testing.T) {
	if *parallel < 1 {
		t.Fatalf("--parallel must be at least 1, got %d", *parallel)
	}
	logf("running %d scenarios, %d at a time", len(scenario.All()), *parallel)
	// One feature per testenv.Test call, so each worker runs its own;
	// e2e-framework's --feature filters still apply to each.
	driver.RunAll(*parallel, scenario.All(), func(d scenario.Def) { testenv.Test(t, feature(d)) })
}
