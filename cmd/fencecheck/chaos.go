package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

func init() {
	register("partition", "cut pods off from the apiserver for a while (a NetworkChaos; --dry-run prints it)", runPartition)
	register("partition-schedule", "print the seeded partition schedule a conformance run would replay", runSchedule)
}

type partitionOpts struct {
	spec        chaos.PartitionSpec
	lease       string
	executor    string
	dryRun      bool
	output      string
	wait        bool
	install     bool
	kubeconfig  string
	timeout     time.Duration
	targetsFlag string
	portsFlag   string
}

func parsePartition(args []string) (*partitionOpts, *flag.FlagSet, error) {
	o := &partitionOpts{}
	fs := flag.NewFlagSet("partition", flag.ContinueOnError)
	fs.StringVar(&o.spec.PodNamespace, "namespace", "", "namespace of the target pods (required)")
	fs.StringVar(&o.spec.PodName, "pod", "", "target one pod by name")
	selector := fs.String("selector", "", "target every running pod matching labels k=v[,k=v]")
	fs.StringVar(&o.lease, "lease", "", "target the current leader: the pod named by this Lease's holder (<pod>_<suffix>, matched against the namespace's pods)")
	fs.DurationVar(&o.spec.Duration, "duration", 30*time.Second, "how long the partition lasts (the agent heals it on time)")
	direction := fs.String("direction", "to", "to or both")
	fs.StringVar(&o.targetsFlag, "targets", "", "addresses to cut off, comma-separated (default: the apiserver's ClusterIP and endpoints)")
	fs.StringVar(&o.portsFlag, "tcp-ports", "apiserver", "cut only TCP to these ports on the targets: \"apiserver\" (the apiserver's ports; whole addresses when --targets is given), a list like 443,6443, or \"all\" (whole addresses, as Chaos Mesh does)")
	fs.StringVar(&o.spec.Name, "name", "", "NetworkChaos name (default: generated)")
	fs.StringVar(&o.spec.Namespace, "chaos-namespace", "", "namespace of the NetworkChaos object (default: --namespace)")
	fs.StringVar(&o.executor, "executor", "auto", "auto, builtin or chaos-mesh")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the NetworkChaos and do nothing")
	fs.StringVar(&o.output, "o", "yaml", "dry-run output: yaml or json")
	fs.BoolVar(&o.wait, "wait", true, "wait until the partition is recovered")
	fs.BoolVar(&o.install, "install", true, "builtin executor: install the CRD and agent first")
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig (default $KUBECONFIG)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "overall deadline")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: fencecheck partition --namespace NS (--pod P | --selector k=v | --lease NAME) [flags]

Creates a chaos-mesh.org/v1alpha1 NetworkChaos (action partition) that cuts
the pods off from the apiserver (its ClusterIP and endpoint IPs) for
--duration, waits until it is injected and recovered, and prints the window.
The executor's agent owns the deadline: killing this command does not stop
the partition from healing on time. --dry-run -o yaml prints the object.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.spec.PodNamespace == "" {
		return nil, fs, errors.New("--namespace is required")
	}
	n := 0
	for _, s := range []string{o.spec.PodName, *selector, o.lease} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, fs, errors.New("give exactly one of --pod, --selector, --lease")
	}
	if *selector != "" {
		o.spec.PodLabels = map[string]string{}
		for _, kv := range strings.Split(*selector, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fs, fmt.Errorf("--selector %q: want k=v[,k=v]", *selector)
			}
			o.spec.PodLabels[k] = v
		}
	}
	switch v1alpha1.Direction(*direction) {
	case v1alpha1.To, v1alpha1.Both:
		o.spec.Direction = v1alpha1.Direction(*direction)
	default:
		return nil, fs, fmt.Errorf("--direction %q: want to or both", *direction)
	}
	if o.spec.Duration <= 0 {
		return nil, fs, errors.New("--duration must be > 0")
	}
	switch o.executor {
	case "auto", chaos.BuiltInName, chaos.ChaosMeshName:
	default:
		return nil, fs, fmt.Errorf("--executor %q: want auto, builtin or chaos-mesh", o.executor)
	}
	if o.output != "yaml" && o.output != "json" {
		return nil, fs, fmt.Errorf("-o %q: want yaml or json", o.output)
	}
	if o.targetsFlag != "" {
		o.spec.Targets = strings.Split(o.targetsFlag, ",")
	}
	switch o.portsFlag {
	case "apiserver", "all":
	default:
		for _, f := range strings.Split(o.portsFlag, ",") {
			var p int
			if _, err := fmt.Sscanf(f, "%d", &p); err != nil || p < 1 || p > 65535 || fmt.Sprint(p) != f {
				return nil, fs, fmt.Errorf("--tcp-ports %q: want apiserver, all or a list of ports", o.portsFlag)
			}
			o.spec.TCPPorts = append(o.spec.TCPPorts, p)
		}
	}
	return o, fs, nil
}

func runPartition(args []string) int {
	o, fs, err := parsePartition(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "partition:", err)
		if fs != nil && !strings.Contains(err.Error(), "flag provided but not defined") {
			fs.Usage()
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "partition:", err); return 1 }

	needCluster := !o.dryRun || o.lease != "" || len(o.spec.Targets) == 0
	var kube kubernetes.Interface
	cfg, cfgErr := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if needCluster {
		if cfgErr != nil {
			return fail(fmt.Errorf("kubeconfig %q: %v (dry-run without a cluster needs --pod or --selector and --targets)", o.kubeconfig, cfgErr))
		}
		if kube, err = kubernetes.NewForConfig(cfg); err != nil {
			return fail(err)
		}
	}
	if o.lease != "" {
		if o.spec.PodName, err = chaos.LeaderPod(ctx, kube, o.spec.PodNamespace, o.lease); err != nil {
			return fail(err)
		}
		fmt.Fprintf(os.Stderr, "leader from lease %s/%s: %s\n", o.spec.PodNamespace, o.lease, o.spec.PodName)
	}
	if len(o.spec.Targets) == 0 {
		if o.spec.Targets, err = chaos.APIServerTargets(ctx, kube); err != nil {
			return fail(err)
		}
		if o.portsFlag == "apiserver" {
			if o.spec.TCPPorts, err = chaos.APIServerPorts(ctx, kube); err != nil {
				return fail(err)
			}
		}
	}
	nc := chaos.NewPartition(o.spec)
	if o.dryRun {
		var b []byte
		if o.output == "json" {
			b, err = json.MarshalIndent(nc, "", "  ")
		} else {
			b, err = yaml.Marshal(nc)
		}
		if err != nil {
			return fail(err)
		}
		os.Stdout.Write(b)
		return 0
	}
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().UTC().Format("15:04:05.000")+" "+format+"\n", args...)
	}
	ex, err := chaos.ByName(ctx, cfg, o.executor, chaos.Options{Logf: progress})
	if err != nil {
		return fail(err)
	}
	progress("executor: %s", ex.Name())
	if o.install {
		if err := ex.Install(ctx); err != nil {
			return fail(err)
		}
	}
	w, err := ex.Inject(ctx, nc)
	if err != nil {
		return fail(err)
	}
	if o.wait {
		if w, err = ex.WaitRecovered(ctx, nc.Namespace, w.Name); err != nil {
			return fail(err)
		}
	}
	b, _ := json.MarshalIndent(w, "", "  ")
	fmt.Println(string(b))
	return 0
}

func runSchedule(args []string) int {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	seed := fs.Uint64("seed", 0, "seed (0 picks one from the clock and prints it)")
	ttl := fs.Duration("ttl", 15*time.Second, "lease TTL")
	steps := fs.Int("steps", 3, "number of partitions")
	followerPct := fs.Int("follower-pct", 20, "chance (0-100) that a cut targets a follower")
	replay := fs.String("replay", "", "check a recorded schedule JSON file replays from its seed, and print it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fencecheck partition-schedule [--seed N --ttl D --steps N] | --replay FILE\n\nPrints a seeded partition schedule as JSON (lengths are multiples of the TTL).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, 0); !ok {
		return code
	}
	var s fault.Schedule
	var err error
	if *replay != "" {
		b, rerr := os.ReadFile(*replay)
		if rerr != nil {
			fmt.Fprintln(os.Stderr, "schedule:", rerr)
			return 1
		}
		s, err = fault.Unmarshal(b)
	} else {
		if *seed == 0 {
			*seed = uint64(time.Now().UnixNano())
			fmt.Fprintf(os.Stderr, "schedule: seed %d\n", *seed)
		}
		c := fault.DefaultConfig(*seed, *ttl)
		c.Steps, c.FollowerPct = *steps, *followerPct
		s, err = fault.Generate(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedule:", err)
		return 1
	}
	b, _ := s.Marshal()
	fmt.Println(string(b))
	return 0
}
