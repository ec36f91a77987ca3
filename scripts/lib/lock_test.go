package lib_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run runs a bash script that sources common.sh, with a deadline: a
// deadlock shows as the deadline, not as a hung test.
func run(t *testing.T, script string, deadline time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "source common.sh\n"+script)
	cmd.Dir = "."
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), ctx.Err()
	}
	return string(out), err
}

// A with_lock holder's child (a script that locks, run by one that holds
// the lock) runs under the held lock instead of waiting for it forever.
func TestWithLockChildRunsUnderTheHeldLock(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "kind.lock")
	out, err := run(t, `
inner() { bash -c 'source common.sh; with_lock "$0" echo child-ran' "$1" & wait $!; }
with_lock "`+lock+`" inner "`+lock+`"`, 20*time.Second)
	if err != nil || !strings.Contains(out, "child-ran") {
		t.Fatalf("the child of the holder did not run under its lock (err %v):\n%s", err, out)
	}
}

// Anyone else waits: the holder's mark does not leak to an unrelated run.
func TestWithLockOthersWait(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "kind.lock")
	out, err := run(t, `
exec 9>>"`+lock+`"; flock 9
# not a child of a with_lock holder: it must wait, and give up after 1 s
FENCECHECK_HELD_LOCKS= timeout 1 bash -c 'source common.sh; with_lock "$0" echo must-not-run' "`+lock+`"
echo "rc=$?"`, 20*time.Second)
	if err != nil || strings.Contains(out, "must-not-run") || !strings.Contains(out, "rc=124") {
		t.Fatalf("an unrelated run did not wait for the lock (err %v):\n%s", err, out)
	}
}
