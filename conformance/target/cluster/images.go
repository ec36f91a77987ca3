package cluster

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"

	"github.com/fencecheck/fencecheck/internal/images"
)

// UseImages points every pod template of objs at the pushed images of m
// (--image-repo), by digest; with a nil m the kind-loaded tags stay.
func UseImages(objs []k8s.Object, m images.Map) error {
	for _, obj := range objs {
		var spec *corev1.PodSpec
		switch o := obj.(type) {
		case *appsv1.Deployment:
			spec = &o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			spec = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
		case *corev1.Pod:
			spec = &o.Spec
		default:
			continue
		}
		if err := m.RewritePod(spec); err != nil {
			return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}
