// Package cluster is the driver's Kubernetes target: each scenario in its
// own namespace, the sink and the reconciler deployed from manifests/ with
// the scenario's flags appended, event logs followed through the
// apiserver, the sink read through its service proxy, and partitions
// applied as NetworkChaos objects by a chaos executor.
package cluster

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/contract"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"

	"github.com/fencecheck/fencecheck/chaos"
	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/images"
)

// Names the manifests and this target agree on.
const (
	ReconcilerSelector   = "app=fencecheck-reconciler"
	ReconcilerDeployment = "reconciler"
	SinkDeployment       = "sink"
	SinkSelector         = "app=fencecheck-sink"
	SinkService          = "sink"
	SinkPort             = "8080"
	StatusPort           = "8081"
	WitnessDeployment    = "witness"
	WitnessSelector      = "app=fencecheck-witness"
	WitnessService       = "witness"
	WitnessAdminPort     = "8082"
	// WitnessURL is where the reconcilers write: the witness, which
	// forwards to the sink and records every exchange.
	WitnessURL = "http://witness:8080"
	// SinkTokenSecret holds the sink's credentials in each scenario
	// namespace: the writer token (mounted into the reconcilers, key
	// SinkWriterTokenKey) and the admin token (the sink's and the
	// harness's alone, key SinkAdminTokenKey), fresh random per scenario.
	SinkTokenSecret    = "fencecheck-sink-tokens"
	SinkWriterTokenKey = "writer-token"
	SinkAdminTokenKey  = "admin-token"
	// PodSecurityLevel is enforced on every scenario namespace.
	PodSecurityLevel = "restricted"
)

// podSecurityLabels make the apiserver refuse, in a scenario namespace,
// any pod that Pod Security "restricted" does not admit.
var podSecurityLabels = map[string]string{
	"pod-security.kubernetes.io/enforce":         PodSecurityLevel,
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// Options configure the target.
type Options struct {
	Kube kubernetes.Interface
	Res  *resources.Resources
	Exec chaos.Executor
	// Root is the repository root: manifests/ lives there.
	Root string
	// DeployTimeout bounds how long a Deployment may take to be ready.
	DeployTimeout time.Duration
	// Keep leaves each scenario's namespace for inspection.
	Keep bool
	// Controller, when set, is a directory of a user's controller
	// manifests, deployed instead of ours (controller.go).
	Controller string
	// Images, when set, names the pushed images (--image-repo): every pod
	// runs its image by digest from the registry (images.go).
	Images images.Map
	Logf   func(format string, args ...any)
}

// Target runs scenarios on a cluster.
type Target struct{ opt Options }

// New returns the cluster target.
func New(opt Options) *Target { return &Target{opt: opt} }

func (t *Target) Name() string               { return "cluster" }
func (t *Target) Kube() kubernetes.Interface { return t.opt.Kube }

func (t *Target) log(format string, a ...any) {
	if t.opt.Logf != nil {
		t.opt.Logf(format, a...)
	}
}

// Open creates the namespace, labelled as ours so the chaos agent acts in
// it, and starts following the reconciler pods' logs.
func (t *Target) Open(ctx context.Context, ns string) (driver.Deployment, error) {
	// The scenario's namespace opts in to chaos (the agent refuses any other)
	// and enforces Pod Security restricted.
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{chaos.ManagedByLabel: "fencecheck", plan.AllowLabel: plan.AllowValue}}}
	for k, v := range podSecurityLabels {
		obj.Labels[k] = v
	}
	if _, err := t.opt.Kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	d := &deployment{t: t, ns: ns, name: ReconcilerDeployment, sel: ReconcilerSelector}
	if t.opt.Controller != "" {
		d.sel = UnderTestSelector // the name is known once its manifests are read
	}
	if err := d.createTokens(ctx); err != nil {
		return nil, err
	}
	d.logs = collect.FollowLogs(ctx, t.opt.Kube, ns, d.sel, t.opt.Logf)
	d.ips = collect.WatchPodIPs(ctx, t.opt.Kube, ns, d.sel, t.opt.Logf)
	return d, nil
}

// deployment is one scenario's namespace.
type deployment struct {
	t  *Target
	ns string
	// name and sel are the writers' Deployment and pod selector: ours, or
	// the user's controller's.
	name, sel string
	logs      *collect.LogFollower
	ips       *collect.PodIPWatcher // the writers' pod IPs, for the witness's sources
	// adminToken reads the sink's history (the writer token is only in
	// the Secret, for the reconcilers).
	adminToken string
	// writerToken is the harness's own probe's credential (the witness
	// sends it on; see WitnessAdmin).
	writerToken string
}

// createTokens creates the Secret with a fresh writer and admin token.
func (d *deployment) createTokens(ctx context.Context) error {
	d.adminToken, d.writerToken = contract.NewToken(), contract.NewToken()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SinkTokenSecret, Labels: map[string]string{chaos.ManagedByLabel: "fencecheck"}},
		StringData: map[string]string{SinkWriterTokenKey: d.writerToken, SinkAdminTokenKey: d.adminToken}}
	if _, err := d.t.opt.Kube.CoreV1().Secrets(d.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the sink's token Secret in %s: %w", d.ns, err)
	}
	return nil
}

func (d *deployment) Events() driver.EventLog { return d.logs }
func (d *deployment) Sink() driver.Sink       { return sink{d} }

// Close deletes the namespace, unless the target keeps them.
func (d *deployment) Close(ctx context.Context) error {
	d.ips.Stop() // a second Stop returns at once
	if d.t.opt.Keep {
		d.t.log("keeping namespace %s", d.ns)
		return nil
	}
	err := d.t.opt.Kube.CoreV1().Namespaces().Delete(ctx, d.ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// stopped reports whether pod logged that it stopped, reading its log
// afresh when the followed events do not say so yet.
func (d *deployment) stopped(ctx context.Context, pod string) (bool, error) {
	has := func() bool {
		for _, ev := range d.logs.Snapshot()[pod] {
			if ev.Kind == eventlog.KindStopped {
				return true
			}
		}
		return false
	}
	if has() {
		return true, nil
	}
	// The follow stream may have stalled: read the log afresh.
	err := d.logs.Refresh(ctx, pod)
	return has(), err
}

// Lacks says why the cluster target cannot do c ("" when it can): a
// process pause needs an executor that pauses (Chaos Mesh has none, its
// issue #1924).
func (t *Target) Lacks(c fault.Capability) string {
	if c == fault.ProcessPause {
		if _, ok := t.opt.Exec.(chaos.Pauser); !ok {
			return fmt.Sprintf("the %s executor has no pause (docs/chaos.md); run it with --chaos=builtin", t.opt.Exec.Name())
		}
	}
	return ""
}
