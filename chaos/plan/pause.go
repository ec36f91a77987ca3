package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PodPause is our own chaos kind (Chaos Mesh has no pause: its issue
// #1924), shaped like Chaos Mesh's PodChaos: a container selector and a
// duration. The agent freezes the selected containers' cgroups (the whole
// process tree, as `docker pause` does) until the deadline, then thaws
// them. A stop-the-world pause longer than the lease TTL is the canonical
// stale leader: it wakes up believing it still leads.
type PodPause struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodPauseSpec   `json:"spec"`
	Status            PodPauseStatus `json:"status,omitempty"`
}

// PodPauseSpec selects containers (Chaos Mesh's ContainerSelector: no
// containerNames means every container of the pod) and says for how long.
type PodPauseSpec struct {
	v1alpha1.ContainerSelector `json:",inline"`
	Duration                   *string `json:"duration"`
}

// PodPauseStatus has Chaos Mesh's status shape (records per pod, the
// Selected/AllInjected/AllRecovered conditions), so the status code is
// shared with NetworkChaos.
type PodPauseStatus = v1alpha1.NetworkChaosStatus

// PauseGroupVersion, PauseKind and PauseGVR name the kind.
var (
	PauseGroupVersion = schema.GroupVersion{Group: "chaos.fencecheck.io", Version: "v1alpha1"}
	PauseGVR          = PauseGroupVersion.WithResource("podpauses")
)

const PauseKind = "PodPause"

// MaxContainers bounds containerNames.
const MaxContainers = 8

// ValidatePause reports why pp cannot be run.
func ValidatePause(pp *PodPause) error {
	switch pp.Spec.Mode {
	case v1alpha1.AllMode, v1alpha1.OneMode, v1alpha1.FixedMode:
	default:
		return fmt.Errorf("mode %q not supported (use all, one or fixed)", pp.Spec.Mode)
	}
	if n := len(pp.Spec.ContainerNames); n > MaxContainers {
		return fmt.Errorf("%d containerNames: at most %d", n, MaxContainers)
	}
	d, err := ParseDuration(pp.Spec.Duration)
	if err != nil {
		return err
	}
	return CheckDuration(d)
}

// CheckPause is every scope rule for a PodPause.
func (s Scope) CheckPause(pp *PodPause) error {
	if err := ValidatePause(pp); err != nil {
		return err
	}
	return s.CheckNamespaces(pp.Namespace, pp.Spec.Selector)
}

// PauseDeadline is when the pause ends (the same rule as a partition's).
func PauseDeadline(pp *PodPause) (time.Time, error) {
	d, err := ParseDuration(pp.Spec.Duration)
	if err != nil {
		return time.Time{}, err
	}
	return DeadlineFrom(pp.CreationTimestamp, d)
}

// PauseFingerprint is Fingerprint for a PodPause.
func PauseFingerprint(pp *PodPause) string { return Fingerprint(pp.Spec, nil) }

// PauseActive is EffectiveActive for a PodPause.
func PauseActive(pp *PodPause, now time.Time, injected map[string]Injection) (bool, time.Time) {
	if pp.DeletionTimestamp != nil {
		return false, time.Time{}
	}
	end, err := PauseDeadline(pp)
	if err != nil {
		return false, time.Time{}
	}
	inj, ok := injected[string(pp.UID)]
	if ok && inj.Fingerprint != PauseFingerprint(pp) {
		return false, time.Time{}
	}
	end = EffectiveDeadline(end, inj, ok)
	return now.Before(end), end
}

// Freeze is one container to keep frozen.
type Freeze struct {
	PodKey      string // "namespace/name"
	PodUID      string
	Container   string
	ContainerID string // the runtime's id, without the "containerd://" scheme
	Parts       []Part
}

// Key is the container's record key, "namespace/pod/container".
func (f *Freeze) Key() string { return f.PodKey + "/" + f.Container }

// ContainerID strips the runtime scheme from a container status id.
func ContainerID(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[i+3:]
	}
	return s
}

// DesiredPauses computes the containers on node that active, in-scope
// PodPause objects ask to keep frozen, keyed by Freeze.Key.
func DesiredPauses(pps []*PodPause, pods []corev1.Pod, node string, now time.Time, scope Scope, injected map[string]Injection) (map[string]*Freeze, []Problem) {
	objs := make([]chaosObject, len(pps))
	for i, pp := range pps {
		objs[i] = pauseObject{pp}
	}
	want := map[string]*Freeze{}
	problems := admit(objs, pods, now, scope, injected, func(o chaosObject, part Part, sel []corev1.Pod) {
		names := o.(pauseObject).Spec.ContainerNames
		for i := range sel {
			p := &sel[i]
			if p.Spec.NodeName != node {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if len(names) > 0 && !contains(names, cs.Name) {
					continue
				}
				if cs.ContainerID == "" || cs.State.Running == nil {
					continue
				}
				f := &Freeze{PodKey: PodKey(p), PodUID: string(p.UID), Container: cs.Name, ContainerID: ContainerID(cs.ContainerID)}
				if cur := want[f.Key()]; cur != nil {
					f = cur
				}
				f.Parts = append(f.Parts, part)
				want[f.Key()] = f
			}
		}
	})
	return want, problems
}

// SortedFreezes returns the freezes by key.
func SortedFreezes(m map[string]*Freeze) []*Freeze {
	out := make([]*Freeze, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}
