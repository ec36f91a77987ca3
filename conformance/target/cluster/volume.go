package cluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
)

// NodeLocalData replaces the claims of a scenario's pods with emptyDir
// volumes and drops the claims. The scenarios restart the sink's container
// (sink-crash), never its pod, and an emptyDir survives a container restart
// on the same node just as a local-path volume does; provisioning a
// local-path volume cost 8 s of every scenario's deploy on our kind cluster.
// The shipped manifests keep their claim (certify deletes the sink's pod).
func NodeLocalData(objs []k8s.Object) []k8s.Object {
	out := objs[:0:0]
	for _, obj := range objs {
		if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			continue
		}
		if dep, ok := obj.(*appsv1.Deployment); ok {
			spec := &dep.Spec.Template.Spec
			for i := range spec.Volumes {
				if spec.Volumes[i].PersistentVolumeClaim != nil {
					spec.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
				}
			}
		}
		out = append(out, obj)
	}
	return out
}
