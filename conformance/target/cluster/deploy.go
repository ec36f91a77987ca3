package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/wait"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/k8s"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/driver"
)

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
	keep := func(_ context.Context, obj k8s.Object) error {
		if _, ok := obj.(*corev1.Namespace); !ok {
			objs = append(objs, obj)
		}
		return nil
	}
	if err := decoder.DecodeEachFile(ctx, fsys, "*.yaml", keep, decoder.MutateNamespace(ns), mutate); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if !found {
		return nil, fmt.Errorf("%s has no Deployment %q to run", dir, deployment)
	}
	return objs, nil
}

// Deploy creates the sink and the witness in front of it, waits for them,
// then the reconcilers, which write through the witness (the last
// --sink-url wins).
func (d *deployment) Deploy(ctx context.Context, spec driver.Spec) error {
	if err := d.create(ctx, "manifests/sink", SinkDeployment, spec.SinkArgs, 0); err != nil {
		return err
	}
	if err := d.create(ctx, "manifests/witness", WitnessDeployment, spec.WitnessArgs, 0); err != nil {
		return err
	}
	ready := []string{SinkDeployment, WitnessDeployment}
	if d.t.opt.Controller != "" {
		// A controller under test starts once its sink answers: it may
		// not survive one that does not yet.
		if err := d.waitReady(ctx, ready...); err != nil {
			return err
		}
		return d.deployController(ctx, spec)
	}
	// Our fixture starts beside them, so the pods start at once (on a
	// busy node pod starts are most of a deploy): its leader retries the
	// fence until the witness answers and writes nothing before.
	args := append(append([]string(nil), spec.ReconcilerArgs...), "--sink-url="+WitnessURL)
	if err := d.create(ctx, "manifests/reconciler", ReconcilerDeployment, args, spec.Replicas); err != nil {
		return err
	}
	return d.waitReady(ctx, append(ready, ReconcilerDeployment)...)
}

// create creates the objects of dir in the scenario's namespace, with
// replicas of the Deployment (0: as the manifest says).
func (d *deployment) create(ctx context.Context, dir, deployment string, args []string, replicas int) error {
	objs, err := Manifests(ctx, d.t.opt.Root, dir, d.ns, deployment, args)
	if err != nil {
		return err
	}
	if deployment == SinkDeployment {
		objs = NodeLocalData(objs)
	}
	if err := UseImages(objs, d.t.opt.Images); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	var nodes []string
	for _, obj := range objs {
		if np, ok := obj.(*networkingv1.NetworkPolicy); ok {
			if nodes == nil {
				if nodes, err = d.nodeAddresses(ctx); err != nil {
					return err
				}
			}
			AdmitNodes(np, nodes)
		}
		if dep, ok := obj.(*appsv1.Deployment); ok && dep.Name == deployment && replicas > 0 {
			n := int32(replicas)
			dep.Spec.Replicas = &n
		}
		if err := d.t.opt.Res.Create(ctx, obj); err != nil {
			return fmt.Errorf("%s: create %T %s: %w", dir, obj, obj.GetName(), err)
		}
	}
	d.t.log("%s: deployed %s (%d objects) with %s", d.ns, dir, len(objs), strings.Join(args, " "))
	return nil
}

// AdmitNodes adds one ingress rule admitting the nodes' addresses: the
// apiserver's service proxy (the harness's reads) and the kubelet's probes
// come from there.
func AdmitNodes(np *networkingv1.NetworkPolicy, addrs []string) {
	var peers []networkingv1.NetworkPolicyPeer
	for _, a := range addrs {
		cidr := a + "/32"
		if strings.Contains(a, ":") {
			cidr = a + "/128"
		}
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	if len(peers) > 0 {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers})
	}
}

// nodeAddresses are the nodes' InternalIPs.
func (d *deployment) nodeAddresses(ctx context.Context) ([]string, error) {
	nodes, err := d.t.opt.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes (for the NetworkPolicies): %w", err)
	}
	out := []string{}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				out = append(out, a.Address)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// scaleToZero stops the reconciler's pods (SIGTERM).
func (d *deployment) scaleToZero(ctx context.Context) error {
	patch := []byte(`{"spec":{"replicas":0}}`)
	_, err := d.t.opt.Kube.AppsV1().Deployments(d.ns).Patch(ctx, d.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("scale the reconciler to 0: %w", err)
	}
	return nil
}

// waitReady waits until every replica of the Deployments is updated and
// ready, on a watch of each (no polling), within one deploy timeout; on
// timeout it says why the pods are not.
func (d *deployment) waitReady(ctx context.Context, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, d.t.opt.DeployTimeout)
	defer cancel()
	for _, name := range names {
		if err := d.waitDeployment(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (d *deployment) waitDeployment(ctx context.Context, name string) error {
	lw := cache.NewListWatchFromClient(d.t.opt.Kube.AppsV1().RESTClient(), "deployments", d.ns, fields.OneTermEqualSelector("metadata.name", name))
	_, err := watchtools.UntilWithSync(ctx, lw, &appsv1.Deployment{}, nil, func(ev watch.Event) (bool, error) {
		dep, ok := ev.Object.(*appsv1.Deployment)
		return ok && ev.Type != watch.Deleted && deploymentReady(dep), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for deployment %s/%s ready: %w: %s", d.ns, name, err, d.podProblems(name))
	}
	return nil
}

// deploymentReady: every replica of the current generation is updated and
// ready, and no old one is left.
func deploymentReady(dep *appsv1.Deployment) bool {
	want := dep.Spec.Replicas
	return want != nil && dep.Status.ObservedGeneration >= dep.Generation && dep.Status.UpdatedReplicas == *want &&
		dep.Status.ReadyReplicas == *want && dep.Status.Replicas == *want
}

// podProblems describes why pods are not ready (image not loaded, crash).
func (d *deployment) podProblems(deployment string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := d.t.opt.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{})
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
					hint = " (load the images: flock $FENCECHECK_CACHE/kind.lock bash scripts/images.sh reconciler sink witness chaos-agent)"
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
	// Pods that were never created (Pod Security, quota, a missing service
	// account) show only on the ReplicaSet.
	if rss, err := d.t.opt.Kube.AppsV1().ReplicaSets(d.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, rs := range rss.Items {
			if ref := metav1.GetControllerOf(&rs); ref == nil || ref.Kind != "Deployment" || ref.Name != deployment {
				continue
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
					out = append(out, fmt.Sprintf("replicaset %s: %s: %s", rs.Name, c.Reason, c.Message))
				}
			}
		}
	}
	if len(out) == 0 {
		return "no pod problems seen for " + deployment
	}
	return strings.Join(out, "; ")
}

// Pods are the running reconciler pods that are not being deleted.
func (d *deployment) Pods(ctx context.Context) ([]string, error) {
	pods, err := d.t.opt.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: d.sel})
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

func (d *deployment) nodeOf(ctx context.Context, pod string) string {
	p, err := d.t.opt.Kube.CoreV1().Pods(d.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Spec.NodeName
}

// Status reads the reconciler's /status through the pod proxy.
func (d *deployment) Status(ctx context.Context, pod string) (json.RawMessage, error) {
	if d.t.opt.Controller != "" {
		return json.RawMessage(`{"note":"a user's controller serves no /status; the verdicts do not need it"}`), nil
	}
	return collect.PodJSON(ctx, d.t.opt.Kube, d.ns, pod, StatusPort, "/status")
}

// StopReconcilers scales the reconciler to zero and waits until every pod
// is gone or has logged that it stopped (a pod can linger in Terminating
// well after its process exited).
func (d *deployment) StopReconcilers(ctx context.Context) error {
	if err := d.scaleToZero(ctx); err != nil {
		return err
	}
	return wait.Poll(ctx, d.t.opt.DeployTimeout, "reconciler pods stopped", func(ctx context.Context) (bool, error) {
		pods, err := d.t.opt.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: d.sel})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if ok, err := d.stopped(ctx, p.Name); !ok {
				return false, err
			}
		}
		return true, nil
	})
}
