package undertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/k8s"
)

// Severity says whether a problem stops the run (Error) or is advice.
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// The rules of docs/controller-contract.md a problem can break, as the
// doc numbers them.
const (
	MustLease      = "MUST 1 (hold the Lease)"
	MustSink       = "MUST 8 (write through $FENCECHECK_SINK_URL with the token)"
	MustDirectory  = "MUST 10 (the directory: one Deployment, namespaced objects, RBAC for the Lease)"
	MustRestricted = "MUST 11 (Pod Security restricted)"
	ShouldTiming   = "SHOULD 1 (take the timing from the variables)"
	ShouldReady    = "SHOULD 3 (a readiness probe)"
	ShouldFollow   = "SHOULD 6 (follow the Lease with a watch)"
	SuiteGives     = "\"What the suite gives you\""
	RunningIt      = "\"Running it\" (images)"
)

// Problem is one thing wrong with (or worth knowing about) a directory:
// the rule it breaks, the object and the field.
type Problem struct {
	Severity Severity
	Rule     string
	Object   string // "Deployment crcontroller (03-deployment.yaml)", or a file
	Field    string // where in the object; "" for the object as a whole
	Message  string
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s: %s: %s", p.Severity, p.Rule, p.Object)
	if p.Field != "" {
		s += ": " + p.Field
	}
	return s + ": " + p.Message
}

// Errors joins the error problems' messages into one error (nil if none):
// what the cluster target refuses to deploy.
func Errors(ps []Problem) error {
	var msgs []string
	for _, p := range ps {
		if p.Severity == Error {
			msgs = append(msgs, p.Object+": "+p.Message)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Dir is a controller directory as the suite reads it.
type Dir struct {
	Path    string
	Objects []k8s.Object
	// Deployment is the controller: set only when the directory holds
	// exactly one.
	Deployment *appsv1.Deployment
	// Placeholders are the ${FENCECHECK_...} names the files use.
	Placeholders map[string]bool
	files        map[k8s.Object]string
}

// Name is how problems name an object: its kind, name and file.
func (d *Dir) Name(o k8s.Object) string {
	return fmt.Sprintf("%s %s (%s)", kindOf(o), o.GetName(), d.files[o])
}

var placeholder = regexp.MustCompile(`\$\{(FENCECHECK_[A-Z0-9_]+)\}`)

// Substitute replaces the ${FENCECHECK_*} placeholders of file b with
// vars; an unknown one is an error naming the known ones (a typo must not
// deploy as an empty string). used gets every name the file uses.
func Substitute(file string, b []byte, vars map[string]string, used map[string]bool) ([]byte, error) {
	var bad []string
	out := placeholder.ReplaceAllFunc(b, func(m []byte) []byte {
		name := string(placeholder.FindSubmatch(m)[1])
		if used != nil {
			used[name] = true
		}
		v, ok := vars[name]
		if !ok {
			bad = append(bad, name)
		}
		return []byte(v)
	})
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: unknown placeholder ${%s} (known: %s; the pod name is $(%s) in args or env)", file, strings.Join(bad, "}, ${"), strings.Join(sortedKeys(vars), ", "), EnvPodName)
	}
	return out, nil
}

// Read decodes dir/*.yaml for namespace ns with the placeholders
// substituted, as the cluster target deploys them: Namespace objects are
// dropped (each scenario brings its own), every object gets namespace ns
// and so do the RoleBindings' ServiceAccount subjects; ClusterRoles and
// ClusterRoleBindings are refused (scenarios run side by side, each in its
// own namespace), and the directory must hold exactly one Deployment.
// The problems say what is wrong; any Error among them means the suite
// does not deploy the directory.
func Read(ctx context.Context, dir, ns string, vars map[string]string) (*Dir, []Problem) {
	d := &Dir{Path: dir, Placeholders: map[string]bool{}, files: map[k8s.Object]string{}}
	var ps []Problem
	bad := func(obj, format string, a ...any) {
		ps = append(ps, Problem{Severity: Error, Rule: MustDirectory, Object: obj, Message: fmt.Sprintf(format, a...)})
	}
	files, err := fs.Glob(os.DirFS(dir), "*.yaml")
	if err != nil || len(files) == 0 {
		bad(dir, "no *.yaml manifests there (a Deployment of the controller and its RBAC; see docs/controller-contract.md)")
		return d, ps
	}
	var deps []*appsv1.Deployment
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			bad(f, "%v", err)
			continue
		}
		if b, err = Substitute(f, b, vars, d.Placeholders); err != nil {
			bad(f, "%v", strings.TrimPrefix(err.Error(), f+": "))
			continue
		}
		keep := func(_ context.Context, obj k8s.Object) error {
			d.files[obj] = f
			switch o := obj.(type) {
			case *corev1.Namespace:
				ps = append(ps, Problem{Severity: Warning, Rule: SuiteGives, Object: d.Name(obj), Message: "dropped: each scenario runs in a namespace of its own, which the suite creates"})
				return nil
			case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
				bad(d.Name(obj), "is cluster-scoped: each scenario runs in its own namespace, use a Role and a RoleBinding")
				return nil
			case *appsv1.Deployment:
				deps = append(deps, o)
			case *rbacv1.RoleBinding:
				for i := range o.Subjects {
					if o.Subjects[i].Kind == rbacv1.ServiceAccountKind {
						o.Subjects[i].Namespace = ns
					}
				}
			}
			d.Objects = append(d.Objects, obj)
			return nil
		}
		if err := decoder.DecodeEach(ctx, bytes.NewReader(b), keep, decoder.MutateNamespace(ns)); err != nil {
			bad(f, "%v", err)
		}
	}
	if len(deps) != 1 {
		names := make([]string, len(deps))
		for i, dep := range deps {
			names[i] = dep.Name
		}
		bad(dir, "want exactly one Deployment (the controller), found %d %v", len(deps), names)
	} else {
		d.Deployment = deps[0]
	}
	return d, ps
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
