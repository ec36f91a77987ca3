package cluster

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/wait"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fencecheck/fencecheck/chaos"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// Partition cuts pod off from the apiserver's addresses (and the sink's,
// when alsoSink) with a NetworkChaos that the executor heals at its
// deadline, and returns the window the executor recorded.
func (d *deployment) Partition(ctx context.Context, pod string, length time.Duration, alsoSink bool) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Pod: pod, Node: d.nodeOf(ctx, pod)}
	targets, err := chaos.APIServerTargets(ctx, d.t.opt.Kube)
	if err != nil {
		return w, err
	}
	if alsoSink {
		// The reconcilers reach the sink through the witness: cut both.
		for _, svc := range []struct{ name, selector string }{{WitnessService, WitnessSelector}, {SinkService, SinkSelector}} {
			ips, err := d.addresses(ctx, svc.name, svc.selector)
			if err != nil {
				return w, err
			}
			targets = append(targets, ips...)
		}
	}
	nc := chaos.NewPartition(chaos.PartitionSpec{Namespace: d.ns, PodNamespace: d.ns, PodName: pod, Targets: targets, Duration: length})
	d.t.log("%s: NetworkChaos for %s from %s for %v", d.ns, pod, strings.Join(targets, ","), length)
	ex := d.t.opt.Exec
	in, err := ex.Inject(ctx, nc)
	if err != nil {
		return w, err
	}
	defer func() {
		if err := ex.Delete(context.WithoutCancel(ctx), d.ns, in.Name); err != nil {
			d.t.log("%s: deleting NetworkChaos %s: %v", d.ns, in.Name, err)
		}
	}()
	out, err := ex.WaitRecovered(ctx, d.ns, in.Name)
	w.Injected, w.Recovered = in.Injected, out.Recovered
	return w, err
}

// addresses are a Service's ClusterIP and its pods' IPs.
func (d *deployment) addresses(ctx context.Context, service, selector string) ([]string, error) {
	svc, err := d.t.opt.Kube.CoreV1().Services(d.ns).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s addresses: %w", service, err)
	}
	out := []string{svc.Spec.ClusterIP}
	pods, err := d.t.opt.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s addresses: %w", service, err)
	}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			out = append(out, p.Status.PodIP)
		}
	}
	return out, nil
}

// DeletePod deletes pod and waits until it is gone; the ReplicaSet starts
// its replacement.
func (d *deployment) DeletePod(ctx context.Context, pod string) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Pod: pod, Node: d.nodeOf(ctx, pod), Injected: time.Now()}
	pods := d.t.opt.Kube.CoreV1().Pods(d.ns)
	if err := pods.Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		return history.ChaosWindow{}, fmt.Errorf("delete pod %s: %w", pod, err)
	}
	logged := map[string]bool{}
	err := wait.Poll(ctx, d.t.opt.DeployTimeout, "pod "+pod+" gone", func(ctx context.Context) (bool, error) {
		d.readFinalLogs(ctx, logged, pod)
		_, err := pods.Get(ctx, pod, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	w.Recovered = time.Now()
	return w, err
}

// readFinalLogs reads, while they still exist, the whole log of each pod
// not yet seen logging its stopped event, so that a follow stream that
// stalled cannot cost the end of a deleted pod's log (the checks call a log
// without its stopped event cut, and judge nothing from it).
func (d *deployment) readFinalLogs(ctx context.Context, logged map[string]bool, pods ...string) {
	for _, p := range pods {
		if !logged[p] {
			logged[p], _ = d.stopped(ctx, p)
		}
	}
}

// RollingRestart restarts the reconciler Deployment (a new pod template)
// and waits for the rollout and for every old pod to be gone.
func (d *deployment) RollingRestart(ctx context.Context, leader string) (history.ChaosWindow, error) {
	before, err := d.Pods(ctx)
	if err != nil {
		return history.ChaosWindow{}, err
	}
	w := history.ChaosWindow{Pod: leader, Node: d.nodeOf(ctx, leader), Injected: time.Now()}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"fencecheck.io/restarted-at":%q}}}}}`, w.Injected.Format(time.RFC3339Nano))
	if _, err := d.t.opt.Kube.AppsV1().Deployments(d.ns).Patch(ctx, d.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return history.ChaosWindow{}, fmt.Errorf("rolling restart: %w", err)
	}
	err = d.waitReady(ctx, d.name)
	if err == nil {
		logged := map[string]bool{}
		err = wait.Poll(ctx, d.t.opt.DeployTimeout, "the old pods gone", func(ctx context.Context) (bool, error) {
			d.readFinalLogs(ctx, logged, before...)
			now, err := d.Pods(ctx)
			for _, p := range now {
				for _, old := range before {
					if p == old {
						return false, err
					}
				}
			}
			return err == nil, err
		})
	}
	w.Recovered = time.Now()
	return w, err
}
