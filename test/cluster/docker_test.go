//go:build cluster

package cluster

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPrivilegedDockerRun: `docker run --privileged` works through the runc
// wrapper (kind nodes depend on it). Negative control: on a host whose
// capability bounding set is reduced, the plain runc runtime must fail the
// same run, which shows the wrapper is what makes it work.
func TestPrivilegedDockerRun(t *testing.T) {
	if out, err := exec.Command("docker", "info", "--format", "{{.DefaultRuntime}}").CombinedOutput(); err != nil {
		t.Fatalf("docker info: %v: %s (run `make kind-up`)", err, out)
	}
	cluster := os.Getenv("KIND_CLUSTER_NAME")
	if cluster == "" {
		cluster = "fencecheck"
	}
	out, err := exec.Command("docker", "inspect", "--format", "{{.Config.Image}}", cluster+"-control-plane").CombinedOutput()
	if err != nil {
		t.Fatalf("no control-plane node container for cluster %s: %v: %s (run `make kind-up`)", cluster, err, out)
	}
	image := strings.TrimSpace(string(out))
	run := func(extra ...string) (string, error) {
		args := append([]string{"run", "--rm", "--privileged", "--entrypoint", "/bin/true"}, extra...)
		b, err := exec.Command("docker", append(args, image)...).CombinedOutput()
		return string(b), err
	}
	if out, err := run(); err != nil {
		t.Fatalf("docker run --privileged with the default runtime failed: %v: %s", err, out)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "CapBnd:\t000001fffeffffff") {
		t.Logf("this host's capability bounding set is complete: the plain-runc negative control does not apply")
		return
	}
	if out, err := run("--runtime", "runc"); err == nil {
		t.Errorf("plain runc ran a privileged container on a host without CAP_SYS_RESOURCE; the test cannot tell the wrapper works (%s)", out)
	}
}
