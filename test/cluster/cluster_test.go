//go:build cluster

package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const probeImage = "fencecheck/probe:dev"

// client connects through $KUBECONFIG; a missing cluster is a failure that
// says what to run, never a skip.
func client(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Fatal("KUBECONFIG is not set: run `make kind-up images` (it writes $FENCECHECK_CACHE/kubeconfig-fencecheck) and export KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v (run `make kind-up`)", path, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.Discovery().ServerVersion(); err != nil || ctx.Err() != nil {
		t.Fatalf("apiserver from %s unreachable: %v (run `make kind-up`)", path, err)
	}
	return cs
}

func readyNodes(t *testing.T, cs *kubernetes.Clientset) []corev1.Node {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if !nodeReady(n) {
			t.Errorf("node %s is not Ready", n.Name)
		}
	}
	return nodes.Items
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestNodesAndSystemPods(t *testing.T) {
	cs := client(t)
	nodes := readyNodes(t, cs)
	if len(nodes) < 2 {
		t.Fatalf("%d nodes; the project needs a control plane and at least one worker (KIND_WORKERS>=1)", len(nodes))
	}
	for _, app := range []struct {
		label   string
		perNode bool
	}{{"k8s-app=kube-dns", false}, {"k8s-app=kube-proxy", true}, {"app=kindnet", true}} {
		pods, err := cs.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: app.label})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			} else {
				t.Errorf("%s pod %s is %s", app.label, p.Name, p.Status.Phase)
			}
		}
		if running == 0 || (app.perNode && running != len(nodes)) {
			t.Errorf("%s: %d Running pods, want %s", app.label, running, map[bool]string{true: fmt.Sprint(len(nodes)), false: ">= 1"}[app.perNode])
		}
	}
}

// testNamespace creates a namespace that is deleted when the test ends, and
// waits for its default ServiceAccount (pods are rejected without it).
func testNamespace(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fc-clustertest-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	waitFor(t, 60*time.Second, "default ServiceAccount in "+ns.Name, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return ns.Name
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, timeout, err)
	}
}

// podProblem reports a container state that will not fix itself, so a wait
// fails at once with the reason instead of at its deadline.
func podProblem(p *corev1.Pod) error {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName":
				return fmt.Errorf("pod %s: %s: %s (run `make images` / `bash scripts/images.sh probe`)", p.Name, w.Reason, w.Message)
			case "CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError":
				return fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
			}
		}
	}
	return nil
}

func probePod(name, node string, args []string, restart corev1.RestartPolicy) *corev1.Pod {
	fieldEnv := func(n, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: restart,
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever, Args: args,
				Env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_IP", "status.podIP"), fieldEnv("NODE_NAME", "spec.nodeName")},
			}},
		},
	}
}

// runToCompletion starts a pod that exits, waits for it to end and returns
// whether it succeeded and its log.
func runToCompletion(t *testing.T, cs *kubernetes.Clientset, ns string, pod *corev1.Pod) (bool, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	waitFor(t, 90*time.Second, "pod "+pod.Name+" to finish", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		if err := podProblem(p); err != nil {
			return false, err
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	raw, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).Do(ctx).Raw()
	if err != nil {
		t.Fatalf("logs of %s: %v", pod.Name, err)
	}
	return phase == corev1.PodSucceeded, string(raw)
}

// TestPodNetworking: a pod from our image reaches the apiserver through the
// `kubernetes` Service ClusterIP, and a pod on another node through a
// Service name that CoreDNS resolves.
func TestPodNetworking(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	nodes := readyNodes(t, cs)
	if len(nodes) < 2 {
		t.Fatalf("need 2 nodes for the cross-node check, have %d (KIND_WORKERS>=1)", len(nodes))
	}
	serverNode, clientNode := nodes[len(nodes)-1].Name, nodes[len(nodes)-2].Name
	ns := testNamespace(t, cs)

	server := probePod("ping-server", serverNode, []string{"serve", "--addr", ":8080"}, corev1.RestartPolicyAlways)
	server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/ping", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ping"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "ping-server"},
			Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var serverIP string
	waitFor(t, 90*time.Second, "ping-server Ready", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "ping-server", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("ping-server failed: %+v", p.Status)
		}
		if err := podProblem(p); err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				serverIP = p.Status.PodIP
				return true, nil
			}
		}
		return false, nil
	})

	kubeSvc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://ping.%s.svc.cluster.local:8080/ping", ns)
	// Ready is not yet reachable: the endpoint goes into an EndpointSlice and
	// then into kube-proxy's rules on the checker's node, until then the
	// ClusterIP refuses. --wait tries again until it passes, for 30 s at most.
	ok, out := runToCompletion(t, cs, ns, probePod("checker", clientNode,
		[]string{"check", "--wait", "30s", "--apiserver", "--url", url}, corev1.RestartPolicyNever))
	t.Logf("checker on %s -> server on %s (%s):\n%s", clientNode, serverNode, serverIP, out)
	if !ok {
		t.Fatalf("probe check failed on node %s", clientNode)
	}
	wantAPI := fmt.Sprintf("OK apiserver https://%s:443", kubeSvc.Spec.ClusterIP)
	if !strings.Contains(out, wantAPI) {
		t.Errorf("apiserver was not reached through the kubernetes ClusterIP: want %q in output", wantAPI)
	}
	if !strings.Contains(out, `"pod":"ping-server"`) || !strings.Contains(out, `"ip":"`+serverIP+`"`) || !strings.Contains(out, `"node":"`+serverNode+`"`) {
		t.Errorf("the answer did not come from ping-server (%s on %s)", serverIP, serverNode)
	}

	// Negative control: the same check against a name CoreDNS cannot
	// resolve must fail, or the probe could not tell us anything.
	ok, out = runToCompletion(t, cs, ns, probePod("checker-negative", clientNode,
		[]string{"check", "--url", fmt.Sprintf("http://no-such-svc.%s.svc.cluster.local:8080/ping", ns)}, corev1.RestartPolicyNever))
	if ok || !strings.Contains(out, "FAIL url") {
		t.Errorf("probe check against a missing Service succeeded; output:\n%s", out)
	}
}

// TestDefaultStorageClass: a PVC on the default StorageClass binds once a pod
// uses it (local-path-provisioner, WaitForFirstConsumer).
func TestDefaultStorageClass(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := testNamespace(t, cs)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := probePod("pvc-user", "", []string{"serve", "--addr", ":8080"}, corev1.RestartPolicyAlways)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120*time.Second, "PVC bound and pod running", func(ctx context.Context) (bool, error) {
		c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "pvc-user", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if err := podProblem(p); err != nil {
			return false, err
		}
		return c.Status.Phase == corev1.ClaimBound && p.Status.Phase == corev1.PodRunning, nil
	})
}
