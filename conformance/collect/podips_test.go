package collect

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencecheck/fencecheck/conformance/history"
)

func pod(name, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "r"}},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning}}
}

// The watcher records each pod's address with when it was held: listed at
// start, changed, released on deletion; another pod's address never.
func TestPodIPWatcher(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(pod("a", "10.0.0.1"), pod("other", "10.0.0.9"))
	other, _ := c.CoreV1().Pods("ns").Get(ctx, "other", metav1.GetOptions{})
	other.Labels = nil
	if _, err := c.CoreV1().Pods("ns").Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := WatchPodIPs(ctx, c, "ns", "app=r", t.Logf)
	held := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			w.mu.Lock()
			got := len(w.closed) + len(w.open)
			w.mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waited for %d addresses, have %d", n, got)
			}
			time.Sleep(10 * time.Millisecond) // a test polling a goroutine's state
		}
	}
	held(1)
	if _, err := c.CoreV1().Pods("ns").Create(ctx, pod("b", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("ns").UpdateStatus(ctx, pod("b", "10.0.0.2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	held(2)
	if err := c.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("ns").Create(ctx, pod("c", "10.0.0.1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held(3)
	ips, problems := w.Stop()
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	by := map[string]history.PodIP{}
	for _, p := range ips {
		by[p.Pod] = p
	}
	if len(ips) != 3 || by["a"].IP != "10.0.0.1" || by["a"].To.IsZero() || by["b"].IP != "10.0.0.2" || !by["b"].To.IsZero() ||
		by["c"].IP != "10.0.0.1" || by["c"].From.Before(by["a"].To) {
		t.Errorf("recorded %+v", ips)
	}
}
