//go:build integration

package main

// The shim on a real network namespace (root; the netns lock:
// flock /tmp/fencecheck-netns.lock go test -tags integration ./scripts/chaos-mesh/nsexec/).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestEntersTheNetworkNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (ip netns add, setns)")
	}
	bin := filepath.Join(t.TempDir(), "nsexec")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const ns = "fc-nsexec-test"
	exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	// A fresh namespace has only lo; the host has more.
	out, err := exec.Command(bin, "-n", "/var/run/netns/"+ns, "--", "ip", "-o", "link").CombinedOutput()
	if err != nil {
		t.Fatalf("nsexec -n: %v\n%s", err, out)
	}
	if links := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; links != 1 || !strings.Contains(string(out), "lo:") {
		t.Fatalf("inside %s: want only lo, got\n%s", ns, out)
	}
	// Exit status passes through, with -p (fork and wait) and without (exec).
	for _, args := range [][]string{{"-n", "/var/run/netns/" + ns, "--", "sh", "-c", "exit 3"},
		{"-p", "/proc/self/ns/pid", "-n", "/var/run/netns/" + ns, "--", "sh", "-c", "exit 3"}} {
		err := exec.Command(bin, args...).Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Errorf("%v: %v, want exit 3", args, err)
		}
	}
}
