package cluster

import (
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/witness/record"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// CrashSink SIGKILLs the sink's container on its node (crictl stop with no
// grace: the runtime sends SIGKILL at once) and waits until the kubelet
// restarted it in the same pod, on the same volume, and it answers through
// its Service again. A pod deletion would be a SIGTERM first, or a new pod;
// this is the process dying under load. The node is reached with `docker
// exec`: a kind node is the docker container of the node's name.
func (d *deployment) CrashSink(ctx context.Context) (history.ChaosWindow, error) {
	w := history.ChaosWindow{}
	pod, cs, err := d.sinkContainer(ctx)
	if err != nil {
		return w, err
	}
	id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
	if !ok {
		return w, fmt.Errorf("sink container id %q: not a containerd container", cs.ContainerID)
	}
	w.Pod, w.Node = pod.Name, pod.Spec.NodeName
	w.Injected = time.Now()
	// crictl's own deadline for the runtime call is 2 s, which containerd
	// overran on two busy cores with three scenarios at once (s6-bench-p3);
	// the kill itself is still immediate (--timeout 0 after stop).
	out, err := exec.CommandContext(ctx, "docker", "exec", w.Node, "crictl", "--timeout", "30s", "stop", "--timeout", "0", id).CombinedOutput()
	if err != nil {
		return history.ChaosWindow{}, fmt.Errorf("crictl --timeout 30s stop --timeout 0 %s on %s: %w: %s", id, w.Node, err, bytes.TrimSpace(out))
	}
	d.t.log("%s: SIGKILL of sink container %s (pod %s, restarts %d) on %s", d.ns, id[:12], pod.Name, cs.RestartCount, w.Node)
	err = wait.Poll(ctx, d.t.opt.DeployTimeout, "the sink container restarted, ready and answering", func(ctx context.Context) (bool, error) {
		p, now, err := d.sinkContainer(ctx)
		switch {
		case err != nil:
			return false, err
		case p.UID != pod.UID:
			return false, wait.GiveUp(fmt.Errorf("the sink pod was replaced (%s -> %s): its volume may not be the same", pod.Name, p.Name))
		case now.RestartCount <= cs.RestartCount || !now.Ready:
			return false, nil
		}
		// /healthz needs no token (the floor's read does) and answers once
		// the store is open.
		_, err = d.t.opt.Kube.CoreV1().Services(d.ns).ProxyGet("http", SinkService, SinkPort, "/healthz", nil).DoRaw(ctx)
		return err == nil, err
	})
	w.Recovered = time.Now()
	if err != nil {
		return w, fmt.Errorf("%w: %s", err, d.podProblems(SinkDeployment))
	}
	return w, nil
}

// sinkContainer is the running sink pod and its container's status.
func (d *deployment) sinkContainer(ctx context.Context) (*corev1.Pod, corev1.ContainerStatus, error) {
	pods, err := d.t.opt.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: SinkSelector})
	if err != nil {
		return nil, corev1.ContainerStatus{}, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == SinkDeployment {
				return p, cs, nil
			}
		}
	}
	return nil, corev1.ContainerStatus{}, errors.New("no running sink pod")
}

// WitnessAdmin POSTs req as JSON to the witness's admin port through the
// apiserver's service proxy (which consumes an Authorization header:
// a probe's token travels in its body).
func (d *deployment) WitnessAdmin(ctx context.Context, path string, req, resp any) error {
	if p, ok := req.(*record.ProbeRequest); ok && p.Authorization == "" {
		p.Authorization = "Bearer " + d.writerToken // the sink refuses a probe without it
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	body, err := d.t.opt.Kube.CoreV1().RESTClient().Post().Namespace(d.ns).Resource("services").
		Name(utilnet.JoinSchemeNamePort("http", WitnessService, WitnessAdminPort)).SubResource("proxy").Suffix(path).
		SetHeader("Content-Type", "application/json").Body(b).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("witness %s via %s/%s:%s: %w", path, d.ns, WitnessService, WitnessAdminPort, err)
	}
	if err := json.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("witness %s: bad answer: %w", path, err)
	}
	return nil
}
