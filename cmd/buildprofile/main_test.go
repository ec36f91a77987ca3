package main

import (
	"strings"
	"testing"
	"time"
)

func at(s int) time.Time { return time.Unix(1000+int64(s), 0) }

// A two-binary build: two compiles feed link a, one of them also feeds
// link b, which ends last.
func graph() []Action {
	return []Action{
		{ID: 0, Mode: "build", Package: "k8s.io/client-go/rest", TimeStart: at(0), TimeDone: at(10), CmdUser: 15 * time.Second, CmdSys: time.Second},
		{ID: 1, Mode: "build", Package: "github.com/spf13/cobra/doc", TimeStart: at(0), TimeDone: at(4), CmdUser: 4 * time.Second},
		{ID: 2, Mode: "build", Package: "fmt", TimeStart: at(0), TimeDone: at(0)}, // cached
		{ID: 3, Mode: "build", Package: "k8s.io/kubernetes/cmd/kubectl", Deps: []int{0, 1, 2}, TimeStart: at(10), TimeDone: at(12), CmdUser: 2 * time.Second},
		{ID: 4, Mode: "link", Package: "k8s.io/kubernetes/cmd/kubectl", Target: "/tmp/out/kubectl", Deps: []int{3}, TimeStart: at(12), TimeDone: at(20), CmdUser: 9 * time.Second},
		{ID: 5, Mode: "link", Package: "sigs.k8s.io/cri-tools/cmd/crictl", Target: "/tmp/out/crictl", Deps: []int{1}, TimeStart: at(4), TimeDone: at(9), CmdUser: 5 * time.Second},
		{ID: 6, Mode: "build-install", Package: "k8s.io/kubernetes/cmd/kubectl", Deps: []int{4}}, // never ran
	}
}

func TestSummarize(t *testing.T) {
	p, err := Summarize(graph())
	if err != nil {
		t.Fatal(err)
	}
	if p.Wall != 20*time.Second || p.LastCompile != 12*time.Second {
		t.Errorf("wall %v, last compile %v; want 20s, 12s", p.Wall, p.LastCompile)
	}
	if p.Compiles != 3 || p.CompileCPU != 22*time.Second {
		t.Errorf("%d compiles, %v CPU; want 3 (the cached one left out), 22s", p.Compiles, p.CompileCPU)
	}
	want := []Share{{"k8s.io/client-go", 16 * time.Second}, {"github.com/spf13/cobra", 4 * time.Second}, {"k8s.io/kubernetes", 2 * time.Second}}
	if len(p.Modules) != len(want) {
		t.Fatalf("modules %v, want %v", p.Modules, want)
	}
	for i := range want {
		if p.Modules[i] != want[i] {
			t.Errorf("module %d: %v, want %v", i, p.Modules[i], want[i])
		}
	}
	if len(p.Links) != 2 || p.Links[0] != (Share{"kubectl", 8 * time.Second}) || p.Links[1].Name != "crictl" || p.LinkCPU != 14*time.Second {
		t.Errorf("links %v (CPU %v), want kubectl 8s then crictl, 14s CPU", p.Links, p.LinkCPU)
	}
	// The wall waited on client-go/rest, then kubectl's compile, then its link.
	path := []string{"build k8s.io/client-go/rest", "build k8s.io/kubernetes/cmd/kubectl", "link k8s.io/kubernetes/cmd/kubectl"}
	if len(p.CriticalPath) != len(path) {
		t.Fatalf("critical path %v, want %v", p.CriticalPath, path)
	}
	for i := range path {
		if p.CriticalPath[i].Name != path[i] {
			t.Errorf("critical path %d: %q, want %q", i, p.CriticalPath[i].Name, path[i])
		}
	}
	// client-go/rest and kubectl's main are kubectl's alone; cobra/doc is shared.
	if len(p.Only) != 2 || p.Only[0] != (Share{"kubectl", 18 * time.Second}) || p.Only[1] != (Share{"crictl", 0}) {
		t.Errorf("only-one-command CPU %v, want kubectl 18s, crictl 0s", p.Only)
	}
	p.Cores = 2
	var b strings.Builder
	p.Write(&b, 2)
	for _, s := range []string{"wall 20s; 3 packages compiled", "tail after the last compile: 8s", "... 1 more",
		"CPU floor on 2 cores: 18s", "the wall is 1.11x it", "sum of the path's spans: 20s of 20s wall"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "waited on cores") {
		t.Errorf("a path that spans the wall was called core-bound:\n%s", b.String())
	}
}

func TestSummarizeNothingRan(t *testing.T) {
	if _, err := Summarize(nil); err == nil {
		t.Error("an empty graph gave a profile")
	}
	if _, err := Summarize([]Action{{ID: 0, Mode: "build", Package: "fmt"}}); err == nil {
		t.Error("a graph where nothing ran gave a profile")
	}
}

func TestModulePrefix(t *testing.T) {
	for pkg, want := range map[string]string{
		"net/http":                                 "std",
		"k8s.io/client-go/kubernetes/typed":        "k8s.io/client-go",
		"github.com/containerd/containerd/v2/core": "github.com/containerd/containerd",
		"golang.org/x/net/http2":                   "golang.org/x/net",
		"go.etcd.io/etcd/server/v3":                "go.etcd.io/etcd",
		"gopkg.in":                                 "gopkg.in",
	} {
		if got := modulePrefix(pkg); got != want {
			t.Errorf("modulePrefix(%q) = %q, want %q", pkg, got, want)
		}
	}
}

// One core, two independent compiles: the second waits for the core, not for
// the first, so the dependency path covers under half the wall and the
// report says so.
func TestCoreBound(t *testing.T) {
	p, err := Summarize([]Action{
		{ID: 0, Mode: "build", Package: "a", TimeStart: at(0), TimeDone: at(12), CmdUser: 12 * time.Second},
		{ID: 1, Mode: "build", Package: "b", TimeStart: at(12), TimeDone: at(19), CmdUser: 7 * time.Second},
		{ID: 2, Mode: "link", Package: "b", Deps: []int{1}, TimeStart: at(19), TimeDone: at(20), CmdUser: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Cores = 1
	var b strings.Builder
	p.Write(&b, 5)
	for _, s := range []string{"sum of the path's spans: 8s of 20s wall", "CPU floor on 1 cores: 20s", "waited on cores"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}
