package plan

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(st *v1alpha1.NetworkChaosStatus, ty v1alpha1.ChaosConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == ty {
			return c.Status
		}
	}
	return ""
}

func TestStatusLifecycle(t *testing.T) {
	var st v1alpha1.NetworkChaosStatus
	inj := t0.Add(1234567 * time.Microsecond)
	if !MarkInjected(&st, "app/rec-1", "routes added", inj) {
		t.Fatal("first inject not a change")
	}
	if MarkInjected(&st, "app/rec-1", "routes added", inj.Add(time.Second)) {
		t.Fatal("second inject reported as a change")
	}
	if cond(&st, v1alpha1.ConditionAllInjected) != corev1.ConditionTrue || cond(&st, v1alpha1.ConditionAllRecovered) != corev1.ConditionFalse {
		t.Fatalf("conditions after inject: %+v", st.Conditions)
	}
	// a second pod on another node not yet injected: AllInjected false
	MarkFailed(&st, "app/rec-2", v1alpha1.Apply, "no netns", t0)
	if cond(&st, v1alpha1.ConditionAllInjected) != corev1.ConditionFalse {
		t.Fatal("AllInjected true with a failed pod")
	}
	if MarkFailed(&st, "app/rec-2", v1alpha1.Apply, "no netns", t0.Add(time.Second)) {
		t.Fatal("repeated failure written twice")
	}
	rec := t0.Add(31*time.Second + 5*time.Millisecond)
	MarkRecovered(&st, "app/rec-1", "routes removed", rec)
	// JSON round trip (as through the apiserver) keeps sub-second times.
	b, _ := json.Marshal(st)
	var back v1alpha1.NetworkChaosStatus
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	pr := Progress(&back)
	p := pr["app/rec-1"]
	if p == nil || !p.Injected.Equal(inj) || !p.Recovered.Equal(rec) || p.Failure != "" {
		t.Fatalf("progress %+v (want injected %v recovered %v)", p, inj, rec)
	}
	if f := pr["app/rec-2"].Failure; f != "Apply failed: no netns" {
		t.Fatalf("failure %q", f)
	}
}

// Negative control: a record re-injected after a recovery is not recovered.
func TestProgressReinjected(t *testing.T) {
	var st v1alpha1.NetworkChaosStatus
	MarkInjected(&st, "a/p", "", t0)
	MarkRecovered(&st, "a/p", "", t0.Add(time.Second))
	MarkInjected(&st, "a/p", "", t0.Add(2*time.Second))
	if p := Progress(&st)["a/p"]; !p.Recovered.IsZero() {
		t.Fatalf("re-injected pod reported recovered at %v", p.Recovered)
	}
}

// Chaos Mesh writes whole-second timestamps and container-level ids.
func TestProgressChaosMeshShape(t *testing.T) {
	ts := metav1.NewTime(t0)
	st := v1alpha1.NetworkChaosStatus{ChaosStatus: v1alpha1.ChaosStatus{Experiment: v1alpha1.ExperimentStatus{Records: []*v1alpha1.Record{{
		Id: "app/rec-1/main", Phase: v1alpha1.Injected,
		Events: []v1alpha1.RecordEvent{{Type: v1alpha1.TypeSucceeded, Operation: v1alpha1.Apply, Timestamp: &ts}},
	}}}}}
	p := Progress(&st)["app/rec-1"]
	if p == nil || !p.Injected.Equal(t0) || !p.Recovered.IsZero() {
		t.Fatalf("progress %+v", p)
	}
}
