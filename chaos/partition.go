// Package chaos cuts pods off from the apiserver, described as Chaos Mesh
// NetworkChaos objects and run by an Executor: the built-in netlink agent
// (cmd/chaos-agent) or Chaos Mesh itself when the cluster has it. It knows
// nothing of fencing. Pure logic lives in chaos/plan and chaos/schedule,
// netlink I/O in chaos/netrules, the agent's loop in chaos/agent.
package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/fencecheck/fencecheck/leader"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PartitionSpec says which pods to cut off from which addresses, how long.
// Set PodName to target one pod (in PodNamespace), or PodLabels to target
// every running pod in PodNamespace that matches. Namespace is where the
// NetworkChaos object lives (default: PodNamespace). An empty Name makes the
// apiserver generate one ("fencecheck-partition-xxxxx"). TCPPorts, when
// set, narrows the cut to TCP connections to those ports on the targets
// (plan.PortsAnnotation; APIServerPorts gives the apiserver's): the
// apiserver can then still reach the pod (its pod proxy, used to read a
// partitioned pod's counters, connects from the endpoint address).
type PartitionSpec struct {
	Name, Namespace, PodNamespace, PodName string
	PodLabels                              map[string]string
	Targets                                []string
	TCPPorts                               []int
	Duration                               time.Duration
	Direction                              v1alpha1.Direction
}

// ManagedByLabel marks the objects fencecheck creates.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// NewPartition builds a NetworkChaos that cuts the pods matching selector
// (namespace + labels, or one pod by name) off from targets for duration.
func NewPartition(p PartitionSpec) *v1alpha1.NetworkChaos {
	ns := p.Namespace
	if ns == "" {
		ns = p.PodNamespace
	}
	dir := p.Direction
	if dir == "" {
		dir = v1alpha1.To
	}
	dur := p.Duration.String()
	nc := &v1alpha1.NetworkChaos{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NetworkChaos"},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: ns,
			Labels: map[string]string{ManagedByLabel: "fencecheck"},
		},
		Spec: v1alpha1.NetworkChaosSpec{
			Action:          v1alpha1.PartitionAction,
			Direction:       dir,
			Duration:        &dur,
			ExternalTargets: append([]string(nil), p.Targets...),
		},
	}
	if p.Name == "" {
		nc.GenerateName = "fencecheck-partition-"
	}
	if len(p.TCPPorts) > 0 {
		ports := make([]string, len(p.TCPPorts))
		for i, port := range p.TCPPorts {
			ports[i] = fmt.Sprint(port)
		}
		nc.Annotations = map[string]string{plan.PortsAnnotation: strings.Join(ports, ",")}
	}
	if p.PodName != "" {
		nc.Spec.Mode = v1alpha1.OneMode
		nc.Spec.Selector.Pods = map[string][]string{p.PodNamespace: {p.PodName}}
	} else {
		nc.Spec.Mode = v1alpha1.AllMode
		nc.Spec.Selector.Namespaces = []string{p.PodNamespace}
		nc.Spec.Selector.LabelSelectors = p.PodLabels
	}
	return nc
}

// APIServerTargets returns the apiserver addresses as a pod sees them: the
// kubernetes Service ClusterIP and the endpoints' IPs. Both are needed:
// inside the pod, routing happens before kube-proxy rewrites the ClusterIP.
func APIServerTargets(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	svc, err := c.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("apiserver targets: get service default/kubernetes: %w", err)
	}
	set := map[string]bool{}
	for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if ip != "" && ip != "None" {
			set[ip] = true
		}
	}
	slices, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return nil, fmt.Errorf("apiserver targets: list endpointslices for default/kubernetes: %w", err)
	}
	endpoints := 0
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				set[a] = true
				endpoints++
			}
		}
	}
	if endpoints == 0 {
		return nil, fmt.Errorf("apiserver targets: the kubernetes service has no endpoint addresses")
	}
	return sortedAddrs(set), nil
}

func sortedAddrs(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		a, errA := netip.ParseAddr(out[i])
		b, errB := netip.ParseAddr(out[j])
		if errA != nil || errB != nil {
			return out[i] < out[j]
		}
		return a.Less(b)
	})
	return out
}

// APIServerPorts returns the TCP ports a pod reaches the apiserver on: the
// kubernetes Service's port(s) and its endpoints' ports (443 and 6443 on kind).
func APIServerPorts(ctx context.Context, c kubernetes.Interface) ([]int, error) {
	svc, err := c.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("apiserver ports: get service default/kubernetes: %w", err)
	}
	set := map[int]bool{}
	for _, p := range svc.Spec.Ports {
		set[int(p.Port)] = true
		if p.TargetPort.IntValue() > 0 {
			set[p.TargetPort.IntValue()] = true
		}
	}
	slices, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return nil, fmt.Errorf("apiserver ports: list endpointslices: %w", err)
	}
	for _, s := range slices.Items {
		for _, p := range s.Ports {
			if p.Port != nil {
				set[int(*p.Port)] = true
			}
		}
	}
	var out []int
	for p := range set {
		out = append(out, p)
	}
	sort.Ints(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("apiserver ports: the kubernetes service has no ports")
	}
	return out, nil
}

// LeaderPod reads the Lease namespace/name and returns the current leader's
// pod: the pod of the namespace whose name the holder identity starts with
// (docs/controller-contract.md, MUST 1: "<pod name>_<suffix>", any suffix).
// A holder that names none of the namespace's pods is an error naming it,
// since the executor must not cut off a pod it guessed.
func LeaderPod(ctx context.Context, c kubernetes.Interface, namespace, lease string) (string, error) {
	l, err := c.CoordinationV1().Leases(namespace).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("leader: get lease %s/%s: %w", namespace, lease, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", fmt.Errorf("leader: lease %s/%s has no holder", namespace, lease)
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("leader: list the pods of %s: %w", namespace, err)
	}
	known := map[string]string{}
	for _, p := range pods.Items {
		known[p.Name] = p.Name
	}
	return leader.HolderPod(*l.Spec.HolderIdentity, known)
}
