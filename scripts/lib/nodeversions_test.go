package lib_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"testing"
)

// The node's binaries (scripts/nodeimage/modules/node) and ours share
// client-go, api, apimachinery, klog, x/net, otel, ... Go's build cache
// compiles such a package once for both builds only when the two build
// lists hold the same version of its module (and of everything below it):
// the first verdict, built right after the apiserver, counts on that
// (docs/kind.md, "What the first verdict compiles once"). A module required
// by both go.mod files at two versions doubles those compiles silently.
func TestNodeModuleHasOurVersionsOfEveryModuleWeShare(t *testing.T) {
	ours := readGoMod(t, "../../go.mod")
	node := readGoMod(t, "../nodeimage/modules/node/go.mod")
	if len(ours) < 20 || len(node) < 200 {
		t.Fatalf("read %d and %d requirements: the go.mod files were not read whole", len(ours), len(node))
	}
	for _, m := range versionMismatches(ours, node) {
		t.Errorf("%s; raise the lower one with go get in its module (the node's may need its replace line changed)", m)
	}
}

// The comparison itself must see a mismatch, a replaced module's real
// version, and nothing in modules only one side requires.
func TestVersionMismatches(t *testing.T) {
	ours := map[string]string{"k8s.io/client-go": "v0.35.3", "golang.org/x/net": "v0.59.0", "only/ours": "v1.0.0"}
	node := map[string]string{"k8s.io/client-go": "v0.35.3", "golang.org/x/net": "v0.47.0", "only/node": "v2.0.0"}
	got := versionMismatches(ours, node)
	want := []string{"golang.org/x/net: ours v0.59.0, the node's v0.47.0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	node["golang.org/x/net"] = "v0.59.0"
	if got := versionMismatches(ours, node); len(got) != 0 {
		t.Fatalf("equal versions reported: %q", got)
	}
}

// versionMismatches lists, sorted, every module both requirement maps hold
// at different versions.
func versionMismatches(ours, node map[string]string) []string {
	var out []string
	for path, v := range ours {
		if w, ok := node[path]; ok && w != v {
			out = append(out, fmt.Sprintf("%s: ours %s, the node's %s", path, v, w))
		}
	}
	sort.Strings(out)
	return out
}

// readGoMod: a go.mod's requirements, module path to the version the build
// uses: a replace by another version of a module (the node's staging
// modules, required as v0.0.0) counts as that version.
func readGoMod(t *testing.T, file string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", file).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", file, err)
	}
	type mod struct{ Path, Version string }
	var f struct {
		Require []mod
		Replace []struct{ Old, New mod }
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	req := map[string]string{}
	for _, r := range f.Require {
		req[r.Path] = r.Version
	}
	for _, r := range f.Replace {
		if _, ok := req[r.Old.Path]; ok && r.New.Version != "" {
			req[r.Old.Path] = r.New.Version
		}
	}
	return req
}
