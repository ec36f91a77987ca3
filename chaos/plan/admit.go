package plan

import (
	"errors"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// chaosObject is what admission needs to know of one chaos kind.
type chaosObject interface {
	key() string // "namespace/name"
	uid() string
	deleted() bool
	checkScope(Scope) error
	fingerprint() string
	editedErr() error
	active(now time.Time, injected map[string]Injection) (bool, time.Time)
	selectPods(pods []corev1.Pod) ([]corev1.Pod, error)
}

// admit applies the rules every chaos kind shares, in this order: a
// deleted object is ignored; one out of scope, or edited since the node
// ledger recorded its injection, is refused with a Problem; one past its
// deadline is ignored. For each object still active, use gets its ledger
// part and the pods it selects (on any node: the caller keeps its own).
func admit(objs []chaosObject, pods []corev1.Pod, now time.Time, scope Scope, injected map[string]Injection, use func(o chaosObject, part Part, sel []corev1.Pod)) []Problem {
	var problems []Problem
	for _, o := range objs {
		if o.deleted() {
			continue
		}
		if err := o.checkScope(scope); err != nil {
			problems = append(problems, Problem{Chaos: o.key(), Err: err})
			continue
		}
		if inj, ok := injected[o.uid()]; ok && inj.Fingerprint != o.fingerprint() {
			problems = append(problems, Problem{Chaos: o.key(), Err: o.editedErr()})
			continue
		}
		active, end := o.active(now, injected)
		if !active {
			continue
		}
		sel, err := o.selectPods(pods)
		if err != nil {
			problems = append(problems, Problem{Chaos: o.key(), Err: err})
			continue
		}
		use(o, Part{Chaos: o.key(), UID: o.uid(), Fingerprint: o.fingerprint(), Deadline: end}, sel)
	}
	return problems
}

// networkObject adapts a NetworkChaos to admission.
type networkObject struct{ *v1alpha1.NetworkChaos }

func (o networkObject) key() string              { return o.Namespace + "/" + o.Name }
func (o networkObject) uid() string              { return string(o.UID) }
func (o networkObject) deleted() bool            { return o.DeletionTimestamp != nil }
func (o networkObject) checkScope(s Scope) error { return s.CheckScope(o.NetworkChaos) }
func (o networkObject) fingerprint() string      { return NetworkFingerprint(o.NetworkChaos) }
func (o networkObject) editedErr() error         { return ErrEdited }
func (o networkObject) selectPods(pods []corev1.Pod) ([]corev1.Pod, error) {
	return SelectPods(o.NetworkChaos, pods)
}
func (o networkObject) active(now time.Time, injected map[string]Injection) (bool, time.Time) {
	return EffectiveActive(o.NetworkChaos, now, injected)
}

// ErrPauseEdited is ErrEdited for a PodPause.
var ErrPauseEdited = errors.New("spec changed after injection: refused (a chaos object is immutable once injected); its containers thaw now")

// pauseObject adapts a PodPause to admission.
type pauseObject struct{ *PodPause }

func (o pauseObject) key() string              { return o.Namespace + "/" + o.Name }
func (o pauseObject) uid() string              { return string(o.UID) }
func (o pauseObject) deleted() bool            { return o.DeletionTimestamp != nil }
func (o pauseObject) checkScope(s Scope) error { return s.CheckPause(o.PodPause) }
func (o pauseObject) fingerprint() string      { return PauseFingerprint(o.PodPause) }
func (o pauseObject) editedErr() error         { return ErrPauseEdited }
func (o pauseObject) selectPods(pods []corev1.Pod) ([]corev1.Pod, error) {
	return SelectBy(o.Namespace, o.Spec.PodSelector, pods)
}
func (o pauseObject) active(now time.Time, injected map[string]Injection) (bool, time.Time) {
	return PauseActive(o.PodPause, now, injected)
}
