package chaos

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fencecheck/fencecheck/internal/images"
)

// With --image-repo the agent DaemonSet runs the pushed image by digest.
func TestRewriteAgentImage(t *testing.T) {
	agent := func() *unstructured.Unstructured {
		objs, err := Manifests()
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			if u.GetKind() == "DaemonSet" {
				return u
			}
		}
		t.Fatal("no DaemonSet in manifests/chaos")
		return nil
	}
	const ref = "172.18.0.1:5000/fencecheck/chaos-agent@sha256:0123"
	u := agent()
	if err := rewriteImages(u, images.Map{"index.docker.io/fencecheck/chaos-agent:dev": ref}); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	if c["image"] != ref || c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("image %v pull %v", c["image"], c["imagePullPolicy"])
	}
	if args, _, _ := unstructured.NestedStringSlice(c, "args"); len(args) == 0 {
		t.Error("the rewrite lost the container's args")
	}

	if err := rewriteImages(agent(), images.Map{"index.docker.io/fencecheck/sink:dev": "r/sink@sha256:1"}); err == nil || !strings.Contains(err.Error(), "chaos-agent:dev was not pushed") {
		t.Errorf("agent image not pushed: %v", err)
	}
	u = agent()
	if err := rewriteImages(u, nil); err != nil {
		t.Fatal(err)
	}
	cs, _, _ = unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if c := cs[0].(map[string]any); c["image"] != "fencecheck/chaos-agent:dev" {
		t.Errorf("no map must leave the kind-loaded image: %v", c["image"])
	}
}
