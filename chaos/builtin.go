package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/fencecheck/fencecheck/internal/images"
	chaosmanifests "github.com/fencecheck/fencecheck/manifests/chaos"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
)

// BuiltIn is the executor that runs here: the chaos-agent DaemonSet applies
// each NetworkChaos as routes in the target pods' network namespaces.
type BuiltIn struct {
	objects
	// images rewrites the agent's image to its pushed reference (nil: the
	// kind-loaded fencecheck/chaos-agent:dev).
	images images.Map
}

// NewBuiltIn returns the built-in executor.
func NewBuiltIn(cfg *rest.Config, opt Options) (*BuiltIn, error) {
	o, err := newObjects(cfg, opt)
	o.validate = plan.Validate
	return &BuiltIn{objects: o, images: opt.Images}, err
}

func (*BuiltIn) Name() string { return BuiltInName }

// AgentNamespace and AgentName locate the agent DaemonSet.
const (
	AgentNamespace = "fencecheck-system"
	AgentName      = "chaos-agent"
	partOfLabel    = "app.kubernetes.io/part-of"
	crdName        = "networkchaos.chaos-mesh.org"
)

var kindResource = map[string]schema.GroupVersionResource{
	"Namespace":                {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":           {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":              {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding":       {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"DaemonSet":                {Group: "apps", Version: "v1", Resource: "daemonsets"},
	"CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
}

var crdGVR = kindResource["CustomResourceDefinition"]

// Manifests decodes the embedded manifests, in file order.
func Manifests() ([]*unstructured.Unstructured, error) {
	files, err := fs.Glob(chaosmanifests.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := chaosmanifests.FS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("manifests/chaos/%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if _, ok := kindResource[u.GetKind()]; !ok {
				return nil, fmt.Errorf("manifests/chaos/%s: kind %q not known to the installer", f, u.GetKind())
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// Install applies the CRD, RBAC and agent DaemonSet (server-side apply) and
// waits until the CRD is established and an agent is Ready on every node.
// It refuses to replace a NetworkChaos CRD that is not ours (Chaos Mesh's).
func (b *BuiltIn) Install(ctx context.Context) error {
	if err := b.Apply(ctx); err != nil {
		return err
	}
	return b.waitAgents(ctx)
}

// Apply applies the manifests and waits for the CRD, without waiting for
// the agents (tests that run the agent in-process use it).
func (b *BuiltIn) Apply(ctx context.Context) error {
	objs, err := Manifests()
	if err != nil {
		return err
	}
	if crd, err := b.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{}); err == nil {
		if crd.GetLabels()[partOfLabel] != "fencecheck" {
			return fmt.Errorf("install: CRD %s exists and is not fencecheck's (Chaos Mesh?); use the chaos-mesh executor", crdName)
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("install: get CRD %s: %w", crdName, err)
	}
	for _, u := range objs {
		if u.GetKind() == "DaemonSet" {
			if err := rewriteImages(u, b.images); err != nil {
				return fmt.Errorf("install: DaemonSet %s: %w", u.GetName(), err)
			}
		}
		gvr := kindResource[u.GetKind()]
		var ri interface {
			Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error)
		} = b.dyn.Resource(gvr)
		if ns := u.GetNamespace(); ns != "" {
			ri = b.dyn.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "fencecheck", Force: true}); err != nil {
			return fmt.Errorf("install: apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		b.log("applied %s %s", u.GetKind(), u.GetName())
		if u.GetKind() == "CustomResourceDefinition" {
			if err := b.waitCRD(ctx, u.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewriteImages points the DaemonSet u at the pushed images of m, in
// place (a round trip through the typed object would add fields the
// apply would then own).
func rewriteImages(u *unstructured.Unstructured, m images.Map) error {
	if m == nil {
		return nil
	}
	for _, list := range []string{"initContainers", "containers"} {
		cs, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", list)
		if err != nil {
			return err
		}
		for _, c := range cs {
			c, ok := c.(map[string]any)
			image, _ := c["image"].(string)
			if !ok || image == "" {
				continue
			}
			ref, pushed, err := m.Resolve(image)
			if err != nil {
				return fmt.Errorf("container %v: %w", c["name"], err)
			}
			if pushed {
				c["image"], c["imagePullPolicy"] = ref, string(corev1.PullIfNotPresent)
			}
		}
		if len(cs) > 0 {
			if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", list); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *BuiltIn) waitCRD(ctx context.Context, name string) error {
	return b.until(ctx, "CRD "+name+" established", func() (bool, string, error) {
		crd, err := b.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, "", nil
			}
		}
		return false, "not established", nil
	})
}

func (b *BuiltIn) waitAgents(ctx context.Context) error {
	return b.until(ctx, "chaos-agent Ready on every node", func() (bool, string, error) {
		ds, err := b.kube.AppsV1().DaemonSets(AgentNamespace).Get(ctx, AgentName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		s := ds.Status
		state := fmt.Sprintf("%d/%d ready, %d updated", s.NumberReady, s.DesiredNumberScheduled, s.UpdatedNumberScheduled)
		ok := s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
			s.NumberReady == s.DesiredNumberScheduled && s.UpdatedNumberScheduled == s.DesiredNumberScheduled
		return ok, state, nil
	})
}

// until polls cond until it holds or ctx ends, logging state changes.
func (o *objects) until(ctx context.Context, what string, cond func() (bool, string, error)) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, state, err := cond()
		if err != nil {
			return err
		}
		if ok {
			o.log("%s", what)
			return nil
		}
		if state != last {
			o.log("waiting for %s: %s", what, state)
			last = state
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %s)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
