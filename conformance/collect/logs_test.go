package collect

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencecheck/fencecheck/eventlog"
)

// Stop reads every started pod's final log (at once) and keeps, per pod,
// the longer of the followed and the final events; a pod not started yet
// has no log to read. The fake serves "fake logs", a log with no events.
func TestLogFollowerStopKeepsTheLongerLogPerPod(t *testing.T) {
	pod := func(name string, running bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "r"}}}
		if running {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
		return p
	}
	client := fake.NewClientset(pod("a", true), pod("b", true), pod("c", false))
	f := FollowLogs(context.Background(), client, "ns", "app=r", nil)
	f.mu.Lock()
	f.events["a"] = []eventlog.Event{{Kind: eventlog.KindStarted}} // followed, longer than the final log
	f.mu.Unlock()

	events, problems := f.Stop(context.Background())
	if len(events["a"]) != 1 {
		t.Errorf("a: kept %d events, want the 1 followed", len(events["a"]))
	}
	if _, ok := events["b"]; !ok {
		t.Errorf("b: its final log (no events) is missing from %v", events)
	}
	if _, ok := events["c"]; ok {
		t.Errorf("c never started, yet has a log: %v", events["c"])
	}
	// (A follow stream Stop cancelled may be reported too.)
	shorter := 0
	for _, p := range problems {
		if strings.HasPrefix(p, "a: the final log has 0 events, fewer than the 1 followed") {
			shorter++
		}
		if strings.HasPrefix(p, "b:") && !strings.Contains(p, "following the log failed") {
			t.Errorf("b: unexpected problem %q", p)
		}
	}
	if shorter != 1 {
		t.Errorf("problems = %q, want one about a's shorter final log", problems)
	}
}
