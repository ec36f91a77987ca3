package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/k8s"
)

// restrictedProblems is what Pod Security "restricted" (the level the
// scenario namespaces enforce) says of spec, by the admission plugin's own
// checks; "" when it is admitted.
func restrictedProblems(t *testing.T, tmpl *corev1.PodTemplateSpec) string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := policy.AggregateCheckResults(ev.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec))
	if res.Allowed {
		return ""
	}
	return strings.Join(res.ForbiddenReasons, "; ") + ": " + strings.Join(res.ForbiddenDetails, "; ")
}

// Every Deployment the suite puts in a scenario namespace, ours and the
// examples run through CONTROLLER=, is admitted under "restricted" (before
// this test, examples/fixture lacked seccomp and its pods were never
// created: run s5-fixture-ctrl).
func TestDeploymentsPassPodSecurityRestricted(t *testing.T) {
	root := repoRoot(t)
	dirs := []string{"manifests/reconciler", "manifests/sink", "manifests/witness", "examples/fixture", "examples/crcontroller/deploy/fenced", "examples/crcontroller/deploy/default"}
	for _, dir := range dirs {
		n := 0
		err := decoder.DecodeEachFile(context.Background(), os.DirFS(filepath.Join(root, dir)), "*.yaml", func(_ context.Context, obj k8s.Object) error {
			if dep, ok := obj.(*appsv1.Deployment); ok {
				n++
				if why := restrictedProblems(t, &dep.Spec.Template); why != "" {
					t.Errorf("%s: Deployment %s is refused by Pod Security restricted: %s", dir, dep.Name, why)
				}
			}
			return nil
		})
		if err != nil || n == 0 {
			t.Errorf("%s: %d Deployments decoded, err %v", dir, n, err)
		}
	}
	// The evaluator bites: the fixture's template without its seccomp profile.
	bare := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if restrictedProblems(t, &bare) == "" {
		t.Fatal("a bare pod passed restricted: the check is not checking")
	}
}
