package undertest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/k8s"

	"github.com/fencecheck/fencecheck/conformance/scenario"
)

func doctor(t *testing.T, dir string) []Problem {
	t.Helper()
	return Doctor(context.Background(), dir, scenario.DefaultTiming().Args())
}

func bySeverity(ps []Problem, s Severity) []Problem {
	return slices.DeleteFunc(slices.Clone(ps), func(p Problem) bool { return p.Severity != s })
}

// The repository's own controller directories pass: no error (warnings
// are advice).
func TestGoodDirectoriesPass(t *testing.T) {
	for _, dir := range []string{"testdata/good", "../../examples/fixture", "../../examples/crcontroller/deploy/fenced", "../../examples/crcontroller/deploy/default"} {
		ps := doctor(t, dir)
		if errs := bySeverity(ps, Error); len(errs) > 0 {
			t.Errorf("%s: %d errors: %v", dir, len(errs), errs)
		}
	}
	if ps := doctor(t, "testdata/good"); len(ps) > 0 {
		t.Errorf("testdata/good: want no problem at all, got %v", ps)
	}
}

// Each bad directory breaks one rule: every error it gets names that rule,
// and one of them says what is wrong.
func TestBadDirectoriesNameTheRule(t *testing.T) {
	cases := map[string]struct{ rule, says string }{
		"bad-two-deployments":        {MustDirectory, "want exactly one Deployment (the controller), found 2 [ctl ctl2]"},
		"bad-clusterrole":            {MustDirectory, "ClusterRole ctl (clusterrole.yaml): is cluster-scoped"},
		"bad-persistentvolume":       {MustDirectory, "PersistentVolume data (pv.yaml): is cluster-scoped"},
		"bad-placeholder":            {MustDirectory, "unknown placeholder ${FENCECHECK_LEASE}"},
		"bad-reference":              {MustDirectory, "args[0]: $(FENCECHECK_LEASE_DURATON) is no variable the suite sets"},
		"bad-privileged":             {MustRestricted, "seccompProfile"},
		"bad-create-by-name":         {MustDirectory, "may not create coordination.k8s.io leases named fencecheck-reconciler (a rule with resourceNames never allows create"},
		"bad-no-rolebinding":         {MustDirectory, `no RoleBinding binds ServiceAccount "ctl"`},
		"bad-missing-serviceaccount": {MustDirectory, `ServiceAccount "ctl" is not in the directory`},
		"bad-no-token":               {MustLease, "automountServiceAccountToken: the pods get no ServiceAccount token"},
		"bad-token-in-env":           {MustSink, "env[0].value: $(FENCECHECK_SINK_TOKEN_FILE) in an env entry is not expanded"},
		"bad-no-manifests":           {MustDirectory, "no *.yaml manifests there"},
	}
	for name, c := range cases {
		errs := bySeverity(doctor(t, filepath.Join("testdata", name)), Error)
		if len(errs) == 0 {
			t.Errorf("%s: no error; want one naming %s", name, c.rule)
			continue
		}
		found := false
		for _, e := range errs {
			if e.Rule != c.rule {
				t.Errorf("%s: error %q names %s, want %s", name, e, e.Rule, c.rule)
			}
			found = found || strings.Contains(e.String(), c.says)
		}
		if !found {
			t.Errorf("%s: no error says %q: %v", name, c.says, errs)
		}
	}
}

// Advice is a warning, never an error: a pulled image, no readiness
// probe, no timing variable named, no watch on the Lease, a Namespace.
func TestWarnings(t *testing.T) {
	ps := doctor(t, "testdata/warn-only")
	if errs := bySeverity(ps, Error); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Rule)
	}
	slices.Sort(got)
	want := []string{RunningIt, ShouldReady, ShouldFollow, ShouldFollow, ShouldTiming, SuiteGives}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("warnings by rule:\n got %q\nwant %q\n%v", got, want, ps)
	}
}

// The cluster target refuses exactly what Read calls an error.
func TestErrorsJoinsOnlyErrors(t *testing.T) {
	if err := Errors([]Problem{{Severity: Warning, Object: "x", Message: "advice"}}); err != nil {
		t.Errorf("a warning became an error: %v", err)
	}
	err := Errors([]Problem{{Severity: Error, Object: "a", Message: "one"}, {Severity: Warning, Object: "b", Message: "two"}, {Severity: Error, Object: "c", Message: "three"}})
	if err == nil || err.Error() != "a: one; c: three" {
		t.Errorf("Errors = %v", err)
	}
}

func TestVars(t *testing.T) {
	vars, err := Vars("ns1", "http://w:8080", []string{"--lease-duration=4s", "--write-interval=200ms", "--write-interval=5ms"})
	if err != nil || vars[EnvNamespace] != "ns1" || vars[EnvSinkURL] != "http://w:8080" || vars[EnvLeaseDuration] != "4s" || vars[EnvWriteInterval] != "5ms" {
		t.Errorf("Vars = %v, %v", vars, err)
	}
	if _, err := Vars("ns1", "u", []string{"--ignore-demotion"}); err == nil || !strings.Contains(err.Error(), "--ignore-demotion") {
		t.Errorf("a broken mode must be refused, naming it: %v", err)
	}
}

// The witness admits a user's controller by the label the suite adds to
// its pods, whatever its own labels (docs/controller-contract.md: a
// controller needs no label of ours), and nothing else of the user's.
func TestWitnessPolicyAdmitsTheControllerUnderTest(t *testing.T) {
	var np *networkingv1.NetworkPolicy
	err := decoder.DecodeEachFile(context.Background(), os.DirFS("../../manifests/witness"), "networkpolicy.yaml", func(_ context.Context, obj k8s.Object) error {
		np, _ = obj.(*networkingv1.NetworkPolicy)
		return nil
	})
	if err != nil || np == nil {
		t.Fatalf("manifests/witness/networkpolicy.yaml: %v", err)
	}
	admits := func(pod labels.Set) bool {
		for _, rule := range np.Spec.Ingress {
			for _, from := range rule.From {
				if from.PodSelector == nil {
					continue
				}
				s, err := metav1.LabelSelectorAsSelector(from.PodSelector)
				if err != nil {
					t.Fatal(err)
				}
				if s.Matches(pod) {
					return true
				}
			}
		}
		return false
	}
	if !admits(labels.Set{"app": "crcontroller", UnderTestLabel: UnderTestValue}) {
		t.Errorf("the witness's NetworkPolicy does not admit a pod labelled %s", UnderTestSelector)
	}
	if admits(labels.Set{"app": "crcontroller"}) {
		t.Error("the witness's NetworkPolicy admits a pod without the suite's label")
	}
}
