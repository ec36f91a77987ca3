package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

func TestNewPartitionOnePod(t *testing.T) {
	nc := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-1", Targets: []string{"10.96.0.1", "172.18.0.2"}, Duration: 45 * time.Second})
	b, err := yaml.Marshal(nc)
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, want := range []string{"apiVersion: chaos-mesh.org/v1alpha1", "kind: NetworkChaos", "generateName: fencecheck-partition-",
		"namespace: app", "action: partition", "direction: to", "duration: 45s", "mode: one", "- 10.96.0.1", "pods:\n      app:\n      - rec-1"} {
		if !strings.Contains(y, want) {
			t.Errorf("YAML lacks %q:\n%s", want, y)
		}
	}
	if err := plan.Validate(nc); err != nil {
		t.Fatalf("built-in executor rejects our own object: %v", err)
	}
}

func TestNewPartitionByLabels(t *testing.T) {
	nc := NewPartition(PartitionSpec{Name: "p", Namespace: "chaos", PodNamespace: "app", PodLabels: map[string]string{"app": "rec"},
		Targets: []string{"10.96.0.1"}, Duration: time.Minute, Direction: v1alpha1.Both})
	if nc.Name != "p" || nc.GenerateName != "" || nc.Namespace != "chaos" || nc.Spec.Mode != v1alpha1.AllMode ||
		nc.Spec.Direction != v1alpha1.Both || nc.Spec.Selector.Namespaces[0] != "app" || nc.Spec.Selector.LabelSelectors["app"] != "rec" {
		t.Fatalf("%+v", nc)
	}
}

// Every spec field we emit is typed in our CRD, and the DaemonSet asks for
// exactly the privileges docs/chaos.md justifies.
func TestManifests(t *testing.T) {
	objs, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GetName() == crdName {
			kinds[o.GetKind()] = o
		}
	}
	for _, k := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"} {
		if kinds[k] == nil {
			t.Fatalf("manifests lack a %s", k)
		}
	}
	crd := kinds["CustomResourceDefinition"]
	if crd.GetName() != "networkchaos.chaos-mesh.org" || crd.GetLabels()[partOfLabel] != "fencecheck" {
		t.Fatalf("CRD %s labels %v", crd.GetName(), crd.GetLabels())
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	if v["name"] != "v1alpha1" {
		t.Fatalf("CRD version %v", v["name"])
	}
	if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
		t.Fatal("CRD has no status subresource")
	}
	props, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec", "properties")
	nc := NewPartition(PartitionSpec{PodNamespace: "a", PodName: "p", Targets: []string{"1.1.1.1"}, Duration: time.Second})
	u, _ := ToUnstructured(nc)
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	for k := range spec {
		if _, ok := props[k]; !ok {
			t.Errorf("spec.%s emitted by NewPartition but not typed in the CRD", k)
		}
	}
	ds := kinds["DaemonSet"]
	if hn, _, _ := unstructured.NestedBool(ds.Object, "spec", "template", "spec", "hostNetwork"); hn {
		t.Error("agent is hostNetwork: it reaches pod namespaces through /var/run/netns")
	}
	cs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	if ape, found, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); !found || ape {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
		t.Error("root filesystem not read-only")
	}
	if sp, _, _ := unstructured.NestedString(c, "securityContext", "seccompProfile", "type"); sp != "RuntimeDefault" {
		t.Errorf("seccomp %q", sp)
	}
	if lp, _, _ := unstructured.NestedString(c, "livenessProbe", "httpGet", "path"); lp != "/livez" {
		t.Errorf("liveness probe %q, want the heal loop's /livez", lp)
	}
	vols, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
	ledger := false
	for _, v := range vols {
		if p, _, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); strings.HasPrefix(p, "/run/") {
			ledger = true
		}
	}
	if !ledger {
		t.Error("no node ledger hostPath under /run")
	}
	add, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "add")
	drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop")
	if strings.Join(add, ",") != "NET_ADMIN,SYS_ADMIN" || strings.Join(drop, ",") != "ALL" {
		t.Errorf("capabilities add %v drop %v", add, drop)
	}
	if priv, found, _ := unstructured.NestedBool(c, "securityContext", "privileged"); found && priv {
		t.Error("agent is privileged")
	}
	if c["image"] != "fencecheck/chaos-agent:dev" || c["imagePullPolicy"] != "Never" {
		t.Errorf("image %v pull %v", c["image"], c["imagePullPolicy"])
	}
}

func TestAPIServerTargetsAndLeader(t *testing.T) {
	holder := "rec-2_deadbeef"
	port6443 := int32(6443)
	c := kubefake.NewSimpleClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1"},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(6443)}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"172.18.0.3"}}, {Addresses: []string{"172.18.0.2"}}}, Ports: []discoveryv1.EndpointPort{{Port: &port6443}}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "rec"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "rec"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "rec-2"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "rec-20"}},
	)
	got, err := APIServerTargets(context.Background(), c)
	if err != nil || strings.Join(got, ",") != "10.96.0.1,172.18.0.2,172.18.0.3" {
		t.Fatalf("%v %v", got, err)
	}
	if ports, err := APIServerPorts(context.Background(), c); err != nil || fmt.Sprint(ports) != "[443 6443]" {
		t.Fatalf("ports %v %v", ports, err)
	}
	nc := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-2", Targets: got, TCPPorts: []int{443, 6443}, Duration: time.Minute})
	if rs, err := plan.Routes(nc); err != nil || len(rs) != 6 || rs[0].Port != 443 {
		t.Fatalf("port-scoped partition routes %v %v", rs, err)
	}
	// The pod whose name the identity starts with, by the longest match
	// followed by '_' ("rec" and "rec-20" are not "rec-2_deadbeef"'s pod),
	// whatever the suffix; a holder that names no pod is an error naming it.
	for id, want := range map[string]string{"rec-2_deadbeef": "rec-2", "rec-2_1": "rec-2", "rec-20": "rec-20", "rec_x_y": "rec", "other_deadbeef": ""} {
		l, _ := c.CoordinationV1().Leases("app").Get(context.Background(), "rec", metav1.GetOptions{})
		l.Spec.HolderIdentity = &id
		if _, err := c.CoordinationV1().Leases("app").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := LeaderPod(context.Background(), c, "app", "rec")
		if want == "" {
			if err == nil || !strings.Contains(err.Error(), id) {
				t.Errorf("holder %q: pod %q, error %v; want an error naming it", id, p, err)
			}
		} else if p != want || err != nil {
			t.Errorf("holder %q: pod %q %v, want %q", id, p, err, want)
		}
	}
	empty := kubefake.NewSimpleClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1"}})
	if _, err := APIServerTargets(context.Background(), empty); err == nil {
		t.Fatal("no endpoints accepted")
	}
}

// fakeCluster: fake clients plus a stand-in agent that marks pods injected
// and, at the deadline, recovered, through the status as the real one does.
func fakeCluster(t *testing.T, pods ...*corev1.Pod) (*objects, *dynamicfake.FakeDynamicClient) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "NetworkChaosList"})
	dyn.PrependReactor("create", "networkchaos", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		u.SetCreationTimestamp(metav1.Now())
		if u.GetName() == "" {
			u.SetName(u.GetGenerateName() + "x1")
		}
		return false, nil, nil
	})
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	return &objects{dyn: dyn, kube: kubefake.NewSimpleClientset(objs...), poll: 5 * time.Millisecond, logf: t.Logf, validate: plan.Validate}, dyn
}

func runningPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9"}}
}

// standIn plays the agent: mark (inject, then recover at the deadline).
func standIn(t *testing.T, o *objects, ns string, fail string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			l, _ := o.dyn.Resource(GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
			for i := range l.Items {
				nc, _ := FromUnstructured(&l.Items[i])
				end, _ := plan.Deadline(nc)
				now := time.Now()
				changed := false
				if fail != "" {
					changed = plan.MarkFailed(&nc.Status, ns+"/rec-0", v1alpha1.Apply, fail, now)
				} else if now.Before(end) {
					changed = plan.MarkInjected(&nc.Status, ns+"/rec-0", "routes", now)
				} else {
					changed = plan.MarkRecovered(&nc.Status, ns+"/rec-0", "healed", now)
				}
				if changed {
					st, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&nc.Status)
					unstructured.SetNestedField(l.Items[i].Object, st, "status")
					o.dyn.Resource(GVR).Namespace(ns).UpdateStatus(ctx, &l.Items[i], metav1.UpdateOptions{})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func TestInjectAndWaitRecovered(t *testing.T) {
	o, _ := fakeCluster(t, runningPod("app", "rec-0"))
	defer standIn(t, o, "app", "")()
	nc := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, Duration: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := o.Inject(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if w.Injected.IsZero() || w.Pod != "app/rec-0" || w.Name != "fencecheck-partition-x1" || w.Targets[0] != "10.96.0.1" {
		t.Fatalf("window after inject %+v", w)
	}
	w2, err := o.WaitRecovered(ctx, "app", w.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !w2.Injected.Equal(w.Injected) || !w2.Recovered.After(w2.Injected) {
		t.Fatalf("window %+v", w2)
	}
	b, _ := json.Marshal(w2)
	if !strings.Contains(string(b), `"recovered"`) {
		t.Fatalf("window JSON %s", b)
	}
	if err := o.Delete(ctx, "app", w.Name); err != nil {
		t.Fatal(err)
	}
	if err := o.Delete(ctx, "app", w.Name); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func TestInjectErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, _ := fakeCluster(t, runningPod("app", "rec-0"))
	none := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "nope", Targets: []string{"10.96.0.1"}, Duration: time.Second})
	if _, err := o.Inject(ctx, none); err == nil || !strings.Contains(err.Error(), "no running pod") {
		t.Fatalf("selector matching nothing: %v", err)
	}
	from := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, Duration: time.Second, Direction: v1alpha1.From})
	if _, err := o.Inject(ctx, from); err == nil || !strings.Contains(err.Error(), "direction") {
		t.Fatalf("direction from: %v", err)
	}
	stop := standIn(t, o, "app", "no network namespace holds 10.244.0.9")
	defer stop()
	ok := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, Duration: 5 * time.Second})
	if _, err := o.Inject(ctx, ok); err == nil || !strings.Contains(err.Error(), "no network namespace") {
		t.Fatalf("agent failure not surfaced: %v", err)
	}
}

// Negative control for the waiter: with no agent, Inject must time out
// (at the partition's own deadline), never report success.
func TestInjectWithoutAgentTimesOut(t *testing.T) {
	o, _ := fakeCluster(t, runningPod("app", "rec-0"))
	nc := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, Duration: 200 * time.Millisecond})
	if w, err := o.Inject(context.Background(), nc); err == nil {
		t.Fatalf("Inject succeeded with nobody applying it: %+v", w)
	}
}

func TestHasChaosMesh(t *testing.T) {
	other := kubefake.NewSimpleClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "sink"}})
	if ok, err := HasChaosMesh(context.Background(), other); err != nil || ok {
		t.Fatalf("no chaos mesh: %v %v", ok, err)
	}
	cm := kubefake.NewSimpleClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos-mesh", Name: ChaosMeshController}})
	if ok, err := HasChaosMesh(context.Background(), cm); err != nil || !ok {
		t.Fatalf("chaos mesh not found: %v %v", ok, err)
	}
	if _, err := ByName(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, "litmus", Options{}); err == nil {
		t.Fatal("unknown executor accepted")
	}
	for _, n := range []string{BuiltInName, ChaosMeshName} {
		ex, err := ByName(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, n, Options{})
		if err != nil || ex.Name() != n {
			t.Fatalf("ByName(%s) = %v, %v", n, ex, err)
		}
	}
}

// The Chaos Mesh executor refuses to start on a cluster where nobody would
// execute its objects: missing, or not ready.
func TestChaosMeshInstallNeedsAReadyController(t *testing.T) {
	for _, c := range []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{"missing", nil, "not installed"},
		{"not ready", []runtime.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos-mesh", Name: ChaosMeshController}}}, "no ready replica"},
	} {
		cm := &ChaosMesh{objects{kube: kubefake.NewSimpleClientset(c.objs...)}}
		if err := cm.Install(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Install = %v, want an error with %q", c.name, err, c.want)
		}
	}
	ready := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos-mesh", Name: ChaosMeshController}, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}
	if err := (&ChaosMesh{objects{kube: kubefake.NewSimpleClientset(ready)}}).Install(context.Background()); err != nil {
		t.Errorf("ready controller: %v", err)
	}
}

// Chaos Mesh has no port scope: a port-scoped partition is refused before
// anything is created, not widened to every port.
func TestChaosMeshRefusesPortScopedPartitions(t *testing.T) {
	scoped := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, TCPPorts: []int{443}, Duration: time.Second})
	if err := chaosMeshCanRun(scoped); err == nil || !strings.Contains(err.Error(), "ports") {
		t.Fatalf("port-scoped partition: %v", err)
	}
	whole := NewPartition(PartitionSpec{PodNamespace: "app", PodName: "rec-0", Targets: []string{"10.96.0.1"}, Duration: time.Second})
	if err := chaosMeshCanRun(whole); err != nil {
		t.Fatalf("partition without ports refused: %v", err)
	}
	o, dyn := fakeCluster(t, runningPod("app", "rec-0"))
	o.validate = chaosMeshCanRun
	if _, err := o.Inject(context.Background(), scoped); err == nil {
		t.Fatal("Inject accepted a port-scoped partition")
	}
	if l, _ := dyn.Resource(GVR).Namespace("app").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("an object was created: %v", l.Items)
	}
}
