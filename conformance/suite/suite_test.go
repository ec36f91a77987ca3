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
	"maps"
	"os"
	"path/filepath"
	"runtime"
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
	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/target/cluster"
)

var (
	testenv env.Environment
	// target runs the scenarios: our fixture, or the user's controller
	// (--controller); fixture then runs those that need our fixture's
	// modes. Both are set by the environment's setup.
	target, fixture driver.Target
	root            string
	// clusterVersions is what the history records of the cluster (the
	// apiserver's and the nodes' versions), read in setup.
	clusterVersions map[string]string

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

	started time.Time
	// ran is the run RunSuite returned (nil until it did, or if setup failed).
	ran *history.Run
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
	root, err = repoRoot()
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
		if clusterVersions, err = collect.ClusterVersions(ctx, kube); err != nil {
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
		logf("cluster %s (kubernetes %s, kubelet %s); chaos executor %s; installing it", rc.Host, clusterVersions["kubernetes"], clusterVersions["kubelet"], ex.Name())
		if err := ex.Install(ctx); err != nil {
			return ctx, fmt.Errorf("install chaos executor %s: %w (is the chaos-agent image loaded? scripts/images.sh chaos-agent)", ex.Name(), err)
		}
		target = cluster.New(cluster.Options{Kube: kube, Res: res, Exec: ex, Root: root, DeployTimeout: *deployTimeout, Keep: *keepNamespaces, Logf: logf, Images: pushed})
		if *controllerDir != "" {
			dir := *controllerDir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(root, dir)
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return ctx, fmt.Errorf("--controller %s: not a directory of manifests", *controllerDir)
			}
			fixture = target
			target = cluster.New(cluster.Options{Kube: kube, Res: res, Exec: ex, Root: root, DeployTimeout: *deployTimeout, Keep: *keepNamespaces, Logf: logf, Controller: dir, Images: pushed})
			logf("controller under test: %s (scenarios that need our fixture's modes run on our fixture)", dir)
		}
		return ctx, nil
	})
	code := testenv.Run(m)
	if ran == nil || len(ran.Scenarios) == 0 {
		// Nothing checked is not a pass (a --feature regex that matches
		// no scenario, say): the run fails and says so.
		fmt.Fprintln(os.Stderr, "conformance: no scenario ran (does --feature match a scenario name?): failing the run")
		code = 1
		if err := noRunReport(code); err != nil {
			fmt.Fprintln(os.Stderr, "conformance: writing reports:", err)
		}
	}
	os.Exit(code)
}

// noRunReport writes the summary of a run that judged nothing (setup
// failed, or every scenario was filtered out or not runnable): no
// history, so no other report.
func noRunReport(code int) error {
	if err := os.MkdirAll(*reportsDir, 0o755); err != nil {
		return err
	}
	var notRunnable []history.NotRunnable
	if ran != nil {
		notRunnable = ran.NotRunnable
	}
	why := fmt.Sprintf("exit %d: setup failed or every feature was filtered out (a run that checks nothing fails); see the test output", code)
	return os.WriteFile(filepath.Join(*reportsDir, report.SummaryFile), report.NothingRan(*runID, why, notRunnable), 0o644)
}

// selected are the scenarios e2e-framework's filters (--feature,
// --skip-features, --labels, --skip-labels) let through: one feature per
// scenario, labelled by kind and chaos, whose one assessment only takes
// it; RunSuite then runs them.
func selected(t *testing.T) []scenario.Def {
	var mu sync.Mutex
	var out []scenario.Def
	var fs []features.Feature
	for _, d := range scenario.All() {
		kind := "scenario"
		if d.NegativeControl() {
			kind = "negative-control"
		}
		fs = append(fs, features.New(d.Name).WithLabel("kind", kind).WithLabel("chaos", d.Chaos()).
			Assess("selected", func(ctx context.Context, _ *testing.T, _ *envconf.Config) context.Context {
				mu.Lock()
				out = append(out, d)
				mu.Unlock()
				return ctx
			}).Feature())
	}
	testenv.Test(t, fs...)
	return out
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
	defs := selected(t)
	meta := history.Meta{RunID: *runID, Seed: *seed, Versions: map[string]string{"go": runtime.Version()}, Flags: os.Args[1:]}
	maps.Copy(meta.Versions, clusterVersions)
	for src, ref := range pushed {
		meta.Versions["image "+src] = ref // what ran, by digest (--image-repo)
	}
	opts := driver.Options{
		Config: driver.Config{Timing: timing, Seed: *seed, RunID: *runID, Takeovers: *takeovers, WaitTimeout: *scenarioTimeout, Logf: logf},
		// Fault steps apart from other scenarios' deploys.
		Parallel: *parallel, QuietGate: *quietGate,
		Fixture: fixture, Controller: *controllerDir, Meta: meta, Reports: *reportsDir,
		// One subtest per judged scenario, apart from its selection's.
		Judged: func(h *history.Scenario, rs []check.Result, err error) {
			t.Run(h.Name+" verdicts", func(t *testing.T) {
				for _, p := range driver.Problems(h, rs, err) {
					t.Error(p)
				}
			})
		},
	}
	var err error
	ran, err = driver.RunSuite(context.Background(), target, defs, opts)
	for _, n := range ran.NotRunnable {
		t.Logf("%s: NOT RUNNABLE: %s", n.Scenario, n.Reason)
	}
	if err != nil {
		t.Error(err)
	}
}
