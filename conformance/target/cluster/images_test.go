package cluster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"

	"github.com/fencecheck/fencecheck/internal/images"
)

// pushed is a Map as Push returns it for the suite's images.
func pushed(names ...string) images.Map {
	m := images.Map{}
	for _, n := range names {
		m["index.docker.io/fencecheck/"+n+":dev"] = "172.18.0.1:5000/fencecheck/" + n + "@sha256:" + strings.Repeat("a", 64)
	}
	return m
}

// With --image-repo every container of our manifests runs its pushed
// image by digest, pulled if absent; nothing is left on a kind-only tag.
func TestUseImagesOnOurManifests(t *testing.T) {
	root := repoRoot(t)
	m := pushed("reconciler", "sink", "witness")
	for _, c := range []struct{ dir, deployment string }{
		{"manifests/reconciler", ReconcilerDeployment}, {"manifests/sink", SinkDeployment}, {"manifests/witness", WitnessDeployment},
	} {
		objs, err := Manifests(context.Background(), root, c.dir, "fc-x", c.deployment, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := UseImages(objs, m); err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		checkPulledByDigest(t, c.dir, objs)
	}
	objs, err := Manifests(context.Background(), root, "manifests/witness", "fc-x", WitnessDeployment, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := UseImages(objs, pushed("sink")); err == nil || !strings.Contains(err.Error(), "fencecheck/witness:dev was not pushed") {
		t.Errorf("witness not pushed: %v", err)
	}
}

// A user's controller built from the repository's example is rewritten
// too once pushed (--controller-image).
func TestUseImagesOnController(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "crcontroller", "deploy", "fenced")
	vars, err := ControllerVars("fc-x", nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, _, err := ControllerManifests(context.Background(), dir, "fc-x", vars, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := UseImages(objs, pushed("crcontroller")); err != nil {
		t.Fatal(err)
	}
	checkPulledByDigest(t, dir, objs)
}

func checkPulledByDigest(t *testing.T, what string, objs []k8s.Object) {
	t.Helper()
	n := 0
	for _, o := range objs {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			n++
			if !strings.HasPrefix(c.Image, "172.18.0.1:5000/fencecheck/") || !strings.Contains(c.Image, "@sha256:") || c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("%s: container %s runs %s (%s)", what, c.Name, c.Image, c.ImagePullPolicy)
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no container", what)
	}
}
