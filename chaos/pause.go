package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// PauseSpec says which pod's containers to freeze, how long. Namespace is
// where the PodPause lives (default PodNamespace); no Containers means all
// of the pod's.
type PauseSpec struct {
	Name, Namespace, PodNamespace, PodName string
	Containers                             []string
	Duration                               time.Duration
}

// NewPause builds a PodPause that freezes one pod's containers for the
// duration (the agent thaws them at the deadline, whatever happens to the
// harness).
func NewPause(p PauseSpec) *plan.PodPause {
	ns := p.Namespace
	if ns == "" {
		ns = p.PodNamespace
	}
	dur := p.Duration.String()
	pp := &plan.PodPause{
		TypeMeta: metav1.TypeMeta{APIVersion: plan.PauseGroupVersion.String(), Kind: plan.PauseKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: ns,
			Labels: map[string]string{ManagedByLabel: "fencecheck"},
		},
		Spec: plan.PodPauseSpec{
			ContainerSelector: v1alpha1.ContainerSelector{
				PodSelector:    v1alpha1.PodSelector{Mode: v1alpha1.OneMode, Selector: v1alpha1.PodSelectorSpec{Pods: map[string][]string{p.PodNamespace: {p.PodName}}}},
				ContainerNames: append([]string(nil), p.Containers...),
			},
			Duration: &dur,
		},
	}
	if p.Name == "" {
		pp.GenerateName = "fencecheck-pause-"
	}
	return pp
}

// Pauser is an executor that can pause containers (the built-in one:
// Chaos Mesh has no pause).
type Pauser interface {
	// Pause creates pp and waits until every selected pod is frozen.
	Pause(ctx context.Context, pp *plan.PodPause) (Window, error)
	// WaitPauseRecovered waits until every pod is thawed.
	WaitPauseRecovered(ctx context.Context, namespace, name string) (Window, error)
	DeletePause(ctx context.Context, namespace, name string) error
}

// Pause implements Pauser.
func (b *BuiltIn) Pause(ctx context.Context, pp *plan.PodPause) (Window, error) {
	if err := plan.ValidatePause(pp); err != nil {
		return Window{}, fmt.Errorf("pause: %w", err)
	}
	pods, err := b.selectedBy(ctx, pp.Namespace, pp.Spec.PodSelector)
	if err != nil {
		return Window{}, fmt.Errorf("pause: %w", err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pp)
	if err != nil {
		return Window{}, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	created, err := b.dyn.Resource(plan.PauseGVR).Namespace(pp.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return Window{}, fmt.Errorf("pause: create PodPause: %w", err)
	}
	name := created.GetName()
	b.log("created PodPause %s/%s (%s, pods %v)", pp.Namespace, name, *pp.Spec.Duration, pods)
	typed := &plan.PodPause{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, typed); err != nil {
		return Window{}, err
	}
	end, err := plan.PauseDeadline(typed)
	if err != nil {
		return Window{}, err
	}
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	w, err := b.wait(ctx, plan.PauseGVR, pp.Namespace, name, pods, false)
	if err != nil {
		return w, fmt.Errorf("pause %s/%s: %w", pp.Namespace, name, err)
	}
	b.log("PodPause %s/%s frozen at %s", pp.Namespace, name, w.Injected.Format(time.RFC3339Nano))
	return w, nil
}

// WaitPauseRecovered implements Pauser.
func (b *BuiltIn) WaitPauseRecovered(ctx context.Context, ns, name string) (Window, error) {
	u, err := b.dyn.Resource(plan.PauseGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Window{}, fmt.Errorf("wait thawed: %w", err)
	}
	pp := &plan.PodPause{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pp); err != nil {
		return Window{}, err
	}
	if end, err := plan.PauseDeadline(pp); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end.Add(recoveryGrace))
		defer cancel()
	}
	var pods []string
	for p := range plan.Progress(&pp.Status) {
		pods = append(pods, p)
	}
	w, err := b.wait(ctx, plan.PauseGVR, ns, name, pods, true)
	if err != nil {
		return w, fmt.Errorf("wait thawed %s/%s: %w", ns, name, err)
	}
	b.log("PodPause %s/%s thawed at %s", ns, name, w.Recovered.Format(time.RFC3339Nano))
	return w, nil
}

// DeletePause implements Pauser.
func (b *BuiltIn) DeletePause(ctx context.Context, ns, name string) error {
	err := b.dyn.Resource(plan.PauseGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete PodPause %s/%s: %w", ns, name, err)
	}
	return nil
}
