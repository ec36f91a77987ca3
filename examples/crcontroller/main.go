// Command crcontroller is a second, independent leader-elected controller
// for the conformance suite: a controller-runtime manager whose only
// leader-election Runnable writes an inventory plan to the sink. It is
// tested through `make conformance CONTROLLER=examples/crcontroller/deploy/...`
// exactly as a user's controller would be (docs/controller-contract.md).
//
//	--lock=term     the manager elects through LeaderElectionResourceLockInterface
//	                with fencecheck's term lock (camel.io/leader-term +1 on
//	                takeover); the Runnable fences, then writes through the
//	                epoch bridge stamped with its spawn-time term, and logs
//	                FCEVENT lines. Losing the Lease drains the bridge within
//	                drain_timeout; the process then stands again with a new
//	                manager (one process per pod keeps its event log whole).
//	--lock=default  what users typically have: the manager's own Lease lock,
//	                no term, no fence, no epoch on writes, no event log; the
//	                process exits when it loses the Lease.
//
// Everything else comes from the environment the suite injects:
// FENCECHECK_NAMESPACE, FENCECHECK_LEASE_NAME, FENCECHECK_SINK_URL,
// FENCECHECK_POD_NAME, FENCECHECK_{LEASE_DURATION,RENEW_DEADLINE,
// RETRY_PERIOD,DRAIN_TIMEOUT,WRITE_INTERVAL} and, when the sink wants a
// credential, FENCECHECK_SINK_TOKEN_FILE.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/fixtures/reconciler/termlock"
	"github.com/fencecheck/fencecheck/leader"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		log.Printf("crcontroller: %v", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("crcontroller", flag.ContinueOnError)
	lockKind := fs.String("lock", "term", "term (fencecheck's term lock, fence, bridge) or default (controller-runtime's Lease lock, unfenced)")
	addr := fs.String("addr", ":8081", "address of /healthz and /readyz")
	rows := fs.Int("rows", 16, "rows of the inventory plan")
	capacity := fs.Int("bridge-capacity", 0, "bridge depth (0: the ADR's 128)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig for running outside a cluster (default: in-cluster config)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg.Rows, cfg.BridgeCapacity = *rows, *capacity
	if *lockKind != "term" && *lockKind != "default" {
		return fmt.Errorf("--lock must be term or default, not %q", *lockKind)
	}
	rc, err := rest.InClusterConfig()
	if *kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("apiserver config: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go serveHealth(*addr)
	sink, err := NewSink(cfg.SinkURL, cfg.TokenFile)
	if err != nil {
		return err
	}
	if *lockKind == "default" {
		return runDefault(ctx, rc, cfg, sink)
	}
	return runTerm(ctx, rc, cfg, sink, os.Stdout)
}

// options are the manager options both modes share: no metrics or probe
// listeners of the manager's own (a fresh manager per term would rebind
// them), the suite's lease timing.
func options(cfg Config) ctrl.Options {
	return ctrl.Options{
		LeaderElection: true, LeaderElectionID: cfg.LeaseName, LeaderElectionNamespace: cfg.Namespace,
		LeaseDuration: &cfg.LeaseDuration, RenewDeadline: &cfg.RenewDeadline, RetryPeriod: &cfg.RetryPeriod,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	}
}

// runTerm stands for election with the term lock until shutdown; every
// lost term is drained before the next manager stands.
func runTerm(ctx context.Context, rc *rest.Config, cfg Config, sink *Sink, stdout io.Writer) error {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	id := leader.NewIdentity(cfg.Pod, rand.Uint32())
	events := eventlog.NewWriter(stdout, cfg.Pod, id)
	events.Emit(eventlog.Event{Kind: eventlog.KindStarted, Detail: fmt.Sprintf("crcontroller --lock=term lease=%s/%s sink=%s lease_duration=%v renew_deadline=%v retry_period=%v drain_timeout=%v write_interval=%v token=%t",
		cfg.Namespace, cfg.LeaseName, cfg.SinkURL, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, cfg.DrainTimeout, cfg.WriteInterval, sink.HasToken())})
	// One lock for the process: it keeps the highest term it has seen
	// across managers (a re-created Lease goes above it).
	lock := &termlock.Lock{Client: kube.CoordinationV1(), Namespace: cfg.Namespace, Name: cfg.LeaseName, ID: id}
	go lock.Follow(ctx) // every term of every incarnation counts (termlock.Follow)
	for ctx.Err() == nil {
		opt := options(cfg)
		opt.LeaderElectionResourceLockInterface = lock
		mgr, err := ctrl.NewManager(rc, opt)
		if err != nil {
			return fmt.Errorf("manager: %w", err)
		}
		w := &FencedWriter{Cfg: cfg, Sink: sink, Events: events, Term: lock.Term, Root: ctx, done: make(chan struct{})}
		if err := mgr.Add(w); err != nil {
			return err
		}
		err = mgr.Start(ctx)
		// The manager does not wait for its Runnables once the Lease is
		// lost: the process does, within drain_timeout, before it stands
		// again (or exits).
		if w.Wait(cfg.DrainTimeout + time.Second) {
			log.Printf("manager ended (%v); writer stopped", err)
		} else if w.started.Load() {
			log.Printf("manager ended (%v); writer did not stop within drain_timeout %v", err, cfg.DrainTimeout)
		} else if err != nil {
			log.Printf("manager ended before leading: %v; standing again after %v", err, cfg.RetryPeriod)
			pause(ctx, cfg.RetryPeriod) // a back-off, so a failing start cannot spin
		}
	}
	events.Emit(eventlog.Event{Kind: eventlog.KindStopped, Detail: "shutdown"})
	return nil
}

// runDefault is the unfenced manager: its writer stops with the manager,
// and the process exits when the Lease is lost, as controller-runtime asks.
func runDefault(ctx context.Context, rc *rest.Config, cfg Config, sink *Sink) error {
	log.Printf("crcontroller --lock=default lease=%s/%s sink=%s", cfg.Namespace, cfg.LeaseName, cfg.SinkURL)
	mgr, err := ctrl.NewManager(rc, options(cfg))
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := mgr.Add(&PlainWriter{Cfg: cfg, Sink: sink, Identity: cfg.Pod}); err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func serveHealth(addr string) {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	if err := http.ListenAndServe(addr, mux); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("health server: %v", err)
	}
}
