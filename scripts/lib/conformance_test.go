package lib_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A run deletes only a kind cluster it created, and then as
// --keep-cluster says; one kind-up found up (or had to replace) stays.
func TestClusterDisposal(t *testing.T) {
	for _, c := range []struct {
		outcome, keep, rc, want string
	}{
		{"created", "on-failure", "0", "delete"},
		{"created", "on-failure", "1", "keep: --keep-cluster=on-failure, exit 1"},
		{"created", "never", "1", "delete"},
		{"created", "always", "0", "keep: --keep-cluster=always, exit 0"},
		{"reused", "never", "0", "keep: it existed before this run (kind-up reused it)"},
		{"reused", "on-failure", "0", "keep: it existed before this run (kind-up reused it)"},
		{"recreated", "never", "0", "keep: it existed before this run (kind-up recreated it)"},
		{"", "never", "0", "keep: this run did not create it"},
	} {
		out, err := run(t, fmt.Sprintf("source kind.sh; cluster_disposal '%s' '%s' '%s'", c.outcome, c.keep, c.rc), 20*time.Second)
		if err != nil || strings.TrimSpace(out) != c.want {
			t.Errorf("cluster_disposal %q %q %q = %q (err %v), want %q", c.outcome, c.keep, c.rc, out, err, c.want)
		}
	}
}

// conformance.sh's exit trap asks cluster_disposal after a failed run,
// under set -e: a bare return there returns the failure that fired the
// trap, and the trap died before keeping, deleting or reporting anything.
func TestClusterDisposalInAFailedRunsExitTrap(t *testing.T) {
	out, err := run(t, `source kind.sh
set -euo pipefail
finish() { local d; d=$(cluster_disposal reused never 1); echo "disposal: $d"; }
trap finish EXIT
false`, 20*time.Second)
	if want := "disposal: keep: it existed before this run (kind-up reused it)"; !strings.Contains(out, want) {
		t.Fatalf("the exit trap printed %q (err %v), want %q", out, err, want)
	}
}

// conformance runs scripts/conformance.sh with args and a cache of its
// own, and reports its output and whether it made a reports directory.
func conformance(t *testing.T, env []string, args ...string) (out string, code int, reports bool) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("test-lib-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a cold `go run` builds the CLI
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "scripts/conformance.sh"), "--run-id", runID}, args...)...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "FENCECHECK_CACHE="+t.TempDir()), env...)
	cmd.WaitDelay = time.Second
	// On the deadline the whole process group goes, not bash alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	b, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance.sh %v did not end in time:\n%s", args, b)
	}
	code = cmd.ProcessState.ExitCode()
	dir := filepath.Join(root, "reports", runID)
	if _, err := os.Stat(dir); err == nil {
		reports = true
		os.RemoveAll(dir)
	}
	return string(b), code, reports
}

// --controller-image with a --kubeconfig that is not the kind cluster
// (here: no such kind cluster) is refused before anything is built or
// recorded: the image is never left out in silence.
func TestConformanceRefusesAControllerImageItCannotLoad(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code, reports := conformance(t, []string{"KIND_CLUSTER_NAME=fc-test-no-such-cluster"},
		"--kubeconfig", kubeconfig, "--controller-image", "./examples/crcontroller")
	if code != 1 || reports || !strings.Contains(out, "--controller-image ./examples/crcontroller with --kubeconfig") || !strings.Contains(out, "--image-repo") {
		t.Errorf("exit %d, reports directory made: %v; want exit 1 naming --controller-image and --image-repo, nothing made:\n%s", code, reports, out)
	}
}

// --controller DIR is checked before any cluster work: a directory that
// breaks the contract stops the run with the MUST it breaks.
func TestConformanceChecksTheControllerFirst(t *testing.T) {
	out, code, reports := conformance(t, nil, "--kubeconfig", "/dev/null", "--controller", "conformance/undertest/testdata/bad-privileged")
	if code != 1 || reports || !strings.Contains(out, "MUST 11 (Pod Security restricted)") || !strings.Contains(out, "breaks the contract") {
		t.Errorf("exit %d, reports directory made: %v; want exit 1 with the doctor's MUST 11, nothing made:\n%s", code, reports, out)
	}
}
