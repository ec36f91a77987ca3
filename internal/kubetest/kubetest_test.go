package kubetest

import (
	"strings"
	"testing"
)

// Plain go test: no binaries needed; the missing prerequisite must be a
// clear error that says what to run.
func TestMissingBinDirIsAClearError(t *testing.T) {
	t.Setenv(EnvBinDir, "")
	_, err := StartE(Options{})
	if err == nil || !strings.Contains(err.Error(), "scripts/k8s-bins.sh") || !strings.Contains(err.Error(), EnvBinDir) {
		t.Fatalf("got %v", err)
	}
	_, err = StartE(Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "no etcd binary") {
		t.Fatalf("empty bin dir: got %v", err)
	}
}
