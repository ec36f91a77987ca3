// Package run drives one conformance scenario on a live cluster: a fresh
// namespace, the sink and the reconciler deployed from manifests/ with the
// scenario's flags appended, the recorders started before anything moves,
// the chaos applied, and the history collected. It decides nothing: the
// verdicts come from conformance/check over the history it returns.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"

	"github.com/fencecheck/fencecheck/chaos"
	"github.com/fencecheck/fencecheck/chaos/schedule"
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
)

// Names the manifests and the fixtures agree on.
const (
	LeaseName            = "fencecheck-reconciler"
	TermAnnotation       = "camel.io/leader-term"
	ReconcilerSelector   = "app=fencecheck-reconciler"
	ReconcilerDeployment = "reconciler"
	SinkDeployment       = "sink"
	SinkService          = "sink"
	SinkPort             = "8080"
	StatusPort           = "8081"
	// commitsToSettle is how many commits of a new leader show it is live.
	commitsToSettle = report.SettleCommits
)

// Env is what every scenario shares.
type Env struct {
	Kube            kubernetes.Interface
	Res             *resources.Resources
	Exec            chaos.Executor
	Timing          scenario.Timing
	Seed            int64
	RunID           string
	Root            string // repository root: manifests/ lives there
	DeployTimeout   time.Duration
	ScenarioTimeout time.Duration
	Takeovers       int // partitions in the repeated scenario
	Logf            func(format string, args ...any)
}

// Session is one scenario in progress.
type Session struct {
	env   *Env
	def   scenario.Def
	NS    string
	Hist  *history.Scenario
	lease *collect.LeaseWatcher
	logs  *collect.LogFollower
}

func (e *Env) log(format string, a ...any) {
	if e.Logf != nil {
		e.Logf(format, a...)
	}
}

// Namespace is the scenario's namespace name.
func (e *Env) Namespace(d scenario.Def) string {
	id := strings.ToLower(e.RunID)
	if len(id) > 12 {
		id = id[len(id)-12:]
	}
	ns := "fc-" + d.Name + "-" + id
	if len(ns) > 63 {
		ns = ns[:63]
	}
	return strings.Trim(ns, "-")
}

// Start creates the namespace, starts the recorders, deploys and waits
// for a leader that commits.
func (e *Env) Start(ctx context.Context, d scenario.Def) (*Session, error) {
	s := &Session{env: e, def: d, NS: e.Namespace(d)}
	s.Hist = &history.Scenario{Name: d.Name, Description: d.Description, Namespace: s.NS, Config: e.Timing.Config(d),
		Expect: d.Expect, Events: map[string][]eventlog.Event{}}
	// The recorders start before the deploy phase, so the Lease watch
	// covers every phase of the scenario.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.NS, Labels: map[string]string{chaos.ManagedByLabel: "fencecheck"}}}
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return s, fmt.Errorf("create namespace %s: %w", s.NS, err)
	}
	var err error
	if s.lease, err = collect.WatchLease(ctx, e.Kube, s.NS, LeaseName, TermAnnotation, e.Logf); err != nil {
		return s, err
	}
	s.logs = collect.FollowLogs(ctx, e.Kube, s.NS, ReconcilerSelector, e.Logf)
	err = s.phase("deploy", func() error {
		if err := s.deploy(ctx, "manifests/sink", SinkDeployment, d.SinkArgs); err != nil {
			return err
		}
		if err := s.waitReady(ctx, SinkDeployment); err != nil {
			return err
		}
		if err := s.deploy(ctx, "manifests/reconciler", ReconcilerDeployment, append(e.Timing.Args(), d.ReconcilerArgs...)); err != nil {
			return err
		}
		return s.waitReady(ctx, ReconcilerDeployment)
	})
	if err != nil {
		return s, err
	}
	return s, s.phase("steady", func() error {
		holder, err := s.waitHolder(ctx, "")
		if err != nil {
			return err
		}
		e.log("%s: leader %s", d.Name, holder)
		return s.waitCommits(ctx, time.Time{}, commitsToSettle)
	})
}

// phase times fn as a named phase of the scenario.
func (s *Session) phase(name string, fn func() error) error {
	start := time.Now()
	s.env.log("%s: phase %s ...", s.def.Name, name)
	err := fn()
	s.Hist.Phases = append(s.Hist.Phases, history.Phase{Name: name, Start: start, End: time.Now()})
	if err != nil {
		s.env.log("%s: phase %s FAILED after %v: %v", s.def.Name, name, time.Since(start).Round(time.Millisecond), err)
		return fmt.Errorf("%s: %w", name, err)
	}
	s.env.log("%s: phase %s done in %v", s.def.Name, name, time.Since(start).Round(time.Millisecond))
	return nil
}

// Manifests decodes dir/*.yaml (relative to root) for namespace ns,
// appending args to the first container of the Deployment named
// deployment. Namespace objects are dropped: each scenario brings its own.
func Manifests(ctx context.Context, root, dir, ns, deployment string, args []string) ([]k8s.Object, error) {
	fsys := os.DirFS(filepath.Join(root, dir))
	if m, _ := fs.Glob(fsys, "*.yaml"); len(m) == 0 {
		return nil, fmt.Errorf("%s has no *.yaml manifests (they belong to the component's engineer; the suite cannot deploy without them)", dir)
	}
	found := false
	mutate := decoder.MutateOption(func(obj k8s.Object) error {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			if o.Name == deployment && len(o.Spec.Template.Spec.Containers) > 0 {
				c := &o.Spec.Template.Spec.Containers[0]
				c.Args = append(c.Args, args...)
				found = true
			}
		case *rbacv1.RoleBinding:
			for i := range o.Subjects {
				if o.Subjects[i].Kind == rbacv1.ServiceAccountKind {
					o.Subjects[i].Namespace = ns
				}
			}
		}
		return nil
	})
	var objs []k8s.Object
	collect := func(_ context.Context, obj k8s.Object) error {
		if _, ok := obj.(*corev1.Namespace); !ok {
			objs = append(objs, obj)
		}
		return nil
	}
	if err := decoder.DecodeEachFile(ctx, fsys, "*.yaml", collect, decoder.MutateNamespace(ns), mutate); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if !found {
		return nil, fmt.Errorf("%s has no Deployment %q to run", dir, deployment)
	}
	return objs, nil
}

// deploy creates the objects of dir in the scenario's namespace.
func (s *Session) deploy(ctx context.Context, dir, deployment string, args []string) error {
	objs, err := Manifests(ctx, s.env.Root, dir, s.NS, deployment, args)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := s.env.Res.Create(ctx, obj); err != nil {
			return fmt.Errorf("%s: create %T %s: %w", dir, obj, obj.GetName(), err)
		}
	}
	s.env.log("%s: deployed %s (%d objects) with %s", s.def.Name, dir, len(objs), strings.Join(args, " "))
	return nil
}

// waitReady polls a Deployment until every replica is updated and ready;
// on timeout it says why the pods are not.
func (s *Session) waitReady(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, s.env.DeployTimeout)
	defer cancel()
	for {
		d, err := s.env.Kube.AppsV1().Deployments(s.NS).Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Spec.Replicas != nil && d.Status.ObservedGeneration >= d.Generation &&
			d.Status.UpdatedReplicas == *d.Spec.Replicas && d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s/%s not ready within %v: %s", s.NS, name, s.env.DeployTimeout, s.podProblems(name))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podProblems describes why pods are not ready (image not loaded, crash).
func (s *Session) podProblems(deployment string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := s.env.Kube.CoreV1().Pods(s.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "cannot list pods: " + err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			switch {
			case cs.State.Waiting != nil:
				hint := ""
				if strings.Contains(cs.State.Waiting.Reason, "Image") {
					hint = " (load the images: flock $FENCECHECK_CACHE/kind.lock bash scripts/images.sh reconciler sink chaos-agent)"
				}
				out = append(out, fmt.Sprintf("%s: %s %s%s", p.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message, hint))
			case cs.State.Terminated != nil:
				out = append(out, fmt.Sprintf("%s: terminated %s exit %d", p.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode))
			case !cs.Ready:
				out = append(out, p.Name+": running, not ready")
			}
		}
		if len(p.Status.ContainerStatuses) == 0 {
			out = append(out, fmt.Sprintf("%s: %s", p.Name, p.Status.Phase))
		}
	}
	if len(out) == 0 {
		return "no pod problems seen for " + deployment
	}
	return strings.Join(out, "; ")
}

// holder is the latest recorded Lease holder.
func (s *Session) holder() (history.LeaseRecord, bool) {
	rs := s.lease.Snapshot().Records
	if len(rs) == 0 {
		return history.LeaseRecord{}, false
	}
	return rs[len(rs)-1], true
}

// waitHolder waits until the Lease has a holder other than not.
func (s *Session) waitHolder(ctx context.Context, not string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.env.ScenarioTimeout)
	defer cancel()
	var h string
	err := s.lease.WaitFor(ctx, "a Lease holder other than "+not, func(rs []history.LeaseRecord) bool {
		if len(rs) == 0 {
			return false
		}
		h = rs[len(rs)-1].Holder
		return h != "" && h != not
	})
	return h, err
}

// poll runs cond every 250ms until it holds or the scenario timeout ends.
func (s *Session) poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, s.env.ScenarioTimeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitCommits waits until the sink committed n writes after since.
func (s *Session) waitCommits(ctx context.Context, since time.Time, n int) error {
	return s.poll(ctx, fmt.Sprintf("%d commits after %s", n, since.Format("15:04:05.000")), func(ctx context.Context) (bool, error) {
		as, err := collect.SinkHistory(ctx, s.env.Kube, s.NS, SinkService, SinkPort)
		if err != nil {
			return false, err
		}
		c := 0
		for _, a := range as {
			if a.Committed() && a.Arrived.After(since) {
				c++
			}
		}
		return c >= n, nil
	})
}

// waitEvent waits until pod logged an event matching match; every second
// it re-reads the pod's log in case the follow stream stalled.
func (s *Session) waitEvent(ctx context.Context, pod, what string, match func(eventlog.Event) bool) error {
	last := time.Now()
	return s.poll(ctx, pod+" logging "+what, func(ctx context.Context) (bool, error) {
		for _, ev := range s.logs.Snapshot()[pod] {
			if match(ev) {
				return true, nil
			}
		}
		if time.Since(last) > time.Second {
			last = time.Now()
			if err := s.logs.Refresh(ctx, pod); err != nil {
				return false, err
			}
		}
		return false, nil
	})
}

func (s *Session) ignoresDemotion() bool {
	for _, a := range s.def.ReconcilerArgs {
		if a == "--ignore-demotion" {
			return true
		}
	}
	return false
}

// Partition cuts the current leader (or a follower) off from the apiserver
// for length, waits for the heal and for a new leader that commits.
func (s *Session) Partition(ctx context.Context, length time.Duration, role schedule.Role, followerIndex int) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader to partition")
	}
	leaderPod := collect.PodOfIdentity(h.Holder)
	target := leaderPod
	if role == schedule.Follower {
		pods, err := s.runningPods(ctx)
		if err != nil {
			return err
		}
		var followers []string
		for _, p := range pods {
			if p != leaderPod {
				followers = append(followers, p)
			}
		}
		if len(followers) == 0 {
			return errors.New("no follower to partition")
		}
		target = followers[followerIndex%len(followers)]
	}
	targets, err := chaos.APIServerTargets(ctx, s.env.Kube)
	if err != nil {
		return err
	}
	if s.def.CutSinkToo && role == schedule.Leader {
		sinkIPs, err := s.sinkAddresses(ctx)
		if err != nil {
			return err
		}
		targets = append(targets, sinkIPs...)
	}
	node := s.nodeOf(ctx, target)
	nc := chaos.NewPartition(chaos.PartitionSpec{Namespace: s.NS, PodNamespace: s.NS, PodName: target, Targets: targets, Duration: length})
	s.env.log("%s: partitioning %s (%s) from %s for %v", s.def.Name, target, role, strings.Join(targets, ","), length)
	in, err := s.env.Exec.Inject(ctx, nc)
	if err != nil {
		return err
	}
	defer func() {
		if err := s.env.Exec.Delete(context.WithoutCancel(ctx), s.NS, in.Name); err != nil {
			s.env.log("%s: deleting NetworkChaos %s: %v", s.def.Name, in.Name, err)
		}
	}()
	out, err := s.env.Exec.WaitRecovered(ctx, s.NS, in.Name)
	w := collect.ChaosWindow("partition", node, in)
	w.Recovered = out.Recovered
	s.Hist.Chaos = append(s.Hist.Chaos, w)
	if err != nil {
		return err
	}
	if role == schedule.Follower {
		return nil
	}
	return s.afterTakeover(ctx, h.Holder, leaderPod, w.Recovered)
}

// afterTakeover waits for a new holder that commits, and for the old
// leader's own account of stepping down.
func (s *Session) afterTakeover(ctx context.Context, oldHolder, oldPod string, healed time.Time) error {
	newHolder, err := s.waitHolder(ctx, oldHolder)
	if err != nil {
		return err
	}
	s.env.log("%s: takeover %s -> %s", s.def.Name, oldHolder, newHolder)
	if err := s.waitCommits(ctx, healed, commitsToSettle); err != nil {
		return err
	}
	if s.def.WaitRejects {
		if err := s.poll(ctx, "a REJECT_STALE_EPOCH at the sink", func(ctx context.Context) (bool, error) {
			as, err := collect.SinkHistory(ctx, s.env.Kube, s.NS, SinkService, SinkPort)
			for _, a := range as {
				if a.Result == contract.ResultRejectStale {
					return true, nil
				}
			}
			return false, err
		}); err != nil {
			return err
		}
	}
	if s.ignoresDemotion() {
		// The stale producer keeps writing: wait until it wrote one TTL
		// after the heal, when its elector has surely read the Lease again
		// (what a --live-epoch producer would stamp).
		return s.waitEvent(ctx, oldPod, "writes a lease TTL after the heal", func(ev eventlog.Event) bool {
			return ev.Kind == eventlog.KindWrite && ev.Time.After(healed.Add(s.env.Timing.LeaseDuration)) && ev.Status != 0
		})
	}
	return s.waitEvent(ctx, oldPod, "bridge_joined or stopped", func(ev eventlog.Event) bool {
		return ev.Kind == eventlog.KindBridgeJoined || ev.Kind == eventlog.KindStopped
	})
}

// DeleteLeader deletes the leader pod (SIGTERM while it writes) and waits
// for its successor.
func (s *Session) DeleteLeader(ctx context.Context) error {
	h, ok := s.holder()
	if !ok || h.Holder == "" {
		return errors.New("no leader to delete")
	}
	pod := collect.PodOfIdentity(h.Holder)
	w := history.ChaosWindow{Kind: "pod-delete", Pod: pod, Node: s.nodeOf(ctx, pod), Injected: time.Now()}
	s.env.log("%s: deleting leader pod %s", s.def.Name, pod)
	if err := s.env.Kube.CoreV1().Pods(s.NS).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete pod %s: %w", pod, err)
	}
	err := s.poll(ctx, "pod "+pod+" gone", func(ctx context.Context) (bool, error) {
		_, err := s.env.Kube.CoreV1().Pods(s.NS).Get(ctx, pod, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	w.Recovered = time.Now()
	s.Hist.Chaos = append(s.Hist.Chaos, w)
	if err != nil {
		return err
	}
	if err := s.waitEvent(ctx, pod, "stopped", func(ev eventlog.Event) bool { return ev.Kind == eventlog.KindStopped }); err != nil {
		return err
	}
	return s.afterTakeover(ctx, h.Holder, pod, w.Injected)
}

// RollingRestart restarts the reconciler Deployment and waits for the
// rollout and a committing leader among the new pods.
func (s *Session) RollingRestart(ctx context.Context) error {
	h, _ := s.holder()
	pod := collect.PodOfIdentity(h.Holder)
	w := history.ChaosWindow{Kind: "rolling-restart", Pod: pod, Node: s.nodeOf(ctx, pod), Injected: time.Now()}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"fencecheck.io/restarted-at":%q}}}}}`, w.Injected.Format(time.RFC3339Nano))
	if _, err := s.env.Kube.AppsV1().Deployments(s.NS).Patch(ctx, ReconcilerDeployment, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("rolling restart: %w", err)
	}
	err := s.waitReady(ctx, ReconcilerDeployment)
	if err == nil {
		err = s.poll(ctx, "old pods gone", func(ctx context.Context) (bool, error) {
			pods, err := s.runningPods(ctx)
			for _, p := range pods {
				if p == pod {
					return false, err
				}
			}
			return err == nil, err
		})
	}
	w.Recovered = time.Now()
	s.Hist.Chaos = append(s.Hist.Chaos, w)
	if err != nil {
		return err
	}
	if _, err := s.waitHolder(ctx, h.Holder); err != nil {
		return err
	}
	return s.waitCommits(ctx, w.Recovered, commitsToSettle)
}

// Repeated runs the seeded schedule, then a leader delete and a rolling restart.
func (s *Session) Repeated(ctx context.Context) error {
	cfg := schedule.DefaultConfig(uint64(s.env.Seed), s.env.Timing.LeaseDuration)
	cfg.Steps = max(s.env.Takeovers, 1)
	// Every cut at least twice the TTL, so a takeover surely happens
	// before the heal (the successor may wait up to TTL + 2.2x retry).
	cfg.MinMultiple = max(cfg.MinMultiple, 2)
	cfg.MaxMultiple = max(cfg.MaxMultiple, cfg.MinMultiple)
	sch, err := schedule.Generate(cfg)
	if err != nil {
		return err
	}
	for _, st := range sch.Steps {
		if st.Gap > 0 {
			// The schedule's quiet time between bursts: chaos timing, not
			// synchronisation (recorded as a phase for the timing report).
			if err := s.phase(fmt.Sprintf("gap-%d", st.Index), func() error {
				t := time.NewTimer(st.Gap)
				defer t.Stop()
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-t.C:
					return nil
				}
			}); err != nil {
				return err
			}
		}
		if err := s.phase(fmt.Sprintf("partition-%d-%s", st.Index, st.Role), func() error {
			return s.Partition(ctx, st.Length, st.Role, st.FollowerIndex)
		}); err != nil {
			return err
		}
	}
	if err := s.phase("delete-leader", func() error { return s.DeleteLeader(ctx) }); err != nil {
		return err
	}
	return s.phase("rolling-restart", func() error { return s.RollingRestart(ctx) })
}

// Chaos runs the scenario's chaos.
func (s *Session) Chaos(ctx context.Context) error {
	switch s.def.Chaos {
	case scenario.PartitionOnce:
		return s.phase("partition", func() error { return s.Partition(ctx, s.env.Timing.Partition, schedule.Leader, 0) })
	case scenario.ShutdownLeader:
		return s.phase("shutdown-leader", func() error { return s.DeleteLeader(ctx) })
	case scenario.Repeated:
		return s.Repeated(ctx)
	}
	return fmt.Errorf("unknown chaos %q", s.def.Chaos)
}

// sinkAddresses are the sink Service's ClusterIP and its pods' IPs.
func (s *Session) sinkAddresses(ctx context.Context) ([]string, error) {
	svc, err := s.env.Kube.CoreV1().Services(s.NS).Get(ctx, SinkService, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("sink addresses: %w", err)
	}
	out := []string{svc.Spec.ClusterIP}
	pods, err := s.env.Kube.CoreV1().Pods(s.NS).List(ctx, metav1.ListOptions{LabelSelector: "app=fencecheck-sink"})
	if err != nil {
		return nil, fmt.Errorf("sink addresses: %w", err)
	}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			out = append(out, p.Status.PodIP)
		}
	}
	return out, nil
}

// stopReconcilers scales the reconciler to zero and waits for its pods to go.
func (s *Session) stopReconcilers(ctx context.Context) error {
	patch := []byte(`{"spec":{"replicas":0}}`)
	if _, err := s.env.Kube.AppsV1().Deployments(s.NS).Patch(ctx, ReconcilerDeployment, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("scale the reconciler to 0: %w", err)
	}
	// Done when every pod is gone or has logged that it stopped (a pod can
	// linger in Terminating well after its process exited).
	return s.poll(ctx, "reconciler pods stopped", func(ctx context.Context) (bool, error) {
		pods, err := s.env.Kube.CoreV1().Pods(s.NS).List(ctx, metav1.ListOptions{LabelSelector: ReconcilerSelector})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			stopped := func() bool {
				for _, ev := range s.logs.Snapshot()[p.Name] {
					if ev.Kind == eventlog.KindStopped {
						return true
					}
				}
				return false
			}
			if !stopped() {
				// The follow stream may have stalled: read the log afresh.
				if err := s.logs.Refresh(ctx, p.Name); err != nil || !stopped() {
					return false, err
				}
			}
		}
		return true, nil
	})
}

func (s *Session) runningPods(ctx context.Context) ([]string, error) {
	pods, err := s.env.Kube.CoreV1().Pods(s.NS).List(ctx, metav1.ListOptions{LabelSelector: ReconcilerSelector})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *Session) nodeOf(ctx context.Context, pod string) string {
	p, err := s.env.Kube.CoreV1().Pods(s.NS).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Spec.NodeName
}

// Finish stops the recorders and fills the history. It always returns the
// history it has; problems are recorded in it and returned.
func (s *Session) Finish(ctx context.Context) (*history.Scenario, error) {
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
			s.Hist.Errors = append(s.Hist.Errors, err.Error())
		}
	}
	start := time.Now()
	if pods, err := s.runningPods(ctx); err == nil {
		for _, p := range pods {
			if st, err := collect.PodJSON(ctx, s.env.Kube, s.NS, p, StatusPort, "/status"); err == nil {
				if s.Hist.Status == nil {
					s.Hist.Status = map[string]json.RawMessage{}
				}
				s.Hist.Status[p] = st
			} else {
				s.Hist.Errors = append(s.Hist.Errors, err.Error())
			}
		}
	}
	// Stop every writer first, so the sink's history and final state are
	// read at rest and agree (the pods log their shutdown before exiting).
	if s.logs != nil {
		// Read every pod's whole log while the pods still exist (a stalled
		// follow stream must not cost the evidence), then stop them.
		if pods, err := s.runningPods(ctx); err == nil {
			for _, p := range pods {
				note(s.logs.Refresh(ctx, p))
			}
		}
		note(s.stopReconcilers(ctx))
		events, problems := s.logs.Stop(ctx)
		s.Hist.Events = events
		s.Hist.Errors = append(s.Hist.Errors, problems...)
	}
	as, err := collect.SinkHistory(ctx, s.env.Kube, s.NS, SinkService, SinkPort)
	note(err)
	s.Hist.Attempts = as
	if err == nil {
		recs, err := collect.SinkRecords(ctx, s.env.Kube, s.NS, SinkService, SinkPort, as)
		note(err)
		if err == nil {
			s.Hist.FinalRecords = recs
		}
	}
	s.Hist.Phases = append(s.Hist.Phases, history.Phase{Name: "collect", Start: start, End: time.Now()})
	if s.lease != nil {
		s.Hist.Lease = s.lease.Stop()
	}
	s.env.log("%s: collected %d lease versions, %d sink attempts, events from %d pods", s.def.Name, len(s.Hist.Lease.Records), len(s.Hist.Attempts), len(s.Hist.Events))
	return s.Hist, errors.Join(errs...)
}

// Evaluate judges the collected history.
func (s *Session) Evaluate() []check.Result { return check.EvaluateScenario(s.Hist) }

// Cleanup deletes the scenario's namespace.
func (s *Session) Cleanup(ctx context.Context) error {
	err := s.env.Kube.CoreV1().Namespaces().Delete(ctx, s.NS, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
