// Command reconciler is the fenced reconciler fixture: one replica of a
// leader-elected controller that fences its writes to the sink with the
// Lease's term. See docs/reconciler.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fixtures/reconciler"
)

const saNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	cfg := reconciler.DefaultConfig()
	fs := flag.NewFlagSet("reconciler", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: reconciler [flags]\n\nOne replica of the fenced reconciler fixture. POD_NAME (downward API) names the pod.\nEvents go to stdout as 'FCEVENT {json}' lines; /healthz /readyz /metrics /status on --addr.\n\nflags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.LeaseName, "lease-name", cfg.LeaseName, "Lease used for leader election")
	fs.StringVar(&cfg.LeaseNamespace, "lease-namespace", "", "Lease namespace (default: POD_NAMESPACE, else the service-account namespace file)")
	fs.StringVar(&cfg.TermAnnotation, "term-annotation", cfg.TermAnnotation, "Lease annotation that carries the leader term")
	fs.StringVar(&cfg.SinkURL, "sink-url", cfg.SinkURL, "base URL of the sink (contract v1)")
	tokenFile := fs.String("sink-token-file", os.Getenv(SinkTokenFileEnv), "file holding the sink's writer token, sent as \"Authorization: Bearer <token>\" (default: $"+SinkTokenFileEnv+")")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", cfg.LeaseDuration, "lease TTL (should be >= 3x the apiserver jitter)")
	fs.DurationVar(&cfg.RenewDeadline, "renew-deadline", cfg.RenewDeadline, "a leader gives up if it cannot renew within this (must be < --lease-duration)")
	fs.DurationVar(&cfg.RetryPeriod, "retry-period", cfg.RetryPeriod, "interval between acquire/renew attempts")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "how long the stop path awaits the bridge's join")
	fs.IntVar(&cfg.BridgeCapacity, "bridge-capacity", cfg.BridgeCapacity, "epoch bridge channel depth")
	fs.DurationVar(&cfg.WriteInterval, "write-interval", cfg.WriteInterval, "interval between writes while leading (the producer runs ahead up to --bridge-capacity; the drain is not paced)")
	fs.IntVar(&cfg.Rows, "rows", cfg.Rows, "number of inventory rows in the plan (row-000...)")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address for health, metrics and status")
	fencing := fs.String("fencing", "on", "on, or off (broken: no epoch header, no fence call)")
	fs.BoolVar(&cfg.Modes.IgnoreDemotion, "ignore-demotion", false, "broken: keep writing with the old epoch after losing the lease")
	fs.BoolVar(&cfg.Modes.LiveEpoch, "live-epoch", false, "broken: stamp the live Lease term instead of the bridge's snapshot")
	fs.BoolVar(&cfg.Modes.NoDrain, "no-drain", false, "broken: drop the bridge buffer on producer stop")
	fs.BoolVar(&cfg.Modes.TermOnRenew, "term-on-renew", false, "broken: bump the term on renew")
	fs.BoolVar(&cfg.Modes.NoTermBump, "no-term-bump", false, "broken: keep the old term on takeover")
	fs.BoolVar(&cfg.Modes.TermRestartOnRecreate, "term-restart-on-recreate", false, "broken: a Lease created after a deletion starts again at term 1")
	fs.BoolVar(&cfg.Modes.SharedKeys, "shared-keys", false, "broken: the Idempotency-Key is the sequence number alone, reused by every term for other values")
	fs.Float64Var(&cfg.Modes.ClockRate, "clock-rate", 1, "fault: the lease clock runs at this rate of real time (0.5: the leader keeps acting twice as long without a renew); in (0, 1]")
	fs.DurationVar(&cfg.Modes.LeadDelay, "lead-delay", 0, "broken: a new leader waits this long before its fence and first write")
	fs.BoolVar(&cfg.ReleaseOnCancel, "release-on-cancel", false, "on shutdown, release the Lease once the bridge is joined (a successor takes over within a retry period)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig for running outside a cluster (default: in-cluster config)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "reconciler: unexpected arguments %q\n", fs.Args())
		return 2
	}
	switch *fencing {
	case "on":
	case "off":
		cfg.Modes.FencingOff = true
	default:
		fmt.Fprintf(os.Stderr, "reconciler: --fencing must be on or off, got %q\n", *fencing)
		return 2
	}
	if cfg.Modes.ClockRate <= 0 {
		fmt.Fprintf(os.Stderr, "reconciler: --clock-rate must be in (0, 1], got %g\n", cfg.Modes.ClockRate)
		return 2
	}
	cfg.PodName = os.Getenv("POD_NAME")
	if cfg.PodName == "" {
		cfg.PodName, _ = os.Hostname()
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = namespace()
	}
	cfg.Identity = reconciler.NewRandomIdentity(cfg.PodName)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "reconciler: invalid configuration:\n"+err.Error())
		return 2
	}

	token, err := readSinkToken(*tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 2
	}
	if token == "" {
		fmt.Fprintln(os.Stderr, "reconciler: no --sink-token-file (nor $"+SinkTokenFileEnv+"): writing to the sink without a credential")
	}

	restCfg, err := restConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 1
	}
	// Requests must fail within the renew deadline, or a partitioned leader
	// would hang in a request instead of giving up its term (client-go's
	// NewFromKubeconfig uses the same bound).
	restCfg.Timeout = max(cfg.RenewDeadline/2, time.Second)
	restCfg.UserAgent = "fencecheck-reconciler/" + cfg.Identity
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 1
	}
	sink := &client.Client{BaseURL: cfg.SinkURL, HTTP: &http.Client{Timeout: 5 * time.Second}, Token: token}
	rec, err := reconciler.New(cfg, kube, sink, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 1
	}
	srv := &http.Server{Handler: rec.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "reconciler: %s serving on %s, lease %s/%s, mode %s\n", cfg.Identity, ln.Addr(), cfg.LeaseNamespace, cfg.LeaseName, cfg.Modes.Names())

	err = rec.Run(ctx)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 1
	}
	return 0
}

// SinkTokenFileEnv names the writer-token file when --sink-token-file is
// not given (the manifests mount the Secret's key there).
const SinkTokenFileEnv = "FENCECHECK_SINK_TOKEN_FILE"

// readSinkToken reads the writer token: the file's content without
// surrounding whitespace; "" without a file. A named file that is missing
// or empty is an error, never a silent unauthenticated run.
func readSinkToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--sink-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--sink-token-file %s is empty", path)
	}
	return tok, nil
}

func namespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(saNamespaceFile); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("not in a cluster and no --kubeconfig: %w", err)
	}
	return c, nil
}
