package certify_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
)

// These tests run the real binaries: cmd/sink as a subprocess restarted by a
// shell --restart-cmd, and cmd/fencecheck certify against it.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func binaries(t *testing.T) (sinkBin, fcBin string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "certify-bins-")
		if buildErr != nil {
			return
		}
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		for _, pkg := range []string{"sink", "fencecheck"} {
			out, err := exec.Command(gobin, "build", "-o", filepath.Join(binDir, pkg), "github.com/fencecheck/fencecheck/cmd/"+pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build ./cmd/%s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("building the binaries failed (fix the build first): %v", buildErr)
	}
	return filepath.Join(binDir, "sink"), filepath.Join(binDir, "fencecheck")
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// procSink runs cmd/sink in the background through start.sh; restart.sh
// sends SIGTERM, waits for the process to be gone, and starts it again.
type procSink struct {
	url, dir, restartCmd, killCmd string
}

const startScript = `#!/bin/sh
"$SINK_BIN" --addr "$SINK_ADDR" --data "$SINK_DATA" $SINK_ARGS >>"$SINK_LOG" 2>&1 &
echo $! > "$SINK_PID"
`

// restart waits until the old process is gone (or a zombie) so the new one
// can take the bbolt file lock.
// $1 is the signal: TERM for --restart-cmd, KILL for --kill-cmd. The sleep
// is the polling interval of a wait on a condition, not synchronization.
const restartScript = `#!/bin/sh
pid=$(cat "$SINK_PID")
kill -"$1" "$pid"
while [ -e /proc/$pid ] && ! grep -q ') Z' /proc/$pid/stat 2>/dev/null; do sleep 0.05; done
echo "restarted after SIG$1" >>"$SINK_LOG"
exec sh "$SINK_DIR/start.sh"
`

func startProcSink(t *testing.T, args string) *procSink {
	sinkBin, _ := binaries(t)
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	env := map[string]string{"SINK_BIN": sinkBin, "SINK_ADDR": addr, "SINK_DATA": filepath.Join(dir, "data"),
		"SINK_ARGS": args, "SINK_LOG": filepath.Join(dir, "sink.log"), "SINK_PID": filepath.Join(dir, "pid"), "SINK_DIR": dir}
	var exports strings.Builder
	for k, v := range env {
		fmt.Fprintf(&exports, "export %s='%s'\n", k, v)
	}
	os.WriteFile(filepath.Join(dir, "env.sh"), []byte(exports.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "start.sh"), []byte(startScript), 0o755)
	os.WriteFile(filepath.Join(dir, "restart.sh"), []byte(restartScript), 0o755)
	p := &procSink{url: "http://" + addr, dir: dir,
		restartCmd: fmt.Sprintf(". %s/env.sh && sh %s/restart.sh TERM", dir, dir),
		killCmd:    fmt.Sprintf(". %s/env.sh && sh %s/restart.sh KILL", dir, dir)}
	if out, err := exec.Command("sh", "-c", fmt.Sprintf(". %s/env.sh && sh %s/start.sh", dir, dir)).CombinedOutput(); err != nil {
		t.Fatalf("start.sh: %v %s", err, out)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
			var pid int
			fmt.Sscan(string(b), &pid)
			if proc, err := os.FindProcess(pid); err == nil && pid > 0 {
				proc.Kill()
			}
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "sink.log"))
			t.Logf("sink.log:\n%s", log)
		}
	})
	waitHealthy(t, http.DefaultClient, p.url, 30*time.Second)
	return p
}

// waitHealthy polls /healthz until the sink answers or the deadline passes.
func waitHealthy(t *testing.T, hc *http.Client, url string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		resp, err := hc.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink at %s not healthy within %s (last error %v)", url, limit, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval under a deadline
	}
}

func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	_, fc := binaries(t)
	cmd := exec.Command(fc, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

func readReport(t *testing.T, dir string) certify.Report {
	b, err := os.ReadFile(filepath.Join(dir, certify.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r certify.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCLIDurabilityWithRestartAndKill(t *testing.T) {
	for _, c := range []struct {
		name, args string
		noop       bool // the restart and kill commands do nothing
		wantCode   int
		wantFail   []string
		wantUndec  int
	}{
		{"reference", "", false, 0, nil, 0},
		{"fence-in-memory", "--broken=fence-in-memory", false, 1, []string{"durability/floor-survives-restart", "durability/floor-survives-kill"}, 0},
		{"commands that do nothing", "", true, 4, nil, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startProcSink(t, c.args)
			restart, kill := p.restartCmd, p.killCmd
			if c.noop {
				restart, kill = "true", "true"
			}
			reports := t.TempDir()
			code, out := runCLI(t, "certify", "--sink-url", p.url, "--profile", "core,durability",
				"--restart-cmd", restart, "--kill-cmd", kill, "--restart-timeout", "30s", "--report", reports)
			t.Logf("fencecheck certify output:\n%s", out)
			if code != c.wantCode {
				t.Fatalf("exit code %d, want %d", code, c.wantCode)
			}
			rep := readReport(t, reports)
			if got := rep.Failed(); !slices.Equal(got, c.wantFail) {
				t.Fatalf("failed %v, want %v", got, c.wantFail)
			}
			if got := rep.InconclusiveChecks(); len(got) != c.wantUndec {
				t.Fatalf("inconclusive %v, want %d", got, c.wantUndec)
			}
			log, _ := os.ReadFile(filepath.Join(p.dir, "sink.log"))
			if !c.noop {
				for _, want := range []string{`"msg":"stopped"`, "restarted after SIGTERM", "restarted after SIGKILL"} {
					if !strings.Contains(string(log), want) {
						t.Errorf("sink.log lacks %q: the sink was not restarted both ways:\n%s", want, log)
					}
				}
			}
			for _, f := range []string{certify.FileJUnit, certify.FileCertificate} {
				if _, err := os.Stat(filepath.Join(reports, f)); err != nil {
					t.Errorf("report %s missing: %v", f, err)
				}
			}
		})
	}
}

func TestCLIUsageErrors(t *testing.T) {
	cases := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"certify", "--help"}, 0, "-restart-cmd"},
		{[]string{"certify", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"certify"}, 2, "--sink-url is required"},
		{[]string{"certify", "--sink-url", "localhost:8080"}, 2, "must start with http://"},
		{[]string{"certify", "--sink-url", "http://127.0.0.1:1", "--profile", "core,fast"}, 2, `unknown profile "fast"`},
		{[]string{"certify", "--sink-url", "http://127.0.0.1:1", "--profile", "durability"}, 2, "--restart-cmd"},
		{[]string{"certify", "--sink-url", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), "--profile", "core"}, 3, "sink unreachable"},
		{[]string{"certify", "--sink-url", fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}, 3, "durability profile NOT RUN"},
		{[]string{"certify", "--sink-url", fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}, 3, "domain profile NOT RUN: it raises the sink's floor to 2^64-1 for ever"},
		{[]string{"certify", "--help"}, 0, "-reset-cmd"},
		{[]string{"certify", "--sink-url", "http://127.0.0.1:1", "--profile", "domain"}, 2, "runs only on a sink declared disposable (--disposable"},
		{[]string{"certify", "--sink-url", "http://127.0.0.1:1", "--profile", "core", "--seed", "5", "--steps", "9-3"}, 2, "not a range of step numbers"},
		{[]string{"certify", "--sink-url", "http://127.0.0.1:1", "--profile", "core", "--steps", "3"}, 2, "--steps needs the --seed"},
		{[]string{"certify", "--sink-url", "http://127.0.0.1:1", "--seed", "5", "--steps", "3"}, 2, "give --profile core, idempotency or domain"},
	}
	for _, c := range cases {
		code, out := runCLI(t, c.args...)
		if code != c.wantCode || !strings.Contains(out, c.wantOut) {
			t.Errorf("fencecheck %v: exit %d, want %d with %q in:\n%s", c.args, code, c.wantCode, c.wantOut, out)
		}
	}
}

func TestSinkBinaryFlags(t *testing.T) {
	sinkBin, _ := binaries(t)
	for _, c := range []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"--help"}, 0, "-broken"},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
		{[]string{"--broken=sloppy", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, 2, `unknown broken variant "sloppy"`},
		{[]string{"--store=mysql"}, 2, "unknown --store"},
		{[]string{"--tls-cert=cert.pem"}, 2, "--tls-cert and --tls-key go together"},
		{[]string{"--token-file=/nonexistent", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, 1, "--token-file"},
		{[]string{"--store=postgres"}, 1, "needs --pg-dsn"},
	} {
		cmd := exec.Command(sinkBin, c.args...)
		cmd.Env = append(os.Environ(), "FENCECHECK_PG_DSN=")
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("sink %v did not exit", c.args)
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.wantCode || !strings.Contains(string(out), c.wantOut) {
			t.Errorf("sink %v: exit %d, want %d with %q in:\n%s", c.args, code, c.wantCode, c.wantOut, out)
		}
	}
}
