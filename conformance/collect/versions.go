package collect

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterVersions is what a run's history records of the cluster it ran on, so
// that a saved verdict says which Kubernetes it is about: the apiserver's
// version and, from the nodes' status, the kubelets', container runtimes',
// kernels' and OS images' (each the distinct values, sorted, comma-joined).
// Only an apiserver that does not answer is an error: nodes the
// kubeconfig may not list leave "nodes" saying why, and the run goes on.
func ClusterVersions(ctx context.Context, kube kubernetes.Interface) (map[string]string, error) {
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("apiserver version: %w", err)
	}
	out := map[string]string{"kubernetes": v.GitVersion}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		out["nodes"] = fmt.Sprintf("not listed (%v)", err)
		return out, nil
	}
	distinct := map[string][]string{}
	for _, n := range nodes.Items {
		i := n.Status.NodeInfo
		for k, val := range map[string]string{"kubelet": i.KubeletVersion, "container runtime": i.ContainerRuntimeVersion,
			"kernel": i.KernelVersion, "node os": i.OSImage} {
			if val != "" && !slices.Contains(distinct[k], val) {
				distinct[k] = append(distinct[k], val)
			}
		}
	}
	for k, vals := range distinct {
		slices.Sort(vals)
		out[k] = strings.Join(vals, ", ")
	}
	return out, nil
}
