// Command chaos-agent is the built-in NetworkChaos executor, one per node
// (DaemonSet, manifests/chaos). It applies partitions to the pods on its own
// node as routes in their network namespaces and heals them at the
// deadline, on deletion, on its own start (leftovers) and on shutdown.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/chaos/agent"
	"github.com/fencecheck/fencecheck/chaos/netrules"
	"github.com/fencecheck/fencecheck/chaos/plan"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	fs := flag.NewFlagSet("chaos-agent", flag.ContinueOnError)
	node := fs.String("node", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME, from the downward API)")
	dir := fs.String("netns-dir", netrules.DefaultDir, "where the container runtime mounts pod network namespaces")
	health := fs.String("health-addr", "127.0.0.1:9377", "address for /livez (the heal loop's progress) and /readyz (empty: none)")
	ledger := fs.String("ledger-dir", agent.DefaultLedgerDir, "the node ledger's directory (a hostPath: deadlines survive the agent)")
	cgroupRoot := fs.String("cgroup-root", "/sys/fs/cgroup", "the node's cgroup tree (PodPause freezes containers there)")
	ownNS := fs.String("agent-namespace", os.Getenv("POD_NAMESPACE"), "the agent's own namespace, never a target (default $POD_NAMESPACE)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default: in-cluster)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: chaos-agent [flags]\n\nApplies chaos-mesh.org/v1alpha1 NetworkChaos partitions and chaos.fencecheck.io/v1alpha1 PodPause freezes to the pods on this node.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "chaos-agent: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if *node == "" {
		log.Fatal("chaos-agent: --node or $NODE_NAME is required")
	}
	var cfg *rest.Config
	var err error
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		log.Fatalf("chaos-agent: kube config: %v", err)
	}
	cfg.UserAgent = "fencecheck-chaos-agent/" + *node
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if *ownNS == "" {
		log.Fatal("chaos-agent: --agent-namespace or $POD_NAMESPACE is required (it is never a target)")
	}
	a := &agent.Agent{Node: *node, NS: &agent.LinuxNamespaces{Dir: *dir}, Dyn: dyn, Logf: log.Printf,
		Scope: plan.Scope{AgentNamespace: *ownNS}, Ledger: &agent.Ledger{Dir: *ledger}, Freezer: &agent.CgroupFreezer{Root: *cgroupRoot}}
	if *health != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
			if !a.Live() {
				http.Error(w, fmt.Sprintf("heal loop stalled: last round %v", a.LastHeal()), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !a.Ready() {
				http.Error(w, "first reconcile not done", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		srv := &http.Server{Addr: *health, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { log.Fatal(srv.ListenAndServe()) }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	log.Printf("chaos-agent on node %s, netns dir %s", *node, *dir)
	if err := a.Run(ctx, kube); err != nil && ctx.Err() == nil {
		log.Fatalf("chaos-agent: %v", err)
	}
	log.Printf("chaos-agent stopped")
}
