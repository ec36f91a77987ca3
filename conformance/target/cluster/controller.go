package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"

	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/undertest"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/leader"
	"github.com/fencecheck/fencecheck/witness/record"
)

// A user's controller under test (make conformance CONTROLLER=DIR): its
// manifests are deployed in each scenario namespace instead of ours, told
// where everything is through FENCECHECK_* (docs/controller-contract.md).

// The names a user's controller is told (package undertest holds them,
// with the directory's reading and checks; docs/controller-contract.md).
const (
	UnderTestLabel    = undertest.UnderTestLabel
	UnderTestSelector = undertest.UnderTestSelector
	EnvNamespace      = undertest.EnvNamespace
	EnvLeaseName      = undertest.EnvLeaseName
	EnvTermAnnotation = undertest.EnvTermAnnotation
	EnvSinkURL        = undertest.EnvSinkURL
	EnvPodName        = undertest.EnvPodName
	EnvSinkTokenFile  = undertest.EnvSinkTokenFile
)

// ControllerVars are the FENCECHECK_* values for a scenario namespace,
// from the flags the scenario would give our fixture: only timing flags
// are allowed (a scenario that needs a broken mode runs on our fixture).
func ControllerVars(ns string, reconcilerArgs []string) (map[string]string, error) {
	return undertest.Vars(ns, WitnessURL, reconcilerArgs)
}

// ControllerManifests decodes dir/*.yaml for namespace ns with the
// placeholders substituted. The directory must hold exactly one
// Deployment: it gets replicas, the under-test label on its pods and the
// FENCECHECK_* env in every container. Namespaces are dropped (each
// scenario brings its own); cluster-scoped RBAC is refused (scenarios run
// side by side, each in its own namespace).
func ControllerManifests(ctx context.Context, dir, ns string, vars map[string]string, replicas int32) ([]k8s.Object, *appsv1.Deployment, error) {
	d, problems := undertest.Read(ctx, dir, ns, vars)
	if err := undertest.Errors(problems); err != nil {
		return nil, nil, fmt.Errorf("CONTROLLER=%s: %w", dir, err)
	}
	objs := d.Objects
	dep := d.Deployment
	dep.Spec.Replicas = &replicas
	if dep.Spec.Template.Labels == nil {
		dep.Spec.Template.Labels = map[string]string{}
	}
	dep.Spec.Template.Labels[UnderTestLabel] = undertest.UnderTestValue
	spec := &dep.Spec.Template.Spec
	for i := range spec.InitContainers {
		injectEnv(&spec.InitContainers[i], vars)
	}
	for i := range spec.Containers {
		injectEnv(&spec.Containers[i], vars)
	}
	mountSinkToken(spec)
	return objs, dep, nil
}

// sinkTokenDir is where a controller's containers find the sink's writer
// token, as the file named by EnvSinkTokenFile (MUST 8 of the contract).
const sinkTokenDir = "/var/run/secrets/fencecheck/sink"

// mountSinkToken mounts the writer token of the scenario's Secret into
// every container and names it in EnvSinkTokenFile: the sink refuses
// unauthenticated writes, and the suite never turns that off.
func mountSinkToken(spec *corev1.PodSpec) {
	const volume = "fencecheck-sink-token"
	mode := int32(0o444)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: SinkTokenSecret, DefaultMode: &mode, Items: []corev1.KeyToPath{{Key: SinkWriterTokenKey, Path: SinkWriterTokenKey}}}}})
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: sinkTokenDir, ReadOnly: true})
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == EnvSinkTokenFile })
		c.Env = append(c.Env, corev1.EnvVar{Name: EnvSinkTokenFile, Value: sinkTokenDir + "/" + SinkWriterTokenKey})
	}
}

// injectEnv puts the FENCECHECK_* variables first in c's env (the kubelet
// expands $(VAR) in args and later env from earlier entries), replacing
// any the manifest set itself.
func injectEnv(c *corev1.Container, vars map[string]string) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	env := []corev1.EnvVar{{Name: EnvPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	for _, k := range names {
		env = append(env, corev1.EnvVar{Name: k, Value: vars[k]})
	}
	for _, e := range c.Env {
		if !slices.ContainsFunc(env, func(x corev1.EnvVar) bool { return x.Name == e.Name }) {
			env = append(env, e)
		}
	}
	c.Env = env
}

// deployController creates the user's manifests in the namespace and
// waits for their Deployment to be ready.
func (d *deployment) deployController(ctx context.Context, spec driver.Spec) error {
	vars, err := ControllerVars(d.ns, spec.ReconcilerArgs)
	if err != nil {
		return err
	}
	objs, dep, err := ControllerManifests(ctx, d.t.opt.Controller, d.ns, vars, int32(spec.Replicas))
	if err != nil {
		return err
	}
	if err := UseImages(objs, d.t.opt.Images); err != nil {
		return fmt.Errorf("CONTROLLER=%s: %w", d.t.opt.Controller, err)
	}
	d.name = dep.Name
	for _, obj := range objs {
		if err := d.t.opt.Res.Create(ctx, obj); err != nil {
			return fmt.Errorf("CONTROLLER=%s: create %T %s: %w", d.t.opt.Controller, obj, obj.GetName(), err)
		}
	}
	d.t.log("%s: deployed the controller under test from %s (%d objects, Deployment %s) with %v", d.ns, d.t.opt.Controller, len(objs), dep.Name, vars)
	if err := d.waitReady(ctx, dep.Name); err != nil {
		return fmt.Errorf("the controller under test (%s) did not get %d ready replicas: %w", d.t.opt.Controller, spec.Replicas, err)
	}
	return d.waitControllerActive(ctx)
}

// minUnstampedWrites is how many writes without a valid epoch, and none
// with one, show a controller that does not stamp (not a slow start).
const minUnstampedWrites = 5

// waitControllerActive waits until the controller under test holds the
// Lease the suite watches and writes to the witness; when it does not, the
// error says what was seen instead of a bare timeout.
func (d *deployment) waitControllerActive(ctx context.Context) error {
	var seen string
	err := wait.Poll(ctx, d.t.opt.DeployTimeout, "the controller under test to hold Lease "+leader.LeaseName+" and write to "+WitnessURL, func(ctx context.Context) (bool, error) {
		l, err := d.t.opt.Kube.CoordinationV1().Leases(d.ns).Get(ctx, leader.LeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			seen = d.otherLeases(ctx)
			return false, nil
		}
		holder := *l.Spec.HolderIdentity
		w, err := d.Witness(ctx)
		if err != nil {
			return false, err
		}
		active, giveUp, why := writingActivity(holder, d.ns, w.Operations)
		if giveUp != nil {
			if _, ok := l.Annotations[leader.TermAnnotation]; !ok {
				giveUp = fmt.Errorf("%w; and Lease %s/%s (holder %s) carries no %s annotation: it keeps no term (docs/controller-contract.md, MUST 2)",
					giveUp, d.ns, leader.LeaseName, holder, leader.TermAnnotation)
			}
			return false, wait.GiveUp(giveUp)
		}
		seen = why
		return active, nil
	})
	if err != nil && seen != "" {
		return fmt.Errorf("%w: %s", err, seen)
	}
	return err
}

// otherLeases says which Leases the namespace has instead of ours.
func (d *deployment) otherLeases(ctx context.Context) string {
	ls, err := d.t.opt.Kube.CoordinationV1().Leases(d.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "cannot list Leases: " + err.Error()
	}
	var other []string
	for _, l := range ls.Items {
		h := ""
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		if l.Name == leader.LeaseName {
			return fmt.Sprintf("Lease %s exists with no holder (%q)", l.Name, h)
		}
		other = append(other, fmt.Sprintf("%s (holder %q)", l.Name, h))
	}
	if len(other) == 0 {
		return fmt.Sprintf("no Lease in namespace %s: the controller never stood for election (it must elect on $%s in $%s)", d.ns, EnvLeaseName, EnvNamespace)
	}
	return fmt.Sprintf("the controller elects on Lease %s, not %s: it must use $%s", strings.Join(other, ", "), leader.LeaseName, EnvLeaseName)
}

// UnderTest names the controller this scenario runs and the image IDs
// (digests) its pods reported.
func (d *deployment) UnderTest(ctx context.Context) *history.UnderTest {
	u := &history.UnderTest{Controller: "built-in fixture (manifests/reconciler)", Deployment: d.name}
	if d.t.opt.Controller != "" {
		u.Controller = d.t.opt.Controller
	}
	pods, err := d.t.opt.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: d.sel})
	if err != nil {
		u.Note = "pods not listed: " + err.Error()
		return u
	}
	seen := map[string]bool{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			id := cs.Image + " " + cs.ImageID
			if !seen[id] {
				seen[id] = true
				u.Images = append(u.Images, id)
			}
		}
	}
	sort.Strings(u.Images)
	return u
}

// writingActivity judges the witness's operations while the suite waits
// for a controller to start: active once a PUT carries a valid epoch; a
// controller whose first minUnstampedWrites PUTs carry none is given up
// on with what was seen (giveUp); otherwise why says what is missing.
func writingActivity(holder, ns string, ops []record.Operation) (active bool, giveUp error, why string) {
	puts, stamped, status := 0, 0, map[int]int{}
	for _, op := range ops {
		if op.Method != http.MethodPut {
			continue
		}
		puts++
		status[op.Status]++
		if op.EpochError == "" && op.EpochHeader != "" {
			stamped++
		}
	}
	switch {
	case len(ops) == 0:
		return false, nil, fmt.Sprintf("%s holds Lease %s/%s, but the witness at %s received no request: the controller writes elsewhere or not at all (it must write to $%s)",
			holder, ns, leader.LeaseName, WitnessURL, EnvSinkURL)
	case stamped == 0 && puts >= minUnstampedWrites:
		return false, fmt.Errorf("the witness saw %d PUTs, 0 with a valid %s header (answers by status: %v): the controller does not stamp its writes with its term (docs/controller-contract.md, MUST 4)",
			puts, contract.HeaderEpoch, status), ""
	case stamped == 0:
		// Too few to judge yet; a stamped write is what "active" means.
		return false, nil, fmt.Sprintf("%s holds Lease %s/%s; the witness saw %d requests, %d PUTs, none with a valid %s header yet",
			holder, ns, leader.LeaseName, len(ops), puts, contract.HeaderEpoch)
	}
	return true, nil, ""
}
