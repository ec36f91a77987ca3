package collect

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func nodeWith(name, kubelet, runtime string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{
		KubeletVersion: kubelet, ContainerRuntimeVersion: runtime, KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)"}}}
}

// A cluster whose nodes run two kubelet versions (one node not yet
// upgraded) says both: the history must not name only the first node's.
func TestClusterVersions(t *testing.T) {
	kube := fake.NewClientset(nodeWith("b", "v1.34.4", "containerd://2.2.1"), nodeWith("a", "v1.35.3", "containerd://2.2.1"), nodeWith("c", "v1.35.3", "containerd://2.2.1"))
	kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.35.3"}
	got, err := ClusterVersions(context.Background(), kube)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kubernetes": "v1.35.3", "kubelet": "v1.34.4, v1.35.3", "container runtime": "containerd://2.2.1",
		"kernel": "6.1.0", "node os": "Debian GNU/Linux 12 (bookworm)"}
	if !maps.Equal(got, want) {
		t.Errorf("ClusterVersions = %v, want %v", got, want)
	}
}

// A kubeconfig that may not list nodes still runs the suite: the history
// says the nodes were not listed, and why, instead of the run stopping.
func TestClusterVersionsWithoutNodeAccess(t *testing.T) {
	kube := fake.NewClientset(nodeWith("a", "v1.35.3", "containerd://2.2.1"))
	kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.35.3"}
	kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
	got, err := ClusterVersions(context.Background(), kube)
	if err != nil {
		t.Fatal(err)
	}
	if got["kubernetes"] != "v1.35.3" || !strings.Contains(got["nodes"], "forbidden") || got["kubelet"] != "" {
		t.Errorf("ClusterVersions = %v, want the apiserver's version and why the nodes are missing", got)
	}
}
