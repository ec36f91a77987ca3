package local

import (
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/witness/record"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// CrashSink SIGKILLs the sink process, waits until it is gone (reaped),
// and starts it again with the same flags: the same address and the same
// data dir, as a container restart on its volume would.
func (d *deployment) CrashSink(ctx context.Context) (history.ChaosWindow, error) {
	w := history.ChaosWindow{Pod: "sink", Node: node}
	cmd := d.sinkCmd()
	if cmd == nil {
		return w, errors.New("no sink process to crash")
	}
	w.Injected = time.Now()
	if err := cmd.Process.Kill(); err != nil {
		return history.ChaosWindow{}, fmt.Errorf("SIGKILL the sink: %w", err)
	}
	// Signal fails once Wait (startServer's goroutine) has reaped it.
	if err := wait.Poll(ctx, d.t.opt.StartTimeout, "the killed sink reaped", func(context.Context) (bool, error) {
		return cmd.Process.Signal(syscall.Signal(0)) != nil, nil
	}); err != nil {
		return w, err
	}
	err := d.startServer(ctx, fmt.Sprintf("sink-restart-%d", d.sinkStarts()), d.t.opt.SinkBin, cmd.Args[1:],
		func(ctx context.Context) (bool, error) { _, _, err := d.client.Floor(ctx); return err == nil, err })
	w.Recovered = time.Now()
	return w, err
}

// sinkCmd is the sink process started last (the first one, or its latest
// restart).
func (d *deployment) sinkCmd() *exec.Cmd {
	var last *exec.Cmd
	for _, c := range d.sinks() {
		last = c
	}
	return last
}

// sinkStarts counts the sink processes started.
func (d *deployment) sinkStarts() int { return len(d.sinks()) }

func (d *deployment) sinks() []*exec.Cmd {
	var out []*exec.Cmd
	for _, c := range d.servers {
		if len(c.Args) > 0 && c.Args[0] == d.t.opt.SinkBin {
			out = append(out, c)
		}
	}
	return out
}

// WitnessAdmin POSTs req as JSON to the witness's admin listener.
func (d *deployment) WitnessAdmin(ctx context.Context, path string, req, resp any) error {
	if p, ok := req.(*record.ProbeRequest); ok && p.Authorization == "" {
		p.Authorization = "Bearer " + d.writerToken // the sink refuses a probe without it
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.witnessAdmin+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(hr)
	if err != nil {
		return fmt.Errorf("witness %s: %w", path, err)
	}
	defer r.Body.Close()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("witness %s: %w", path, err)
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("witness %s: %s: %s", path, r.Status, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("witness %s: bad answer: %w", path, err)
	}
	return nil
}
