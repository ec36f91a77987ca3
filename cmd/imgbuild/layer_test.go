package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// rootfsTar writes an uncompressed tar with a few files, as debootstrap's
// root filesystem is handed to imgbuild.
func rootfsTar(t *testing.T, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{{"etc/os-release", "ID=debian\n"}, {"usr/sbin/iptables", strings.Repeat("x", 100_000)}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rootfs.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// An image on a stored layer is the image on the tar it was made from,
// byte for byte: the same layer blob, the same digests.
func TestStoredLayerGivesTheSameImage(t *testing.T) {
	dir := t.TempDir()
	rootfs := rootfsTar(t, dir)
	bin := writeFile(t, dir, "tool", "#!binary")
	stored := filepath.Join(dir, "rootfs.layer")
	if err := run([]string{"layer", "--out", stored, rootfs}, io.Discard); err != nil {
		t.Fatal(err)
	}
	common := []string{"--tag", "registry.k8s.io/kube-proxy:v1", "--add", bin + ":/usr/local/bin/kube-proxy", "--entrypoint", "/usr/local/bin/kube-proxy"}
	fromTar, fromLayer := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	if err := run(append([]string{"image", "--out", fromTar, "--rootfs-tar", rootfs}, common...), io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(append([]string{"image", "--out", fromLayer, "--layer", stored}, common...), io.Discard); err != nil {
		t.Fatal(err)
	}
	a, b := mustRead(t, fromTar), mustRead(t, fromLayer)
	if !bytes.Equal(a, b) {
		t.Fatalf("the image on the stored layer differs from the one on its tar (%d and %d bytes)", len(a), len(b))
	}
	tag, _ := name.NewTag("registry.k8s.io/kube-proxy:v1")
	img, err := tarball.ImageFromPath(fromLayer, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if ls, _ := img.Layers(); len(ls) != 2 {
		t.Fatalf("%d layers, want the root filesystem and the --add files", len(ls))
	}
}

// A stored layer whose blob no longer matches its digests, or without them,
// is refused: it would go into the image under another blob's digest.
func TestStoredLayerRefusesAChangedBlob(t *testing.T) {
	dir := t.TempDir()
	stored := filepath.Join(dir, "rootfs.layer")
	if err := run([]string{"layer", "--out", stored, rootfsTar(t, dir)}, io.Discard); err != nil {
		t.Fatal(err)
	}
	image := func() error {
		return run([]string{"image", "--tag", "a:b", "--out", filepath.Join(dir, "o.tar"), "--layer", stored}, io.Discard)
	}
	if err := image(); err != nil {
		t.Fatalf("the intact layer: %v", err)
	}
	blob := mustRead(t, stored)
	blob[len(blob)/2] ^= 0xff
	if err := os.WriteFile(stored, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := image(); err == nil || !strings.Contains(err.Error(), "says") {
		t.Errorf("a changed blob: err %v, want the digests compared", err)
	}
	os.Remove(descPath(stored))
	if err := image(); err == nil || !strings.Contains(err.Error(), "imgbuild layer") {
		t.Errorf("no digests: err %v, want it named", err)
	}
	for _, bad := range [][]string{{"layer", "--out", stored}, {"layer", filepath.Join(dir, "rootfs.tar")}, {"layer", "--out", stored, "/nonexistent.tar"}} {
		if err := run(bad, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded, want an error", bad)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
