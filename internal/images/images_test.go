package images

import (
	"context"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
)

func TestParseRepo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"172.18.0.1:5000/fencecheck", "172.18.0.1:5000/fencecheck"},
		{"registry.example.com/team/fencecheck", "registry.example.com/team/fencecheck"},
		{"localhost/fencecheck", "localhost/fencecheck"},
		{"ghcr.io/acme", "ghcr.io/acme"},
	} {
		r, err := ParseRepo(tc.in)
		if err != nil || r.String() != tc.want {
			t.Errorf("ParseRepo(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, why string }{
		{"", "empty"},
		{"fencecheck", "path after the registry"},
		{"172.18.0.1:5000", "path after the registry"},
		{"172.18.0.1:5000/", "path after the registry"},
		{"reg.example.com/a/", "empty path element"},
		{"fencecheck/images", "not a registry host"},
		{"http://172.18.0.1:5000/fencecheck", "no scheme"},
		{"reg.example.com/fencecheck:dev", "no tag"},
		{"reg.example.com/fencecheck@sha256:abc", "no digest"},
		{"reg.example.com/FenceCheck", "repository can only contain"},
		{":5000/fencecheck", "empty"},
		{"reg.example.com/a//b", "empty path element"},
	} {
		_, err := ParseRepo(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "want REGISTRY/PATH") {
			t.Errorf("ParseRepo(%q) = %v; want an error saying %q", tc.in, err, tc.why)
		}
	}
}

func TestRewritePod(t *testing.T) {
	m := Map{
		"index.docker.io/fencecheck/sink:dev":       "172.18.0.1:5000/fencecheck/sink@sha256:aa",
		"index.docker.io/fencecheck/reconciler:dev": "172.18.0.1:5000/fencecheck/reconciler@sha256:bb",
	}
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "docker.io/fencecheck/sink:dev", ImagePullPolicy: corev1.PullNever}},
		Containers: []corev1.Container{
			{Name: "a", Image: "fencecheck/reconciler:dev", ImagePullPolicy: corev1.PullNever},
			{Name: "theirs", Image: "quay.io/acme/ctl:v1", ImagePullPolicy: corev1.PullAlways},
		},
	}
	if err := m.RewritePod(spec); err != nil {
		t.Fatal(err)
	}
	if c := spec.InitContainers[0]; c.Image != "172.18.0.1:5000/fencecheck/sink@sha256:aa" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("init container: %s %s", c.Image, c.ImagePullPolicy)
	}
	if c := spec.Containers[0]; c.Image != "172.18.0.1:5000/fencecheck/reconciler@sha256:bb" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("our container: %s %s", c.Image, c.ImagePullPolicy)
	}
	if c := spec.Containers[1]; c.Image != "quay.io/acme/ctl:v1" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("a user's image must be left alone: %s %s", c.Image, c.ImagePullPolicy)
	}

	// One of ours that was not pushed would never start: an error naming it.
	spec = &corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "fencecheck/witness:dev", ImagePullPolicy: corev1.PullNever}}}
	if err := m.RewritePod(spec); err == nil || !strings.Contains(err.Error(), "fencecheck/witness:dev was not pushed") {
		t.Errorf("unpushed image: %v", err)
	}
	// No Map (kind load): nothing changes.
	var none Map
	spec = &corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "fencecheck/witness:dev", ImagePullPolicy: corev1.PullNever}}}
	if err := none.RewritePod(spec); err != nil || spec.Containers[0].Image != "fencecheck/witness:dev" || spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("nil map changed %v (%v)", spec.Containers[0], err)
	}
}

// TestPush pushes two archives to an in-process registry and checks that
// the Map's references are by digest and that the registry serves them.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	repo, err := ParseRepo(host + "/team/fencecheck")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var archives []string
	for _, n := range []string{"sink", "chaos-agent"} {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		tag, _ := name.NewTag("docker.io/fencecheck/" + n + ":dev")
		p := filepath.Join(dir, n+".tar")
		if err := tarball.WriteToFile(p, tag, img); err != nil {
			t.Fatal(err)
		}
		archives = append(archives, p)
	}
	m, err := Push(context.Background(), repo, archives, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Fatalf("map %v", m)
	}
	for _, src := range []string{"index.docker.io/fencecheck/sink:dev", "index.docker.io/fencecheck/chaos-agent:dev"} {
		ref := m[src]
		want := host + "/team/fencecheck/" + strings.TrimSuffix(strings.TrimPrefix(src, "index.docker.io/fencecheck/"), ":dev") + "@sha256:"
		if !strings.HasPrefix(ref, want) {
			t.Errorf("%s -> %q, want %s...", src, ref, want)
			continue
		}
		d, err := name.NewDigest(ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Image(d); err != nil {
			t.Errorf("the registry does not serve %s: %v", ref, err)
		}
	}
	// Pushing the same archives again is idempotent: the same digests.
	again, err := Push(context.Background(), repo, archives, nil)
	if err != nil || again[archivesKey(t, archives[0])] != m[archivesKey(t, archives[0])] {
		t.Errorf("second push: %v %v", again, err)
	}

	if _, err := Push(context.Background(), repo, []string{filepath.Join(dir, "missing.tar")}, nil); err == nil || !strings.Contains(err.Error(), "not an image archive") {
		t.Errorf("missing archive: %v", err)
	}
	out := filepath.Join(dir, "images.json")
	if err := m.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "@sha256:") {
		t.Errorf("images.json: %s", b)
	}
}

func archivesKey(t *testing.T, archive string) string {
	tag, err := archiveTag(archive)
	if err != nil {
		t.Fatal(err)
	}
	return tag.Name()
}

// An unreachable registry is named, before any push.
func TestPushUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	repo, _ := ParseRepo(addr + "/fencecheck")
	_, err = Push(context.Background(), repo, []string{"unused.tar"}, nil)
	if err == nil || !strings.Contains(err.Error(), "registry "+addr+" (http) is unreachable") {
		t.Errorf("unreachable: %v", err)
	}
}
