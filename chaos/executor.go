package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/fencecheck/fencecheck/internal/images"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Executor applies NetworkChaos objects on a cluster.
type Executor interface {
	Name() string
	// Install makes the executor ready (built-in: CRD, RBAC, agents Ready).
	Install(ctx context.Context) error
	// Inject creates nc and waits until its status says every selected pod
	// is injected; Window.Injected is set.
	Inject(ctx context.Context, nc *v1alpha1.NetworkChaos) (Window, error)
	// WaitRecovered waits until the status says every pod recovered.
	WaitRecovered(ctx context.Context, namespace, name string) (Window, error)
	Delete(ctx context.Context, namespace, name string) error
}

// Window is one partition as the executor recorded it. Injected is the
// first pod's injection, Recovered the last pod's recovery. Pod lists the
// targeted pods ("namespace/name", comma-separated).
type Window struct {
	Name      string    `json:"name"`
	Injected  time.Time `json:"injected"`
	Recovered time.Time `json:"recovered,omitempty"`
	Targets   []string  `json:"targets"`
	Pod       string    `json:"pod"`
}

// GVR is NetworkChaos's resource, the same for Chaos Mesh and our CRD.
var GVR = schema.GroupVersionResource{Group: "chaos-mesh.org", Version: "v1alpha1", Resource: "networkchaos"}

// Executor names, as the CLI's --executor takes them.
const (
	BuiltInName   = "builtin"
	ChaosMeshName = "chaos-mesh"
)

// Logf receives progress lines; nil is silent.
type Logf func(format string, args ...any)

// objects is the NetworkChaos client both executors share: they differ only
// in who acts on the object.
type objects struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
	logf Logf
	// poll is how often status is read while waiting.
	poll time.Duration
	// validate rejects what this executor cannot run, before creating.
	validate func(*v1alpha1.NetworkChaos) error
}

func (o *objects) log(format string, args ...any) {
	if o.logf != nil {
		o.logf(format, args...)
	}
}

// ToUnstructured converts a typed NetworkChaos for the dynamic client.
func ToUnstructured(nc *v1alpha1.NetworkChaos) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind("NetworkChaos")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// FromUnstructured converts back to the typed object.
func FromUnstructured(u *unstructured.Unstructured) (*v1alpha1.NetworkChaos, error) {
	nc := &v1alpha1.NetworkChaos{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		return nil, fmt.Errorf("decode NetworkChaos %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return nc, nil
}

func (o *objects) get(ctx context.Context, ns, name string) (*v1alpha1.NetworkChaos, error) {
	u, err := o.dyn.Resource(GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if r := Refused(u); r != "" {
		return nil, &RefusedError{Reason: r}
	}
	return FromUnstructured(u)
}

// RefusedField is where the built-in agent writes why it refused an
// object (status.refused; agent.RefusedField).
const RefusedField = "refused"

// Refused returns the reason an agent refused u ("" if it did not).
func Refused(u *unstructured.Unstructured) string {
	r, _, _ := unstructured.NestedString(u.Object, "status", RefusedField)
	return r
}

// RefusedError is an object the agent refused to apply.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused by the chaos agent: " + e.Reason }

// selectedPods resolves nc's selector now, so Inject knows which pods must
// report injected and fails fast when none match.
func (o *objects) selectedPods(ctx context.Context, nc *v1alpha1.NetworkChaos) ([]string, error) {
	return o.selectedBy(ctx, nc.Namespace, nc.Spec.PodSelector)
}

// selectedBy is selectedPods for any chaos object's selector.
func (o *objects) selectedBy(ctx context.Context, objectNS string, ps v1alpha1.PodSelector) ([]string, error) {
	var pods []corev1.Pod
	for _, ns := range plan.TargetNamespaces(objectNS, ps.Selector) {
		l, err := o.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods in %s: %w", ns, err)
		}
		pods = append(pods, l.Items...)
	}
	sel, err := plan.SelectBy(objectNS, ps, pods)
	if err != nil {
		return nil, err
	}
	var keys []string
	for i := range sel {
		keys = append(keys, plan.PodKey(&sel[i]))
	}
	if len(keys) == 0 {
		return nil, errors.New("the selector matches no running pod")
	}
	return keys, nil
}

func (o *objects) Inject(ctx context.Context, nc *v1alpha1.NetworkChaos) (Window, error) {
	if o.validate != nil {
		if err := o.validate(nc); err != nil {
			return Window{}, fmt.Errorf("inject: %w", err)
		}
	}
	dur, err := plan.Duration(nc)
	if err != nil {
		return Window{}, fmt.Errorf("inject: %w", err)
	}
	pods, err := o.selectedPods(ctx, nc)
	if err != nil {
		return Window{}, fmt.Errorf("inject: %w", err)
	}
	u, err := ToUnstructured(nc)
	if err != nil {
		return Window{}, err
	}
	created, err := o.dyn.Resource(GVR).Namespace(nc.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return Window{}, fmt.Errorf("inject: create NetworkChaos: %w", err)
	}
	name := created.GetName()
	o.log("created NetworkChaos %s/%s (%s, pods %s, targets %s)", nc.Namespace, name, dur, strings.Join(pods, ","), strings.Join(nc.Spec.ExternalTargets, ","))
	// Injecting later than the partition's own deadline is pointless.
	typed, err := FromUnstructured(created)
	if err != nil {
		return Window{}, err
	}
	end, err := plan.Deadline(typed)
	if err != nil {
		return Window{}, fmt.Errorf("inject %s/%s: %w", nc.Namespace, name, err)
	}
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	w, err := o.wait(ctx, GVR, nc.Namespace, name, pods, false)
	if err != nil {
		return w, fmt.Errorf("inject %s/%s: %w", nc.Namespace, name, err)
	}
	o.log("NetworkChaos %s/%s injected at %s", nc.Namespace, name, w.Injected.Format(time.RFC3339Nano))
	return w, nil
}

// recoveryGrace is how long after its deadline a partition may take to be
// reported recovered before WaitRecovered gives up.
const recoveryGrace = time.Minute

func (o *objects) WaitRecovered(ctx context.Context, ns, name string) (Window, error) {
	nc, err := o.get(ctx, ns, name)
	if err != nil {
		return Window{}, fmt.Errorf("wait recovered: %w", err)
	}
	if end, err := plan.Deadline(nc); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end.Add(recoveryGrace))
		defer cancel()
	}
	var pods []string
	for p := range plan.Progress(&nc.Status) {
		pods = append(pods, p)
	}
	w, err := o.wait(ctx, GVR, ns, name, pods, true)
	if err != nil {
		return w, fmt.Errorf("wait recovered %s/%s: %w", ns, name, err)
	}
	o.log("NetworkChaos %s/%s recovered at %s", ns, name, w.Recovered.Format(time.RFC3339Nano))
	return w, nil
}

// chaosObject is what wait reads of any chaos kind: its status and the
// targets to name in the window.
type chaosObject struct {
	Spec struct {
		ExternalTargets []string `json:"externalTargets,omitempty"`
	} `json:"spec"`
	Status v1alpha1.NetworkChaosStatus `json:"status"`
}

func (o *objects) getObject(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*chaosObject, error) {
	u, err := o.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if r := Refused(u); r != "" {
		return nil, &RefusedError{Reason: r}
	}
	c := &chaosObject{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		return nil, fmt.Errorf("decode %s %s/%s: %w", gvr.Resource, ns, name, err)
	}
	return c, nil
}

// wait polls the status until every pod is injected (or recovered).
func (o *objects) wait(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, pods []string, recovered bool) (Window, error) {
	tick := time.NewTicker(o.poll)
	defer tick.Stop()
	w := Window{Name: name}
	last := ""
	for {
		c, err := o.getObject(ctx, gvr, ns, name)
		if apierrors.IsNotFound(err) {
			return w, errors.New("the object was deleted")
		}
		var refused *RefusedError
		if errors.As(err, &refused) {
			return w, err
		}
		if err == nil {
			var done bool
			var state string
			w, done, state, err = window(name, c.Spec.ExternalTargets, &c.Status, pods, recovered)
			if err != nil {
				return w, err
			}
			if done {
				return w, nil
			}
			if state != last {
				o.log("%s %s/%s: %s", gvr.Resource, ns, name, state)
				last = state
			}
		}
		select {
		case <-ctx.Done():
			return w, fmt.Errorf("%w (last state: %s; last error: %v)", ctx.Err(), last, err)
		case <-tick.C:
		}
	}
}

// window reads nc's status for pods: done when all are injected (or all
// recovered); an error when an executor reported a failure.
func window(name string, targets []string, st *v1alpha1.NetworkChaosStatus, pods []string, recovered bool) (Window, bool, string, error) {
	w := Window{Name: name, Targets: targets}
	sort.Strings(pods)
	w.Pod = strings.Join(pods, ",")
	prog := plan.Progress(st)
	done := len(pods) > 0
	var states []string
	for _, p := range pods {
		pp := prog[p]
		switch {
		case pp == nil:
			done = false
			states = append(states, p+" waiting")
			continue
		case pp.Failure != "" && !recovered:
			return w, false, "", fmt.Errorf("pod %s: %s", p, pp.Failure)
		}
		if !pp.Injected.IsZero() && (w.Injected.IsZero() || pp.Injected.Before(w.Injected)) {
			w.Injected = pp.Injected
		}
		if pp.Recovered.After(w.Recovered) {
			w.Recovered = pp.Recovered
		}
		switch {
		case pp.Injected.IsZero():
			done = false
			states = append(states, p+" not injected")
		case recovered && pp.Recovered.IsZero():
			done = false
			states = append(states, p+" injected")
		case recovered:
			states = append(states, p+" recovered")
		default:
			states = append(states, p+" injected")
		}
	}
	if recovered && !done {
		w.Recovered = time.Time{}
	}
	return w, done, strings.Join(states, ", "), nil
}

func (o *objects) Delete(ctx context.Context, ns, name string) error {
	err := o.dyn.Resource(GVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete NetworkChaos %s/%s: %w", ns, name, err)
	}
	return nil
}

// ChaosMesh hands NetworkChaos objects to a cluster's Chaos Mesh controller.
type ChaosMesh struct{ objects }

func (*ChaosMesh) Name() string { return ChaosMeshName }

// Install installs nothing (Chaos Mesh is the cluster's own), but fails
// when its controller is missing or not ready: objects nobody executes
// would only time out.
func (c *ChaosMesh) Install(ctx context.Context) error {
	l, err := c.kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ChaosMeshController})
	if err != nil {
		return fmt.Errorf("chaos mesh: %w", err)
	}
	for _, d := range l.Items {
		if d.Name == ChaosMeshController && d.Status.ReadyReplicas > 0 {
			return nil
		}
	}
	if len(l.Items) == 0 {
		return errors.New("chaos mesh is not installed (no " + ChaosMeshController + " Deployment): make chaos-mesh-up installs it on the kind cluster")
	}
	return fmt.Errorf("chaos mesh's %s in %s has no ready replica (are its images loaded? make chaos-mesh-up)", ChaosMeshController, l.Items[0].Namespace)
}

// Options configure the executors.
type Options struct {
	Logf Logf
	// Images, when set, is where the agent's image was pushed
	// (--image-repo): the DaemonSet runs it by digest.
	Images images.Map
	// Poll is the status polling interval (default 200ms).
	Poll time.Duration
}

func newObjects(cfg *rest.Config, opt Options) (objects, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return objects{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return objects{}, err
	}
	if opt.Poll <= 0 {
		opt.Poll = 200 * time.Millisecond
	}
	return objects{dyn: dyn, kube: kube, logf: opt.Logf, poll: opt.Poll}, nil
}

// NewChaosMesh returns the Chaos Mesh executor.
func NewChaosMesh(cfg *rest.Config, opt Options) (*ChaosMesh, error) {
	o, err := newObjects(cfg, opt)
	o.validate = chaosMeshCanRun
	return &ChaosMesh{o}, err
}

// chaosMeshCanRun refuses a port-scoped partition: Chaos Mesh ignores our
// ports annotation and would cut every connection to the targets, a wider
// fault than the one asked for (docs/chaos.md).
func chaosMeshCanRun(nc *v1alpha1.NetworkChaos) error {
	if _, ok := nc.Annotations[plan.PortsAnnotation]; ok {
		return fmt.Errorf("chaos mesh cannot scope a partition to ports (annotation %s): it would cut every connection to the targets; leave TCPPorts empty or use the built-in executor", plan.PortsAnnotation)
	}
	return nil
}

// ChaosMeshController is the Deployment name "auto" looks for.
const ChaosMeshController = "chaos-controller-manager"

// HasChaosMesh reports whether a Chaos Mesh controller Deployment exists in
// any namespace.
func HasChaosMesh(ctx context.Context, kube kubernetes.Interface) (bool, error) {
	l, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ChaosMeshController})
	if err != nil {
		return false, fmt.Errorf("detect chaos mesh: %w", err)
	}
	for _, d := range l.Items { // the field selector is the filter; this guards fakes and proxies that ignore it
		if d.Name == ChaosMeshController {
			return true, nil
		}
	}
	return false, nil
}

// detect returns Chaos Mesh's executor if the cluster runs its controller,
// else the built-in one.
func detect(ctx context.Context, cfg *rest.Config, opt Options) (Executor, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ok, err := HasChaosMesh(ctx, kube)
	if err != nil {
		return nil, err
	}
	if ok {
		return NewChaosMesh(cfg, opt)
	}
	return NewBuiltIn(cfg, opt)
}

// ByName returns the named executor ("auto" detects).
func ByName(ctx context.Context, cfg *rest.Config, name string, opt Options) (Executor, error) {
	switch name {
	case "", "auto":
		return detect(ctx, cfg, opt)
	case BuiltInName:
		return NewBuiltIn(cfg, opt)
	case ChaosMeshName:
		return NewChaosMesh(cfg, opt)
	}
	return nil, fmt.Errorf("executor %q unknown (auto, %s, %s)", name, BuiltInName, ChaosMeshName)
}
