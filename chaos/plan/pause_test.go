package plan

import (
	"errors"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pause(name, dur string, containers ...string) *PodPause {
	return &PodPause{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", UID: types.UID("u-" + name), CreationTimestamp: metav1.NewTime(t0)},
		Spec: PodPauseSpec{ContainerSelector: v1alpha1.ContainerSelector{
			PodSelector: v1alpha1.PodSelector{Mode: v1alpha1.AllMode, Selector: v1alpha1.PodSelectorSpec{
				GenericSelectorSpec: v1alpha1.GenericSelectorSpec{LabelSelectors: map[string]string{"app": "rec"}}}},
			ContainerNames: containers}, Duration: str(dur)},
	}
}

// runningPod is pod with running containers (id "cid-<pod>-<container>").
func runningPod(name, node string, containers ...string) corev1.Pod {
	p := pod("app", name, node, "10.244.0.5", map[string]string{"app": "rec"})
	for _, c := range containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c, ContainerID: "containerd://cid-" + name + "-" + c,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return p
}

func TestDesiredPauses(t *testing.T) {
	pods := []corev1.Pod{runningPod("rec-1", "n1", "reconciler", "sidecar"), runningPod("rec-2", "n2", "reconciler")}
	now := t0.Add(time.Second)

	want, problems := DesiredPauses([]*PodPause{pause("all", "10s")}, pods, "n1", now, allowApp, nil)
	if len(problems) != 0 || len(want) != 2 || want["app/rec-1/sidecar"] == nil {
		t.Fatalf("every container of this node's pod: want %v problems %v", want, problems)
	}
	f := want["app/rec-1/reconciler"]
	if f.ContainerID != "cid-rec-1-reconciler" || len(f.Parts) != 1 || !f.Parts[0].Deadline.Equal(t0.Add(11*time.Second)) /* creation rounded up to the next second */ {
		t.Fatalf("freeze %+v", f)
	}

	// containerNames narrows; two objects on one container keep both parts.
	want, _ = DesiredPauses([]*PodPause{pause("one", "10s", "reconciler"), pause("all", "20s")}, pods, "n1", now, allowApp, nil)
	if len(want) != 2 || len(want["app/rec-1/reconciler"].Parts) != 2 || len(want["app/rec-1/sidecar"].Parts) != 1 {
		t.Fatalf("narrowed: %v", want)
	}

	// Out of scope, deleted, past the deadline, edited after injection.
	closed := pause("closed", "10s")
	closed.Namespace = "closed"
	gone := pause("gone", "10s")
	gone.DeletionTimestamp = &metav1.Time{Time: now}
	want, problems = DesiredPauses([]*PodPause{closed, gone, pause("short", "1s")}, pods, "n1", now.Add(time.Second), allowApp, nil)
	if len(want) != 0 || len(problems) != 1 || problems[0].Chaos != "closed/closed" {
		t.Fatalf("refusals: want %v problems %v", want, problems)
	}
	inj := map[string]Injection{"u-all": {Fingerprint: PauseFingerprint(pause("all", "10s")), Deadline: t0.Add(10 * time.Second)}}
	want, problems = DesiredPauses([]*PodPause{pause("all", "10m")}, pods, "n1", now, allowApp, inj)
	if len(want) != 0 || len(problems) != 1 || !errors.Is(problems[0].Err, ErrPauseEdited) {
		t.Fatalf("edited: want %v problems %v", want, problems)
	}
}
