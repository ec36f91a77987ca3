package cluster

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// The project's own manifests decode, land in the scenario namespace and
// take the scenario's flags.
func TestManifestsTakeArgs(t *testing.T) {
	root := repoRoot(t)
	for _, c := range []struct{ dir, deployment string }{{"manifests/reconciler", ReconcilerDeployment}, {"manifests/sink", SinkDeployment}} {
		objs, err := Manifests(context.Background(), root, c.dir, "fc-x", c.deployment, []string{"--extra=1"})
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		var dep *appsv1.Deployment
		for _, o := range objs {
			if o.GetNamespace() != "fc-x" {
				t.Errorf("%s: %T %s in namespace %q", c.dir, o, o.GetName(), o.GetNamespace())
			}
			if d, ok := o.(*appsv1.Deployment); ok && d.Name == c.deployment {
				dep = d
			}
			if rb, ok := o.(*rbacv1.RoleBinding); ok {
				for _, s := range rb.Subjects {
					if s.Namespace != "fc-x" {
						t.Errorf("rolebinding subject namespace %q", s.Namespace)
					}
				}
			}
		}
		if dep == nil {
			t.Fatalf("%s: no Deployment %s", c.dir, c.deployment)
		}
		args := dep.Spec.Template.Spec.Containers[0].Args
		if args[len(args)-1] != "--extra=1" {
			t.Errorf("%s: args %v", c.dir, args)
		}
	}
	if _, err := Manifests(context.Background(), root, "manifests/nope", "fc-x", "x", nil); err == nil || !strings.Contains(err.Error(), "no *.yaml") {
		t.Errorf("a missing manifest dir must say so: %v", err)
	}
	if _, err := Manifests(context.Background(), root, "manifests/sink", "fc-x", "absent", nil); err == nil {
		t.Error("a missing Deployment must be an error")
	}
}

// The suite's sink keeps its data in an emptyDir (no claim to provision);
// the shipped manifest keeps its claim.
func TestNodeLocalData(t *testing.T) {
	objs, err := Manifests(context.Background(), repoRoot(t), "manifests/sink", "fc-x", SinkDeployment, nil)
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	for _, o := range objs {
		if _, ok := o.(*corev1.PersistentVolumeClaim); ok {
			claims++
		}
	}
	if claims != 1 {
		t.Fatalf("the shipped sink manifests have %d claims, want 1", claims)
	}
	out := NodeLocalData(objs)
	if len(out) != len(objs)-1 {
		t.Fatalf("%d objects after, %d before: only the claim goes", len(out), len(objs))
	}
	for _, o := range out {
		dep, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || (v.Name == "data" && v.EmptyDir == nil) {
				t.Errorf("volume %s: %+v, want the data volume as an emptyDir", v.Name, v.VolumeSource)
			}
		}
	}
}
