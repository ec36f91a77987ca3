package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The status uses Chaos Mesh's shape: one record per pod (id
// "namespace/name") with Apply/Recover events, and the Selected,
// AllInjected, AllRecovered conditions computed from the records.
// metav1.Time serializes to whole seconds, so each event message also
// carries the exact time as "at=<RFC3339Nano>".

const atPrefix = "at="

func record(st *v1alpha1.NetworkChaosStatus, pod string) *v1alpha1.Record {
	for _, r := range st.Experiment.Records {
		if r.Id == pod {
			return r
		}
	}
	r := &v1alpha1.Record{Id: pod, SelectorKey: ".", Phase: v1alpha1.NotInjected}
	st.Experiment.Records = append(st.Experiment.Records, r)
	sort.Slice(st.Experiment.Records, func(i, j int) bool { return st.Experiment.Records[i].Id < st.Experiment.Records[j].Id })
	return r
}

func event(typ v1alpha1.RecordEventType, op v1alpha1.RecordEventOperation, msg string, at time.Time) v1alpha1.RecordEvent {
	ts := metav1.NewTime(at)
	return v1alpha1.RecordEvent{Type: typ, Operation: op, Message: strings.TrimSpace(msg + " " + atPrefix + at.UTC().Format(time.RFC3339Nano)), Timestamp: &ts}
}

// MarkInjected records that pod's routes are in place. It returns false when
// the record already says so (no status write needed).
func MarkInjected(st *v1alpha1.NetworkChaosStatus, pod, msg string, at time.Time) bool {
	r := record(st, pod)
	if r.Phase == v1alpha1.Injected {
		return false
	}
	r.Phase = v1alpha1.Injected
	r.InjectedCount++
	r.Events = append(r.Events, event(v1alpha1.TypeSucceeded, v1alpha1.Apply, msg, at))
	st.Experiment.DesiredPhase = v1alpha1.RunningPhase
	UpdateConditions(st)
	return true
}

// MarkRecovered records that pod's routes are gone.
func MarkRecovered(st *v1alpha1.NetworkChaosStatus, pod, msg string, at time.Time) bool {
	r := record(st, pod)
	if r.Phase != v1alpha1.Injected {
		return false
	}
	r.Phase = v1alpha1.NotInjected
	r.RecoveredCount++
	r.Events = append(r.Events, event(v1alpha1.TypeSucceeded, v1alpha1.Recover, msg, at))
	st.Experiment.DesiredPhase = v1alpha1.StoppedPhase
	UpdateConditions(st)
	return true
}

// MarkFailed records a failed apply or recover; the same message twice in a
// row is written once.
func MarkFailed(st *v1alpha1.NetworkChaosStatus, pod string, op v1alpha1.RecordEventOperation, msg string, at time.Time) bool {
	r := record(st, pod)
	if n := len(r.Events); n > 0 {
		last := r.Events[n-1]
		if last.Type == v1alpha1.TypeFailed && last.Operation == op && stripAt(last.Message) == msg {
			return false
		}
	}
	r.Events = append(r.Events, event(v1alpha1.TypeFailed, op, msg, at))
	UpdateConditions(st)
	return true
}

func stripAt(msg string) string {
	if i := strings.LastIndex(msg, " "+atPrefix); i >= 0 {
		return msg[:i]
	}
	if strings.HasPrefix(msg, atPrefix) {
		return ""
	}
	return msg
}

// UpdateConditions recomputes the conditions from the records.
func UpdateConditions(st *v1alpha1.NetworkChaosStatus) {
	recs := st.Experiment.Records
	all := func(ph v1alpha1.Phase) bool {
		if len(recs) == 0 {
			return false
		}
		for _, r := range recs {
			if r.Phase != ph {
				return false
			}
		}
		return true
	}
	b := func(v bool) corev1.ConditionStatus {
		if v {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	st.Conditions = []v1alpha1.ChaosCondition{
		{Type: v1alpha1.ConditionSelected, Status: b(len(recs) > 0)},
		{Type: v1alpha1.ConditionAllInjected, Status: b(all(v1alpha1.Injected))},
		{Type: v1alpha1.ConditionAllRecovered, Status: b(all(v1alpha1.NotInjected))},
		{Type: v1alpha1.ConditionPaused, Status: corev1.ConditionFalse},
	}
}

// EventTime is an event's exact time: the "at=" in its message if present
// (our agent), else its whole-second timestamp (Chaos Mesh).
func EventTime(e v1alpha1.RecordEvent) time.Time {
	if i := strings.LastIndex(e.Message, atPrefix); i >= 0 {
		if f := strings.Fields(e.Message[i+len(atPrefix):]); len(f) > 0 {
			if t, err := time.Parse(time.RFC3339Nano, f[0]); err == nil {
				return t
			}
		}
	}
	if e.Timestamp != nil {
		return e.Timestamp.Time
	}
	return time.Time{}
}

// PodProgress is what the status says about one pod.
type PodProgress struct {
	Pod       string
	Injected  time.Time // first successful apply
	Recovered time.Time // last successful recover after it
	Failure   string    // last failed event, if it is the latest event
}

// Progress reads the status: per pod, when it was injected and recovered.
// Record ids may carry a container suffix ("ns/pod/container", Chaos Mesh);
// they are folded onto the pod.
func Progress(st *v1alpha1.NetworkChaosStatus) map[string]*PodProgress {
	out := map[string]*PodProgress{}
	for _, r := range st.Experiment.Records {
		parts := strings.SplitN(r.Id, "/", 3)
		pod := r.Id
		if len(parts) >= 2 {
			pod = parts[0] + "/" + parts[1]
		}
		p := out[pod]
		if p == nil {
			p = &PodProgress{Pod: pod}
			out[pod] = p
		}
		for _, e := range r.Events {
			t := EventTime(e)
			switch {
			case e.Type == v1alpha1.TypeFailed:
				p.Failure = fmt.Sprintf("%s failed: %s", e.Operation, stripAt(e.Message))
			case e.Operation == v1alpha1.Apply:
				p.Failure = ""
				if p.Injected.IsZero() || t.Before(p.Injected) {
					p.Injected = t
				}
			case e.Operation == v1alpha1.Recover:
				p.Failure = ""
				if t.After(p.Recovered) {
					p.Recovered = t
				}
			}
		}
		if r.Phase == v1alpha1.Injected { // re-injected after a recover: not recovered yet
			p.Recovered = time.Time{}
		}
	}
	return out
}
