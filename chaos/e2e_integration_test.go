//go:build integration && linux

package chaos

// End to end on the host, no kind: a real kube-apiserver (internal/kubetest,
// RBAC on), our CRD and RBAC applied by BuiltIn.Apply, the real agent loop
// running in-process as the chaos-agent service account (so the ClusterRole
// is proven sufficient), a Pod object whose status IP lives in a network
// namespace we create, and the harness side (Inject, WaitRecovered). Needs
// root and $FENCECHECK_KUBE_BIN_DIR (scripts/test-integration-chaos.sh sets it).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/agent"
	"github.com/fencecheck/fencecheck/chaos/netrules"
	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/fencecheck/fencecheck/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

func TestEndToEndOnALocalAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (network namespaces): run scripts/test-integration-chaos.sh as root")
	}
	srv := kubetest.Start(t, kubetest.Options{AuthorizationMode: "RBAC"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(srv.Config)

	ex, err := NewBuiltIn(srv.Config, Options{Logf: t.Logf, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ex.Apply(ctx); err != nil { // idempotent: Install runs on every harness start
		t.Fatalf("second apply: %v", err)
	}

	// The pod: an object with a node and an IP, and a namespace holding the IP.
	ns := fmt.Sprintf("fce2e%d", time.Now().UnixNano()%1000000)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0"},
		{"-n", ns, "addr", "add", "10.244.7.9/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	// The agent heals every tagged namespace in its directory: give it one
	// holding only ours, so tests running in parallel keep theirs.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(netrules.DefaultDir, ns), filepath.Join(dir, ns)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{plan.AllowLabel: plan.AllowValue}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// no controller-manager here: create the default service account ourselves
	admin.CoreV1().ServiceAccounts("app").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	pod, err := admin.CoreV1().Pods("app").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rec-0", Labels: map[string]string{"app": "rec"}},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.7.9", PodIPs: []corev1.PodIP{{IP: "10.244.7.9"}}}
	if _, err := admin.CoreV1().Pods("app").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The agent, as its service account.
	user, groups := kubetest.ServiceAccountUser(AgentNamespace, "chaos-agent")
	saCfg := srv.Impersonate(user, groups...)
	a := &agent.Agent{Node: "node-a", NS: &agent.LinuxNamespaces{Dir: dir},
		Dyn: dynamic.NewForConfigOrDie(saCfg), Logf: t.Logf}
	actx, stopAgent := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx, kubernetes.NewForConfigOrDie(saCfg)) }()
	defer func() { stopAgent(); <-done }()

	routes := func() string {
		out, _ := exec.Command("ip", "-n", ns, "route", "show", "proto", "147").CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	const dur = 4 * time.Second
	nc := NewPartition(PartitionSpec{PodNamespace: "app", PodLabels: map[string]string{"app": "rec"},
		Targets: []string{"10.96.0.1", "172.18.0.2"}, Duration: dur, Direction: v1alpha1.Both})
	w, err := ex.Inject(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if r := routes(); !strings.Contains(r, "10.96.0.1") || !strings.Contains(r, "172.18.0.2") {
		t.Fatalf("routes in the pod namespace after Inject returned:\n%s", r)
	}
	if w.Pod != "app/rec-0" {
		t.Fatalf("window %+v", w)
	}
	rw, err := ex.WaitRecovered(ctx, "app", w.Name)
	if err != nil {
		t.Fatal(err)
	}
	if r := routes(); r != "" {
		t.Fatalf("routes left after recovery:\n%s", r)
	}
	got, _ := ex.get(ctx, "app", w.Name)
	end, _ := plan.Deadline(got)
	t.Logf("window %s (asked %s); recovered %s after the deadline", rw.Recovered.Sub(rw.Injected).Round(time.Millisecond), dur,
		rw.Recovered.Sub(end).Round(time.Millisecond))
	if rw.Recovered.Before(end) || rw.Recovered.Sub(end) > 2*time.Second {
		t.Fatalf("recovered at %v, deadline %v", rw.Recovered, end)
	}
	if rw.Recovered.Sub(rw.Injected) < dur-time.Second {
		t.Fatalf("window %s shorter than asked %s", rw.Recovered.Sub(rw.Injected), dur)
	}
	// The object reads back as Chaos Mesh's shape.
	for _, c := range got.Status.Conditions {
		if c.Type == v1alpha1.ConditionAllRecovered && c.Status != corev1.ConditionTrue {
			t.Fatalf("conditions %+v", got.Status.Conditions)
		}
	}
	if err := ex.Delete(ctx, "app", w.Name); err != nil {
		t.Fatal(err)
	}

	// Deleting an active partition heals it at once.
	nc2 := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, Duration: 10 * time.Minute})
	w2, err := ex.Inject(ctx, nc2)
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := ex.Delete(ctx, "app", w2.Name); err != nil {
		t.Fatal(err)
	}
	for routes() != "" {
		if time.Since(deleted) > 10*time.Second {
			t.Fatalf("routes still there 10s after the object was deleted:\n%s", routes())
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	t.Logf("deleted partition healed in %s", time.Since(deleted).Round(time.Millisecond))

	// What the agent may not do: its role grants no pod writes, no secrets.
	saKube := kubernetes.NewForConfigOrDie(saCfg)
	if err := saKube.CoreV1().Pods("app").Delete(ctx, "rec-0", metav1.DeleteOptions{}); err == nil {
		t.Fatal("the agent's service account may delete pods")
	}
	if _, err := saKube.CoreV1().Secrets("app").List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the agent's service account may list secrets")
	}
}
