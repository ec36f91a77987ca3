package undertest

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/e2e-framework/klient/k8s"

	"github.com/fencecheck/fencecheck/leader"
)

// CheckNamespace is the namespace the doctor reads a directory for (any
// name would do: the suite sets each scenario's own).
const CheckNamespace = "fencecheck-check"

// ExampleSinkURL is the sink URL the doctor substitutes: the witness the
// cluster target points every controller at (cluster.WitnessURL; a test
// there keeps the two equal).
const ExampleSinkURL = "http://witness:8080"

// Doctor reads dir as the suite would, with the default timing, and
// checks it: what `fencecheck controller-check DIR` prints. An Error
// among the problems is something the suite refuses, or a MUST the
// directory cannot meet.
func Doctor(ctx context.Context, dir string, timingArgs []string) []Problem {
	vars, err := Vars(CheckNamespace, ExampleSinkURL, timingArgs)
	if err != nil {
		return []Problem{{Severity: Error, Rule: MustDirectory, Object: dir, Message: err.Error()}}
	}
	d, ps := Read(ctx, dir, CheckNamespace, vars)
	return append(ps, Check(d, vars)...)
}

// Check judges a directory Read returned, beyond what Read refuses: Pod
// Security restricted, the FENCECHECK_* references, the RBAC the Lease
// needs, the ServiceAccount token, a readiness probe, pullable images.
func Check(d *Dir, vars map[string]string) []Problem {
	var ps []Problem
	add := func(sev Severity, rule string, o k8s.Object, field, format string, a ...any) {
		ps = append(ps, Problem{Severity: sev, Rule: rule, Object: d.Name(o), Field: field, Message: fmt.Sprintf(format, a...)})
	}
	for _, o := range d.Objects {
		switch v := o.(type) {
		case *unstructured.Unstructured:
			add(Warning, SuiteGives, o, "", "not a built-in kind: the suite creates it as it is, so its API (a CRD) must be installed in the cluster")
		case *networkingv1.NetworkPolicy:
			add(Warning, MustSink, o, "", "on a cluster that enforces NetworkPolicies it must let your pods reach the witness ($%s, TCP 8080) and the apiserver", EnvSinkURL)
		default:
			if slices.Contains(clusterScoped, reflect.TypeOf(v).Elem().Name()) {
				add(Error, MustDirectory, o, "", "is cluster-scoped: each scenario runs in its own namespace, and the suite creates namespaced objects only")
			}
		}
	}
	dep := d.Deployment
	if dep == nil {
		return ps
	}
	ps = append(ps, restricted(d, dep)...)
	ps = append(ps, references(d, dep, vars)...)
	ps = append(ps, rbac(d, dep)...)
	spec := dep.Spec.Template.Spec
	ready := false
	for i, c := range spec.Containers {
		ready = ready || c.ReadinessProbe != nil
		if policy := pullPolicy(c); policy == corev1.PullAlways {
			add(Warning, RunningIt, dep, fmt.Sprintf("spec.template.spec.containers[%d].imagePullPolicy", i),
				"image %q is pulled Always (the default for :latest or no tag): a kind cluster pulls from no registry, so load it (kind load) and set imagePullPolicy: Never or IfNotPresent with a tag of your own", c.Image)
		}
	}
	if !ready {
		add(Warning, ShouldReady, dep, "spec.template.spec.containers[*].readinessProbe",
			"no container has a readiness probe: a pod counts as ready as soon as it runs, before it stands for election")
	}
	return ps
}

// clusterScoped are built-in kinds that live outside any namespace
// (ClusterRole and ClusterRoleBinding are refused by Read, Namespace
// dropped).
var clusterScoped = []string{"PersistentVolume", "Node", "StorageClass", "PriorityClass", "RuntimeClass", "IngressClass",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"CertificateSigningRequest", "CSIDriver", "CSINode", "VolumeAttachment", "FlowSchema", "PriorityLevelConfiguration"}

func kindOf(o k8s.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(o).Elem().Name()
}

// restricted runs Pod Security's own "restricted" checks (the level the
// scenario namespaces enforce, latest version) on the pod template.
func restricted(d *Dir, dep *appsv1.Deployment) []Problem {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return []Problem{{Severity: Error, Rule: MustRestricted, Object: d.Name(dep), Message: "the Pod Security evaluator: " + err.Error()}}
	}
	var ps []Problem
	for _, r := range ev.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &dep.Spec.Template.ObjectMeta, &dep.Spec.Template.Spec) {
		if r.Allowed {
			continue
		}
		msg := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			msg += ": " + r.ForbiddenDetail
		}
		ps = append(ps, Problem{Severity: Error, Rule: MustRestricted, Object: d.Name(dep), Field: "spec.template.spec",
			Message: msg + " (the scenario namespaces enforce pod-security.kubernetes.io/enforce=restricted: the pods would never be created)"})
	}
	return ps
}

// reference is $(NAME) in a command, args or env value, not escaped as $$(NAME).
var reference = regexp.MustCompile(`(^|[^$])\$\((FENCECHECK_[A-Z0-9_]+)\)`)

// timingVars are the variables SHOULD 1 asks a controller to read.
var timingVars = []string{EnvLeaseDuration, EnvRenewDeadline, EnvRetryPeriod, EnvDrainTimeout, EnvWriteInterval}

// references checks every $(FENCECHECK_...) the containers use against
// what the kubelet will have when it expands it, and whether the timing
// variables are named anywhere.
func references(d *Dir, dep *appsv1.Deployment, vars map[string]string) []Problem {
	var ps []Problem
	named := map[string]bool{}
	for n := range d.Placeholders {
		named[n] = true
	}
	spec := dep.Spec.Template.Spec
	for _, group := range []struct {
		field string
		cs    []corev1.Container
		init  bool
	}{{"initContainers", spec.InitContainers, true}, {"containers", spec.Containers, false}} {
		for i, c := range group.cs {
			at := fmt.Sprintf("spec.template.spec.%s[%d]", group.field, i)
			check := func(field, s string, inEnv bool) {
				for _, m := range reference.FindAllStringSubmatch(s, -1) {
					name := m[2]
					named[name] = true
					_, known := vars[name]
					switch {
					case name == EnvSinkTokenFile && group.init:
						ps = append(ps, Problem{Severity: Error, Rule: MustSink, Object: d.Name(dep), Field: at + field,
							Message: fmt.Sprintf("$(%s): init containers get no sink token (it is mounted into the containers only), so the kubelet passes the text through as it is", name)})
					case name == EnvSinkTokenFile && inEnv:
						ps = append(ps, Problem{Severity: Error, Rule: MustSink, Object: d.Name(dep), Field: at + field,
							Message: fmt.Sprintf("$(%s) in an env entry is not expanded: the suite adds that variable after your env; read the variable itself, or use $(%s) in args", name, name)})
					case known || name == EnvPodName || (name == EnvSinkTokenFile && !group.init):
					default:
						ps = append(ps, Problem{Severity: Error, Rule: MustDirectory, Object: d.Name(dep), Field: at + field,
							Message: fmt.Sprintf("$(%s) is no variable the suite sets, so the kubelet passes the text through as it is (known: %s, %s, %s)", name, strings.Join(sortedKeys(vars), ", "), EnvPodName, EnvSinkTokenFile)})
					}
				}
			}
			for j, s := range c.Command {
				check(fmt.Sprintf(".command[%d]", j), s, false)
			}
			for j, s := range c.Args {
				check(fmt.Sprintf(".args[%d]", j), s, false)
			}
			for j, e := range c.Env {
				check(fmt.Sprintf(".env[%d].value", j), e.Value, true)
				if strings.HasPrefix(e.Name, "FENCECHECK_") {
					named[e.Name] = true
					ps = append(ps, Problem{Severity: Warning, Rule: SuiteGives, Object: d.Name(dep), Field: fmt.Sprintf("%s.env[%d]", at, j),
						Message: fmt.Sprintf("%s is set by the suite: your entry is replaced by its value", e.Name)})
				}
			}
		}
	}
	if !slices.ContainsFunc(timingVars, func(n string) bool { return named[n] }) {
		ps = append(ps, Problem{Severity: Warning, Rule: ShouldTiming, Object: d.Name(dep),
			Message: fmt.Sprintf("the manifests name none of %s: fine if the program reads them from its environment, otherwise it runs with its own timing and no takeover may happen inside the scenarios' cuts", strings.Join(timingVars, ", "))})
	}
	return ps
}

func pullPolicy(c corev1.Container) corev1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if strings.Contains(c.Image, "@") {
		return corev1.PullIfNotPresent
	}
	// The kubelet's default: Always for :latest or no tag.
	last := c.Image[strings.LastIndex(c.Image, "/")+1:]
	if _, tag, tagged := strings.Cut(last, ":"); !tagged || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// leaseVerbs are what MUST 1 and 2 need on the Lease: read it, take and
// renew it, create it (first, and after a deletion).
var leaseVerbs = []string{"get", "update", "create"}

// rbac checks that the pods' ServiceAccount exists, gets a token, and is
// bound to a Role that allows what the Lease needs.
func rbac(d *Dir, dep *appsv1.Deployment) []Problem {
	var ps []Problem
	add := func(sev Severity, rule string, o k8s.Object, field, format string, a ...any) {
		ps = append(ps, Problem{Severity: sev, Rule: rule, Object: d.Name(o), Field: field, Message: fmt.Sprintf(format, a...)})
	}
	spec := dep.Spec.Template.Spec
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var account *corev1.ServiceAccount
	roles := map[string]*rbacv1.Role{}
	for _, o := range d.Objects {
		switch v := o.(type) {
		case *corev1.ServiceAccount:
			if v.Name == sa {
				account = v
			}
		case *rbacv1.Role:
			roles[v.Name] = v
		}
	}
	if account == nil && sa != "default" {
		add(Error, MustDirectory, dep, "spec.template.spec.serviceAccountName",
			"ServiceAccount %q is not in the directory: the pods would never be created", sa)
	}
	automount := spec.AutomountServiceAccountToken
	if automount == nil && account != nil {
		automount = account.AutomountServiceAccountToken
	}
	projected := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil })
	})
	if automount != nil && !*automount && !projected {
		add(Error, MustLease, dep, "spec.template.spec.automountServiceAccountToken",
			"the pods get no ServiceAccount token (automountServiceAccountToken: false, no projected token volume): they cannot reach the apiserver to hold the Lease")
	}
	var rules []rbacv1.PolicyRule
	var unseen []string // ClusterRoles bound: outside the directory
	bound := false
	for _, o := range d.Objects {
		rb, ok := o.(*rbacv1.RoleBinding)
		if !ok || !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa }) {
			continue
		}
		bound = true
		switch r, found := roles[rb.RoleRef.Name]; {
		case rb.RoleRef.Kind == "ClusterRole":
			unseen = append(unseen, rb.RoleRef.Name)
		case !found:
			add(Error, MustDirectory, rb, "roleRef", "binds Role %q, which is not in the directory", rb.RoleRef.Name)
		default:
			rules = append(rules, r.Rules...)
		}
	}
	if !bound {
		add(Error, MustDirectory, dep, "spec.template.spec.serviceAccountName",
			"no RoleBinding binds ServiceAccount %q: the pods may not touch the Lease (MUST 1 needs %s on coordination.k8s.io leases)", sa, strings.Join(leaseVerbs, ", "))
		return ps
	}
	sev, unless := Error, ""
	if len(unseen) > 0 {
		sev, unless = Warning, fmt.Sprintf(", unless ClusterRole %s (outside the directory) does", strings.Join(unseen, ", "))
	}
	for _, verb := range leaseVerbs {
		if !allows(rules, verb, leader.LeaseName) {
			why := ""
			if verb == "create" && allowsNamed(rules, verb) {
				why = " (a rule with resourceNames never allows create: put create in a rule of its own)"
			}
			add(sev, MustDirectory, dep, "spec.template.spec.serviceAccountName",
				"ServiceAccount %q may not %s coordination.k8s.io leases named %s%s%s: MUST 1 and 2 need get, update and create", sa, verb, leader.LeaseName, why, unless)
		}
	}
	for _, verb := range []string{"list", "watch"} {
		if !allows(rules, verb, leader.LeaseName) {
			add(Warning, ShouldFollow, dep, "spec.template.spec.serviceAccountName",
				"ServiceAccount %q may not %s coordination.k8s.io leases named %s%s: needed only to follow the Lease with a watch", sa, verb, leader.LeaseName, unless)
		}
	}
	return ps
}

// allows reports whether some rule grants verb on the Lease named name
// (create is never granted by a rule with resourceNames).
func allows(rules []rbacv1.PolicyRule, verb, name string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		if !leaseRule(r, verb) {
			return false
		}
		if len(r.ResourceNames) == 0 {
			return true
		}
		return verb != "create" && slices.Contains(r.ResourceNames, name)
	})
}

// allowsNamed: some rule with resourceNames names verb on leases.
func allowsNamed(rules []rbacv1.PolicyRule, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return leaseRule(r, verb) && len(r.ResourceNames) > 0 })
}

func leaseRule(r rbacv1.PolicyRule, verb string) bool {
	has := func(xs []string, x string) bool { return slices.Contains(xs, x) || slices.Contains(xs, "*") }
	return has(r.APIGroups, coordinationv1.GroupName) && has(r.Resources, "leases") && has(r.Verbs, verb)
}
