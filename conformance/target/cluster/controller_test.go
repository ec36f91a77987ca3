package cluster

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fencecheck/fencecheck/conformance/undertest"
	"github.com/fencecheck/fencecheck/leader"
	"github.com/fencecheck/fencecheck/witness/record"
)

func timingArgs() []string {
	return []string{"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=1s", "--drain-timeout=15s", "--write-interval=200ms", "--write-interval=5ms"}
}

func TestControllerVars(t *testing.T) {
	vars, err := ControllerVars("ns1", timingArgs())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{EnvNamespace: "ns1", EnvLeaseName: leader.LeaseName, EnvSinkURL: WitnessURL,
		"FENCECHECK_LEASE_DURATION": "4s", "FENCECHECK_WRITE_INTERVAL": "5ms"} {
		if vars[k] != want {
			t.Errorf("%s = %q, want %q", k, vars[k], want)
		}
	}
	if WitnessURL != undertest.ExampleSinkURL {
		t.Errorf("the doctor substitutes %s for the sink URL, the suite %s", undertest.ExampleSinkURL, WitnessURL)
	}
	if _, err := ControllerVars("ns1", []string{"--ignore-demotion"}); err == nil || !strings.Contains(err.Error(), "--ignore-demotion") {
		t.Errorf("a broken mode must be refused, naming it: %v", err)
	}
}

// The repository's controller examples decode, each with one Deployment
// that gets 3 replicas, the under-test label and the env, and the Lease
// name substituted in the Role.
func TestControllerManifestsOfTheExamples(t *testing.T) {
	vars, _ := ControllerVars("fc-x", timingArgs())
	for _, dir := range []string{"examples/crcontroller/deploy/fenced", "examples/crcontroller/deploy/default", "examples/fixture"} {
		objs, dep, err := ControllerManifests(context.Background(), filepath.Join("..", "..", "..", dir), "fc-x", vars, 3)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if *dep.Spec.Replicas != 3 || dep.Spec.Template.Labels[UnderTestLabel] != "controller" || dep.Namespace != "fc-x" {
			t.Errorf("%s: replicas %d, labels %v, namespace %q", dir, *dep.Spec.Replicas, dep.Spec.Template.Labels, dep.Namespace)
		}
		env := map[string]bool{}
		for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = true
		}
		for _, k := range []string{EnvPodName, EnvNamespace, EnvLeaseName, EnvSinkURL, "FENCECHECK_DRAIN_TIMEOUT"} {
			if !env[k] {
				t.Errorf("%s: env %s not injected", dir, k)
			}
		}
		for _, o := range objs {
			if r, ok := o.(*rbacv1.Role); ok {
				for _, rule := range r.Rules {
					for _, n := range rule.ResourceNames {
						if n != leader.LeaseName {
							t.Errorf("%s: Role resourceName %q, want the substituted %q", dir, n, leader.LeaseName)
						}
					}
				}
			}
			if b, ok := o.(*rbacv1.RoleBinding); ok && b.Subjects[0].Namespace != "fc-x" {
				t.Errorf("%s: RoleBinding subject namespace %q", dir, b.Subjects[0].Namespace)
			}
		}
	}
}

func TestControllerManifestsErrors(t *testing.T) {
	vars, _ := ControllerVars("ns", nil)
	dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  selector:\n    matchLabels: {app: a}\n  template:\n    metadata:\n      labels: {app: a}\n    spec:\n      containers:\n        - name: c\n          image: x\n"
	for want, files := range map[string]map[string]string{
		"no *.yaml":              {},
		"exactly one Deployment": {"a.yaml": strings.ReplaceAll(dep, "%s", "a"), "b.yaml": strings.ReplaceAll(dep, "%s", "b")},
		"found 0":                {"r.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: s\n"},
		"unknown placeholder ${FENCECHECK_LEASE}": {"a.yaml": strings.ReplaceAll(dep, "%s", "a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  l: ${FENCECHECK_LEASE}\n"},
		"cluster-scoped": {"a.yaml": strings.ReplaceAll(dep, "%s", "a"), "c.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: c\n"},
	} {
		dir := t.TempDir()
		for n, b := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := ControllerManifests(context.Background(), dir, "ns", vars, 3)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	}
}

// A manifest's own FENCECHECK_* entry is replaced; its other env stays,
// after ours (so $(FENCECHECK_...) in it expands).
func TestInjectEnvReplacesAndKeeps(t *testing.T) {
	d := &appsv1.Deployment{}
	d.Spec.Template.Spec.Containers = make([]corev1.Container, 1)
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env, envVar(EnvSinkURL, "http://elsewhere"), envVar("MINE", "$(FENCECHECK_SINK_URL)"))
	injectEnv(c, map[string]string{EnvSinkURL: WitnessURL})
	if len(c.Env) != 3 || c.Env[0].Name != EnvPodName || c.Env[1].Value != WitnessURL || c.Env[2].Name != "MINE" {
		t.Errorf("env = %+v", c.Env)
	}
}

func envVar(n, v string) corev1.EnvVar { return corev1.EnvVar{Name: n, Value: v} }

// The start-up judgement of a user's controller, from the witness alone.
func TestWritingActivity(t *testing.T) {
	put := func(epoch, epochErr string, status int) record.Operation {
		return record.Operation{Method: http.MethodPut, EpochHeader: epoch, EpochError: epochErr, Status: status}
	}
	fence := record.Operation{Method: http.MethodPost, EpochHeader: "1", Status: 200}
	unstamped := []record.Operation{put("", "missing", 400), put("", "missing", 400), put("", "missing", 400), put("", "missing", 400)}
	cases := map[string]struct {
		ops            []record.Operation
		active, giveUp bool
		why            string
	}{
		"nothing yet":           {nil, false, false, "received no request"},
		"a fence, no write yet": {[]record.Operation{fence}, false, false, "0 PUTs, none with a valid"},
		"a few unstamped PUTs":  {unstamped, false, false, "4 PUTs, none with a valid"},
		"five unstamped PUTs":   {append(unstamped, put("", "missing", 400)), false, true, ""},
		"a stamped PUT":         {append([]record.Operation{fence}, put("1", "", 200)), true, false, ""},
		"stamped after some":    {append(unstamped, put("1", "", 200), put("", "missing", 400)), true, false, ""},
	}
	for name, c := range cases {
		active, giveUp, why := writingActivity("p_1", "ns", c.ops)
		if active != c.active || (giveUp != nil) != c.giveUp || !strings.Contains(why, c.why) {
			t.Errorf("%s: active %v giveUp %v why %q; want %v %v %q", name, active, giveUp, why, c.active, c.giveUp, c.why)
		}
	}
}
