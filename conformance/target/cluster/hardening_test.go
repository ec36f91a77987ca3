package cluster

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/e2e-framework/klient/k8s"
)

// deployed decodes the three components as a scenario deploys them.
func deployed(t *testing.T) []k8s.Object {
	t.Helper()
	var all []k8s.Object
	for _, c := range []struct{ dir, deployment string }{{"manifests/reconciler", ReconcilerDeployment}, {"manifests/sink", SinkDeployment}, {"manifests/witness", WitnessDeployment}} {
		objs, err := Manifests(context.Background(), repoRoot(t), c.dir, "fc-x", c.deployment, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		all = append(all, objs...)
	}
	return all
}

// Every pod the suite deploys runs as Pod Security "restricted" requires
// (the namespaces enforce it): non-root, no privilege escalation, every
// capability dropped, seccomp RuntimeDefault, and a read-only root.
func TestPodsAreRestricted(t *testing.T) {
	n := 0
	for _, o := range deployed(t) {
		dep, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		n++
		spec := dep.Spec.Template.Spec
		psc := spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
			t.Errorf("%s: pod securityContext %+v: want runAsNonRoot and uid 65532", dep.Name, psc)
		}
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccomp must be RuntimeDefault", dep.Name)
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s: host namespaces", dep.Name)
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s: hostPath volume %s", dep.Name, v.Name)
			}
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s/%s: no securityContext", dep.Name, c.Name)
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s/%s: allowPrivilegeEscalation must be false", dep.Name, c.Name)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("%s/%s: the root filesystem must be read-only", dep.Name, c.Name)
			case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0:
				t.Errorf("%s/%s: capabilities %+v, want drop ALL, add none", dep.Name, c.Name, sc.Capabilities)
			case sc.Privileged != nil && *sc.Privileged:
				t.Errorf("%s/%s: privileged", dep.Name, c.Name)
			}
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					t.Errorf("%s/%s: hostPort", dep.Name, c.Name)
				}
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d Deployments, want 3", n)
	}
}

// The NetworkPolicies select the pods they protect and admit exactly the
// pods meant to reach them: the reconcilers to the witness, the witness to
// the sink, never a reconciler straight to the sink. Tested on the pods'
// own labels, since our kind cluster enforces no NetworkPolicy.
func TestNetworkPoliciesSelectThePods(t *testing.T) {
	objs := deployed(t)
	pods := map[string]labels.Set{} // deployment -> pod template labels
	var policies []*networkingv1.NetworkPolicy
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			pods[v.Name] = v.Spec.Template.Labels
		case *networkingv1.NetworkPolicy:
			policies = append(policies, v)
		}
	}
	want := map[string]struct {
		protects string
		admits   []string
	}{
		"sink":    {SinkDeployment, []string{WitnessDeployment}},
		"witness": {WitnessDeployment, []string{ReconcilerDeployment}},
	}
	if len(policies) != len(want) {
		t.Fatalf("%d NetworkPolicies, want %d", len(policies), len(want))
	}
	sel := func(ls metav1.LabelSelector) labels.Selector {
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, np := range policies {
		w, ok := want[np.Name]
		if !ok {
			t.Fatalf("unexpected NetworkPolicy %s", np.Name)
		}
		if strings.Join(policyTypes(np), ",") != "Ingress" {
			t.Errorf("%s: policyTypes %v", np.Name, np.Spec.PolicyTypes)
		}
		for dep, l := range pods {
			if got := sel(np.Spec.PodSelector).Matches(l); got != (dep == w.protects) {
				t.Errorf("%s: podSelector matches %s = %v", np.Name, dep, got)
			}
		}
		admitted := map[string]bool{}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || p.Port.IntValue() != 8080 {
					t.Errorf("%s: a rule opens port %v, want 8080 only", np.Name, p.Port)
				}
			}
			for _, from := range rule.From {
				if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil {
					t.Errorf("%s: peer %+v: pods of the namespace only", np.Name, from)
					continue
				}
				for dep, l := range pods {
					if sel(*from.PodSelector).Matches(l) {
						admitted[dep] = true
					}
				}
			}
		}
		if strings.Join(keys(admitted), ",") != strings.Join(w.admits, ",") {
			t.Errorf("%s admits %v, want %v", np.Name, keys(admitted), w.admits)
		}
	}
	// The target admits the nodes (the apiserver's proxy, the probes).
	np := policies[0].DeepCopy()
	AdmitNodes(np, []string{"172.18.0.2", "fc00::3"})
	last := np.Spec.Ingress[len(np.Spec.Ingress)-1]
	if len(last.From) != 2 || last.From[0].IPBlock.CIDR != "172.18.0.2/32" || last.From[1].IPBlock.CIDR != "fc00::3/128" {
		t.Fatalf("node rule %+v", last)
	}
}

func policyTypes(np *networkingv1.NetworkPolicy) []string {
	out := []string{}
	for _, p := range np.Spec.PolicyTypes {
		out = append(out, string(p))
	}
	return out
}

func keys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
