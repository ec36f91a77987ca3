package local

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/wait"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// Pause stops pod's process with SIGSTOP for length, then SIGCONT. The
// cluster target freezes the container's cgroup instead; here every
// reconciler is a single process the harness started, so stopping it is
// the same stop-the-world pause (nothing runs, no signal handler sees it)
// without a cgroup per process, and the harness's own exit kills it anyway
// (no deadline to keep beyond the harness's life).
func (d *deployment) Pause(ctx context.Context, pod string, length time.Duration) (history.ChaosWindow, error) {
	r, err := d.byPod(pod)
	if err != nil {
		return history.ChaosWindow{}, err
	}
	w := history.ChaosWindow{Pod: pod, Node: node, Injected: time.Now()}
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return history.ChaosWindow{}, fmt.Errorf("pause %s: %w", pod, err)
	}
	err = wait.Hold(ctx, length)
	if cerr := r.cmd.Process.Signal(syscall.SIGCONT); cerr != nil && err == nil {
		err = fmt.Errorf("resume %s: %w", pod, cerr)
	}
	w.Recovered = time.Now()
	return w, err
}
