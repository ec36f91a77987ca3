package local

import (
	"bufio"
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/wait"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/cutproxy"
	"github.com/fencecheck/fencecheck/internal/kubetest"
)

// proc is one reconciler process: a pod of the local target.
type proc struct {
	pod       string
	addr      string // its health, metrics and status listener
	cmd       *exec.Cmd
	api, sink *cutproxy.Proxy
	done      chan struct{} // closed when it exited and its output is read

	mu sync.Mutex
	p  collect.LineParser
}

func (r *proc) events() []eventlog.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]eventlog.Event(nil), r.p.Events...)
}

func (r *proc) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.p.Errors...)
}

func (r *proc) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits until the process exited.
func (r *proc) stop(ctx context.Context, timeout time.Duration) error {
	if r.exited() {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	return wait.Poll(ctx, timeout, r.pod+" exited after SIGTERM", func(context.Context) (bool, error) { return r.exited(), nil })
}

func (r *proc) kill() {
	if !r.exited() {
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.api.Close()
	r.sink.Close()
}

// startReconciler starts pod as a process that reaches the apiserver and
// the witness (thus the sink) through proxies of its own.
func (d *deployment) startReconciler(pod string) (*proc, error) {
	o := d.t.opt
	api, err := cutproxy.New(o.APIServer)
	if err != nil {
		return nil, err
	}
	sink, err := cutproxy.NewFrom(d.witnessAddr, d.addrOf(pod))
	if err != nil {
		api.Close()
		return nil, err
	}
	r := &proc{pod: pod, api: api, sink: sink, done: make(chan struct{})}
	fail := func(err error) (*proc, error) {
		api.Close()
		sink.Close()
		return nil, fmt.Errorf("start %s: %w", pod, err)
	}
	kc := filepath.Join(d.dir, pod+".kubeconfig")
	if err := o.Kubeconfig(kc, "https://"+api.Addr()); err != nil {
		return fail(err)
	}
	ports, err := kubetest.FreePorts(1)
	if err != nil {
		return fail(err)
	}
	r.addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := append([]string{"--kubeconfig", kc, "--lease-namespace", d.ns, "--sink-url", "http://" + sink.Addr(), "--addr", r.addr}, d.spec.ReconcilerArgs...)
	r.cmd = exec.Command(o.ReconcilerBin, args...)
	r.cmd.Env = append(os.Environ(), "POD_NAME="+pod, "POD_NAMESPACE="+d.ns, "FENCECHECK_SINK_TOKEN_FILE="+d.writerTokenFile)
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	stderr, err := os.Create(filepath.Join(d.dir, pod+".stderr"))
	if err != nil {
		return fail(err)
	}
	r.cmd.Stderr = stderr
	if err := r.cmd.Start(); err != nil {
		stderr.Close()
		return fail(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 4<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.p.Line(sc.Text())
			r.mu.Unlock()
		}
		_ = r.cmd.Wait()
		stderr.Close()
		close(r.done)
	}()
	return r, nil
}

// ready waits until the process answers /readyz, as a readiness probe would.
func (r *proc) ready(ctx context.Context, timeout time.Duration) error {
	return wait.Poll(ctx, timeout, r.pod+" ready", func(ctx context.Context) (bool, error) {
		if r.exited() {
			return false, wait.GiveUp(fmt.Errorf("%s exited: %v (see %s.stderr)", r.pod, r.cmd.ProcessState, r.pod))
		}
		return httpOK(ctx, "http://"+r.addr+"/readyz")
	})
}

func httpOK(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}
