package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const manifestDir = "../../manifests/sink"

func decode[T any](t *testing.T, file string) T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(manifestDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// The manifests must be appliable to any namespace, run the image the
// project builds without pulling, keep data on the claim, and pass args the
// binary accepts (with room for a suite to append --broken=...).
func TestManifests(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "namespace:") {
			t.Errorf("%s hard-codes a namespace", f)
		}
	}
	dep := decode[appsv1.Deployment](t, "deployment.yaml")
	svc := decode[corev1.Service](t, "service.yaml")
	pvc := decode[corev1.PersistentVolumeClaim](t, "pvc.yaml")

	if dep.Name != "sink" || *dep.Spec.Replicas != 1 || dep.Spec.Template.Labels["app"] != "fencecheck-sink" || dep.Spec.Selector.MatchLabels["app"] != "fencecheck-sink" {
		t.Errorf("deployment name/replicas/labels wrong: %+v", dep.ObjectMeta)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != "fencecheck/sink:dev" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %q pull %q", c.Image, c.ImagePullPolicy)
	}
	if len(c.Command) != 0 {
		t.Errorf("command must stay empty (scratch image: the binary is the entrypoint); use args")
	}
	for _, extra := range [][]string{nil, {"--broken=unfenced"}, {"--broken=racy"}} {
		o, err := parseFlags(append(slices.Clone(c.Args), extra...), io.Discard)
		if err != nil {
			t.Errorf("args %v rejected by the binary: %v", c.Args, err)
			continue
		}
		if o.addr != ":8080" {
			t.Errorf("listens on %q, want :8080", o.addr)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.MountPath == o.data
		}
		if !mounted {
			t.Errorf("data dir %q is not a mounted volume", o.data)
		}
	}
	claim := ""
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != pvc.Name || pvc.Spec.StorageClassName != nil {
		t.Errorf("claim %q vs pvc %q (storage class must be the default: %v)", claim, pvc.Name, pvc.Spec.StorageClassName)
	}
	if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q: two pods must never open the bbolt file at once", dep.Spec.Strategy.Type)
	}
	if svc.Name != "sink" || svc.Spec.Selector["app"] != "fencecheck-sink" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("service wrong: %+v", svc.Spec)
	}
}
