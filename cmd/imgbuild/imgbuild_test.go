package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func buildTestImage(t *testing.T, dir, tag string) string {
	t.Helper()
	bin := writeFile(t, dir, "bin-"+strings.NewReplacer("/", "_", ":", "_").Replace(tag), "#!binary "+tag)
	out := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(tag)+".tar")
	err := run([]string{"image", "--tag", tag, "--out", out, "--add", bin + ":/usr/local/bin/tool", "--entrypoint", "/usr/local/bin/tool,serve", "--env", "A=b", "--stopsignal", "SIGRTMIN+3", "--user", "65532:65532"}, io.Discard)
	if err != nil {
		t.Fatalf("image: %v", err)
	}
	return out
}

func TestImageRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out := buildTestImage(t, dir, "docker.io/fencecheck/probe:dev")
	tag, _ := name.NewTag("docker.io/fencecheck/probe:dev")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/local/bin/tool serve" {
		t.Errorf("entrypoint = %q", got)
	}
	if cf.Config.StopSignal != "SIGRTMIN+3" || cf.Config.User != "65532:65532" || !hasEnv(cf.Config.Env, "A") || !hasEnv(cf.Config.Env, "PATH") {
		t.Errorf("config = %+v", cf.Config)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 {
		t.Fatalf("layers = %d", len(layers))
	}
	rc, _ := layers[0].Uncompressed()
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == "usr/local/bin/tool" {
			data, _ := io.ReadAll(tr)
			found = string(data) == "#!binary docker.io/fencecheck/probe:dev" && hdr.Mode == 0o755
		}
	}
	if !found {
		t.Error("file missing or wrong in layer")
	}
	// Reproducible: the same inputs give the same digest.
	out2 := filepath.Join(dir, "again.tar")
	bin := filepath.Join(dir, "bin-docker.io_fencecheck_probe_dev")
	if err := run([]string{"image", "--tag", "docker.io/fencecheck/probe:dev", "--out", out2, "--add", bin + ":/usr/local/bin/tool", "--entrypoint", "/usr/local/bin/tool,serve", "--env", "A=b", "--stopsignal", "SIGRTMIN+3", "--user", "65532:65532"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	img2, _ := tarball.ImageFromPath(out2, &tag)
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("not reproducible: %s != %s", d1, d2)
	}
}

func TestArchiveRepositoriesFirst(t *testing.T) {
	dir := t.TempDir()
	a := buildTestImage(t, dir, "docker.io/kindest/kindnetd:v1")
	b := buildTestImage(t, dir, "registry.k8s.io/kube-proxy:v1.34.4")
	out := filepath.Join(dir, "multi.tar")
	if err := run([]string{"archive", "--out", out, a, b}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(out)
	defer f.Close()
	tr := tar.NewReader(f)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "repositories" {
		t.Fatalf("first entry = %v, %v; want repositories", hdr, err)
	}
	var repos map[string]map[string]string
	if err := json.NewDecoder(tr).Decode(&repos); err != nil {
		t.Fatal(err)
	}
	if repos["docker.io/kindest/kindnetd"]["v1"] == "" || repos["registry.k8s.io/kube-proxy"]["v1.34.4"] == "" {
		t.Errorf("repositories = %v", repos)
	}
	m, err := readManifest(out)
	if err != nil || len(m) != 2 {
		t.Fatalf("manifest = %v, %v", m, err)
	}
	// Every image in the merged archive loads.
	for _, ref := range []string{"docker.io/kindest/kindnetd:v1", "registry.k8s.io/kube-proxy:v1.34.4"} {
		tag, _ := name.NewTag(ref)
		img, err := tarball.ImageFromPath(out, &tag)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if _, err := img.Layers(); err != nil {
			t.Fatal(err)
		}
		if _, err := img.ConfigFile(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	notArchive := writeFile(t, dir, "x.tar", "hello")
	cases := [][]string{
		{"archive", "--out", filepath.Join(dir, "o.tar"), notArchive},
		{"archive", "--out", filepath.Join(dir, "o.tar")},
		{"image", "--tag", "a:b", "--out", filepath.Join(dir, "o.tar")},
		{"image", "--tag", "a:b", "--out", filepath.Join(dir, "o.tar"), "--add", "/nonexistent:/x"},
		{"image", "--tag", "a:b", "--out", filepath.Join(dir, "o.tar"), "--add", notArchive + ":relative"},
		{"image", "--bogus"},
		{"frobnicate"},
	}
	for _, c := range cases {
		if err := run(c, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded, want error", c)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.tar")); err == nil {
		t.Error("failed run left an output file")
	}
}
