//go:build integration

// Package local runs the conformance scenarios on the host, without a
// cluster: a local etcd + kube-apiserver, the real sink and three real
// reconciler processes, each reaching the apiserver through its own TCP
// proxy that the test can cut (the partition). The same scenario
// definitions, recorders, checks and reports as the cluster suite judge
// the result.
package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/kubetest"
)

// cutProxy forwards TCP to the apiserver until cut: then it drops every
// open connection (as a route change does) and holds new ones unanswered
// until healed.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	open   map[net.Conn]bool
	held   []net.Conn
}

func newCutProxy(target string) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{ln: ln, target: target, open: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.open[c], p.open[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.open, dst)
	delete(p.open, src)
	p.mu.Unlock()
}

func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.open {
		c.Close()
	}
}

func (p *cutProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func (p *cutProxy) Close() { p.ln.Close(); p.Cut() }

// proc is one reconciler process and the events it printed.
type proc struct {
	pod   string
	cmd   *exec.Cmd
	proxy *cutProxy
	mu    sync.Mutex
	p     collect.LineParser
	done  chan struct{}
}

func (r *proc) events() []eventlog.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]eventlog.Event(nil), r.p.Events...)
}

type harness struct {
	t       *testing.T
	dir     string
	api     *kubetest.Server
	kube    kubernetes.Interface
	bins    map[string]string
	timing  scenario.Timing
	reports string
	mu      sync.Mutex
	run     []*history.Scenario
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func setup(t *testing.T) *harness {
	h := &harness{t: t, dir: t.TempDir(), bins: map[string]string{}, timing: scenario.DefaultTiming()}
	api := kubetest.Start(t, kubetest.Options{})
	h.api = api
	h.kube = kubernetes.NewForConfigOrDie(api.Config)
	for _, b := range []string{"sink", "reconciler"} {
		out := filepath.Join(h.dir, b)
		cmd := exec.Command("go", "build", "-o", out, "./cmd/"+b)
		cmd.Dir = repoRoot()
		if o, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", b, err, o)
		}
		h.bins[b] = out
	}
	h.reports = os.Getenv("FENCECHECK_LOCAL_REPORTS")
	if h.reports == "" {
		h.reports = filepath.Join(h.dir, "reports")
	}
	return h
}

func (h *harness) logf(format string, a ...any) {
	h.t.Logf("%s %s", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, a...))
}

// poll waits for cond with a deadline.
func poll(ctx context.Context, what string, d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func (h *harness) scenario(t *testing.T, d scenario.Def) *history.Scenario {
	ctx := context.Background()
	ns := fmt.Sprintf("fc-%d", time.Now().UnixNano()%1_000_000)
	if _, err := h.kube.CoreV1().Namespaces().Create(ctx, nsObj(ns), createOpts); err != nil {
		t.Fatal(err)
	}
	hist := &history.Scenario{Name: d.Name, Description: d.Description, Namespace: ns, Config: h.timing.Config(d), Expect: d.Expect}
	phase := func(name string, fn func() error) {
		t.Helper()
		start := time.Now()
		err := fn()
		hist.Phases = append(hist.Phases, history.Phase{Name: name, Start: start, End: time.Now()})
		h.logf("%s: phase %s done in %v (err %v)", d.Name, name, time.Since(start).Round(time.Millisecond), err)
		if err != nil {
			t.Fatalf("%s: %s: %v", d.Name, name, err)
		}
	}
	lw, err := collect.WatchLease(ctx, h.kube, ns, "fencecheck-reconciler", "camel.io/leader-term", h.logf)
	if err != nil {
		t.Fatal(err)
	}
	// The sink.
	sinkPort, _ := kubetest.FreePort()
	sinkURL := fmt.Sprintf("http://127.0.0.1:%d", sinkPort)
	sinkArgs := append([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", sinkPort), "--data", filepath.Join(h.dir, ns+"-sink")}, d.SinkArgs...)
	sink := exec.Command(h.bins["sink"], sinkArgs...)
	sinkLog, _ := os.Create(filepath.Join(h.dir, ns+"-sink.log"))
	sink.Stdout, sink.Stderr = sinkLog, sinkLog
	sc := &contract.Client{BaseURL: sinkURL, HTTP: &http.Client{Timeout: 5 * time.Second}}
	reconcilerSinkURL := sinkURL
	if d.Name == "neg-no-drain" {
		// A loopback sink answers in well under the write interval, so the
		// bridge never holds a backlog and dropping it cannot show. A slow
		// path to the sink (as over a real network) makes one.
		slow, err := newSlowProxy(sinkURL, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close()
		reconcilerSinkURL = slow.URL
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
			p.proxy.Close()
		}
		if sink.Process != nil {
			_ = sink.Process.Kill()
			_ = sink.Wait()
		}
	}()
	phase("deploy", func() error {
		if err := os.MkdirAll(filepath.Join(h.dir, ns+"-sink"), 0o755); err != nil {
			return err
		}
		if err := sink.Start(); err != nil {
			return err
		}
		if err := poll(ctx, "sink healthy", 20*time.Second, func() bool { _, _, err := sc.Floor(ctx); return err == nil }); err != nil {
			return err
		}
		for _, pod := range []string{"pod-a", "pod-b", "pod-c"} {
			p, err := h.startReconciler(ns, pod, reconcilerSinkURL, append(h.timing.Args(), d.ReconcilerArgs...))
			if err != nil {
				return err
			}
			procs = append(procs, p)
		}
		return nil
	})
	holderNow := func() string {
		rs := lw.Snapshot().Records
		if len(rs) == 0 {
			return ""
		}
		return rs[len(rs)-1].Holder
	}
	commitsAfter := func(since time.Time) int {
		as, err := sc.History(ctx)
		if err != nil {
			return 0
		}
		n := 0
		for _, a := range as {
			if a.Committed() && a.Arrived.After(since) {
				n++
			}
		}
		return n
	}
	byPod := func(pod string) *proc {
		for _, p := range procs {
			if p.pod == pod {
				return p
			}
		}
		return nil
	}
	phase("steady", func() error {
		if err := poll(ctx, "a leader", 30*time.Second, func() bool { return holderNow() != "" }); err != nil {
			return err
		}
		return poll(ctx, "5 commits", 30*time.Second, func() bool { return commitsAfter(time.Time{}) >= 5 })
	})
	old := holderNow()
	oldPod := collect.PodOfIdentity(old)
	leader := byPod(oldPod)
	var healed time.Time
	switch d.Chaos {
	case scenario.PartitionOnce:
		phase("partition", func() error {
			w := history.ChaosWindow{Kind: "partition", Pod: oldPod, Node: "localhost", Injected: time.Now()}
			leader.proxy.Cut()
			// The partition's own length: chaos timing, not synchronisation.
			<-time.After(h.timing.Partition)
			leader.proxy.Heal()
			w.Recovered = time.Now()
			healed = w.Recovered
			hist.Chaos = append(hist.Chaos, w)
			return nil
		})
	case scenario.ShutdownLeader:
		phase("shutdown-leader", func() error {
			w := history.ChaosWindow{Kind: "pod-delete", Pod: oldPod, Node: "localhost", Injected: time.Now()}
			_ = leader.cmd.Process.Signal(syscall.SIGTERM)
			<-leader.done
			w.Recovered = time.Now()
			healed = w.Injected
			hist.Chaos = append(hist.Chaos, w)
			return nil
		})
	default:
		t.Skipf("chaos %q runs only on the cluster", d.Chaos)
	}
	phase("settle", func() error {
		if err := poll(ctx, "a new leader", 30*time.Second, func() bool { h := holderNow(); return h != "" && h != old }); err != nil {
			return err
		}
		if err := poll(ctx, "5 commits after the heal", 30*time.Second, func() bool { return commitsAfter(healed) >= 5 }); err != nil {
			return err
		}
		ignores := false
		for _, a := range d.ReconcilerArgs {
			ignores = ignores || a == "--ignore-demotion"
		}
		if d.WaitRejects {
			if err := poll(ctx, "a rejection", 30*time.Second, func() bool {
				as, _ := sc.History(ctx)
				for _, a := range as {
					if a.Result == contract.ResultRejectStale {
						return true
					}
				}
				return false
			}); err != nil {
				return err
			}
		}
		return poll(ctx, oldPod+" stepping down or writing after the heal", 30*time.Second, func() bool {
			for _, ev := range leader.events() {
				if ignores && ev.Kind == eventlog.KindWrite && ev.Time.After(healed.Add(h.timing.LeaseDuration)) && ev.Status != 0 {
					return true
				}
				if !ignores && (ev.Kind == eventlog.KindBridgeJoined || ev.Kind == eventlog.KindStopped) {
					return true
				}
			}
			return false
		})
	})
	// Collect: stop every writer first, so the sink's history and final
	// state are read at rest and agree.
	start := time.Now()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	hist.Events = map[string][]eventlog.Event{}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			hist.Errors = append(hist.Errors, p.pod+" did not exit within 20s of SIGTERM")
		}
		hist.Events[p.pod] = p.events()
		hist.Errors = append(hist.Errors, p.p.Errors...)
	}
	as, err := sc.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hist.Attempts = as
	keys := map[string]bool{}
	for _, a := range as {
		if a.Op == contract.OpPut {
			keys[a.Key] = true
		}
	}
	hist.FinalRecords = []contract.Record{}
	for k := range keys {
		if rec, found, _, err := sc.Get(ctx, k); err == nil && found {
			hist.FinalRecords = append(hist.FinalRecords, rec)
		}
	}
	sort.Slice(hist.FinalRecords, func(i, j int) bool { return hist.FinalRecords[i].Key < hist.FinalRecords[j].Key })
	hist.Phases = append(hist.Phases, history.Phase{Name: "collect", Start: start, End: time.Now()})
	hist.Lease = lw.Stop()
	return hist
}

func (h *harness) startReconciler(ns, pod, sinkURL string, args []string) (*proc, error) {
	proxy, err := newCutProxy(fmt.Sprintf("127.0.0.1:%d", h.api.Port))
	if err != nil {
		return nil, err
	}
	kc := filepath.Join(h.dir, ns+"-"+pod+".kubeconfig")
	if err := h.api.Kubeconfig(kc, "https://"+proxy.addr()); err != nil {
		return nil, err
	}
	port, _ := kubetest.FreePort()
	all := append([]string{"--kubeconfig", kc, "--lease-namespace", ns, "--sink-url", sinkURL, "--addr", fmt.Sprintf("127.0.0.1:%d", port)}, args...)
	cmd := exec.Command(h.bins["reconciler"], all...)
	cmd.Env = append(os.Environ(), "POD_NAME="+pod, "POD_NAMESPACE="+ns)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf, _ := os.Create(filepath.Join(h.dir, ns+"-"+pod+".stderr"))
	cmd.Stderr = logf
	p := &proc{pod: pod, cmd: cmd, proxy: proxy, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 4<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.p.Line(sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// TestLocalScenarios runs every scenario that needs no cluster feature
// (one partition, or a leader shutdown) against real processes and
// judges it with the scenario's own expectations. FENCECHECK_LOCAL_SCENARIOS
// (a regexp) selects scenarios; FENCECHECK_LOCAL_REPORTS keeps the reports.
func TestLocalScenarios(t *testing.T) {
	h := setup(t)
	sel := regexp.MustCompile(os.Getenv("FENCECHECK_LOCAL_SCENARIOS"))
	for _, d := range scenario.All() {
		if !sel.MatchString(d.Name) || (d.Chaos != scenario.PartitionOnce && d.Chaos != scenario.ShutdownLeader) {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			hist := h.scenario(t, d)
			h.mu.Lock()
			h.run = append(h.run, hist)
			h.mu.Unlock()
			for _, r := range check.EvaluateScenario(hist) {
				switch {
				case !r.OK && r.Expected == history.MustFail:
					t.Errorf("NEGATIVE CONTROL NOT CAUGHT %s: inconclusive=%v %v", r.Check, r.Inconclusive, r.Evidence)
				case !r.OK:
					t.Errorf("FAILED %s: %v", r.Check, r.Evidence)
				default:
					t.Logf("ok %s (expected %s, pass=%v)", r.Check, r.Expected, r.Pass)
				}
			}
			if fs, _ := check.Failovers(hist); len(fs) > 0 {
				for _, f := range fs {
					t.Logf("failover %s of %s: term %d -> %d in %v (bound %v)", f.Kind, f.Pod, f.FromTerm, f.ToTerm, f.Failover.Round(time.Millisecond), f.Bound)
				}
			}
		})
	}
	if len(h.run) > 0 {
		r := &history.Run{Meta: history.Meta{RunID: "local-" + time.Now().UTC().Format("20060102-150405"), Started: h.run[0].Phases[0].Start, Ended: time.Now(),
			Versions: map[string]string{"go": runtime.Version(), "harness": "local processes"}}, Scenarios: h.run}
		if err := report.Write(h.reports, r, check.Evaluate(r)); err != nil {
			t.Fatal(err)
		}
		t.Logf("reports in %s\n%s", h.reports, report.TimingTable(report.Timings(r)))
	}
}
