package kubetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Plain go test: no binaries needed; the missing prerequisite must be a
// clear error that says what to run.
func TestMissingBinDirIsAClearError(t *testing.T) {
	t.Setenv(EnvBinDir, "")
	t.Setenv("FENCECHECK_CACHE", t.TempDir()) // no cached build to fall back on
	_, err := StartE(Options{})
	if err == nil || !strings.Contains(err.Error(), "scripts/k8s-bins.sh") || !strings.Contains(err.Error(), EnvBinDir) {
		t.Fatalf("got %v", err)
	}
	_, err = StartE(Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "no etcd binary") {
		t.Fatalf("empty bin dir: got %v", err)
	}
}

// Without $FENCECHECK_KUBE_BIN_DIR, BinDir takes the newest complete build
// in the cache and skips one still being built.
func TestBinDirFallsBackToNewestCompleteCacheBuild(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvBinDir, "")
	t.Setenv("FENCECHECK_CACHE", cache)
	mk := func(name string, complete bool, age time.Duration) string {
		d := filepath.Join(cache, "k8s-bins", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(d, "kube-apiserver")
		if err := os.WriteFile(bin, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(bin, when, when); err != nil {
			t.Fatal(err)
		}
		if complete {
			if err := os.WriteFile(filepath.Join(d, ".complete"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	mk("old", true, 2*time.Hour)
	want := mk("new", true, time.Hour)
	mk("building.tmp.1", false, 0)
	if got, err := BinDir(); err != nil || got != want {
		t.Fatalf("BinDir() = %q, %v; want %q", got, err, want)
	}
	t.Setenv(EnvBinDir, "/explicit")
	if got, err := BinDir(); err != nil || got != "/explicit" {
		t.Fatalf("with %s set: BinDir() = %q, %v", EnvBinDir, got, err)
	}
}
