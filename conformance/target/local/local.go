// Package local is the driver's target without a cluster: the real sink
// and reconciler binaries as local processes against a local etcd +
// kube-apiserver. Each reconciler reaches the apiserver and the sink
// through TCP proxies of its own, which a partition cuts; a pod deletion
// is a SIGTERM followed by a replacement process, as a ReplicaSet would
// start one.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/internal/wait"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/kubetest"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Options configure the target.
type Options struct {
	Kube kubernetes.Interface
	// APIServer is the local apiserver's host:port.
	APIServer string
	// Kubeconfig writes a kubeconfig for the apiserver reached at server
	// (an https URL): each reconciler gets one pointing at its proxy.
	Kubeconfig func(path, server string) error
	// SinkBin, WitnessBin and ReconcilerBin are the built binaries.
	SinkBin, WitnessBin, ReconcilerBin string
	// Dir holds each scenario's data, kubeconfigs and stderr logs.
	Dir string
	// StartTimeout bounds a process's start and stop.
	StartTimeout time.Duration
	Logf         func(format string, args ...any)
}

// Target runs scenarios as local processes.
type Target struct{ opt Options }

// New returns the local target.
func New(opt Options) *Target {
	if opt.StartTimeout == 0 {
		opt.StartTimeout = 30 * time.Second
	}
	return &Target{opt: opt}
}

func (t *Target) Name() string               { return "local" }
func (t *Target) Kube() kubernetes.Interface { return t.opt.Kube }

var _ driver.Deployment = (*deployment)(nil)

// Open creates the namespace (the Lease lives there) and a directory.
func (t *Target) Open(ctx context.Context, ns string) (driver.Deployment, error) {
	if _, err := t.opt.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	dir := filepath.Join(t.opt.Dir, ns)
	if err := os.MkdirAll(filepath.Join(dir, "sink-data"), 0o755); err != nil {
		return nil, err
	}
	return &deployment{t: t, ns: ns, dir: dir}, nil
}

// deployment is one scenario's processes.
type deployment struct {
	t        *Target
	ns, dir  string
	spec     driver.Spec
	sinkAddr string
	client   *client.Client
	// witnessAddr is where the reconcilers' sink proxies lead: the
	// witness, which forwards to the sink; witnessAdmin serves its history.
	witnessAddr, witnessAdmin string
	servers                   []*exec.Cmd // the sink and the witness
	// The sink's credentials (in files for the processes): the
	// reconcilers' writer token, and the harness's admin token.
	writerToken, adminToken         string
	writerTokenFile, adminTokenFile string

	mu    sync.Mutex
	procs []*proc // every reconciler started, exited ones too
	next  int     // the next pod's number
	// podIPs: the address each reconciler reached the witness from.
	podIPs []history.PodIP
}

// Deploy starts the sink and the witness in front of it, waits until they
// answer, then the reconcilers.
func (d *deployment) Deploy(ctx context.Context, spec driver.Spec) error {
	d.spec = spec
	ports, err := kubetest.FreePorts(3)
	if err != nil {
		return err
	}
	d.sinkAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	d.witnessAddr, d.witnessAdmin = fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	// The sink authenticates here as on the cluster: the reconcilers get
	// the writer token (through FENCECHECK_SINK_TOKEN_FILE), the harness
	// alone the admin token that reads the history.
	d.writerToken, d.adminToken = contract.NewToken(), contract.NewToken()
	d.writerTokenFile, d.adminTokenFile = filepath.Join(d.dir, "writer-token"), filepath.Join(d.dir, "admin-token")
	for path, tok := range map[string]string{d.writerTokenFile: d.writerToken, d.adminTokenFile: d.adminToken} {
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			return err
		}
	}
	d.client = &client.Client{BaseURL: "http://" + d.sinkAddr, HTTP: &http.Client{Timeout: 5 * time.Second}, Token: d.adminToken}
	sinkArgs := []string{"--addr", d.sinkAddr, "--data", filepath.Join(d.dir, "sink-data"), "--token-file", d.writerTokenFile, "--admin-token-file", d.adminTokenFile}
	if err := d.startServer(ctx, "sink", d.t.opt.SinkBin, append(sinkArgs, spec.SinkArgs...),
		func(ctx context.Context) (bool, error) { _, _, err := d.client.Floor(ctx); return err == nil, err }); err != nil {
		return err
	}
	if err := d.startServer(ctx, "witness", d.t.opt.WitnessBin, append([]string{"--listen", d.witnessAddr, "--admin", d.witnessAdmin, "--upstream", "http://" + d.sinkAddr}, spec.WitnessArgs...),
		func(ctx context.Context) (bool, error) { return httpOK(ctx, "http://"+d.witnessAdmin+"/healthz") }); err != nil {
		return err
	}
	for range spec.Replicas {
		if _, err := d.addReconciler(ctx); err != nil {
			return err
		}
	}
	return nil
}

// startServer starts bin with its output in name.log and waits until up
// says it answers.
func (d *deployment) startServer(ctx context.Context, name, bin string, args []string, up func(context.Context) (bool, error)) error {
	cmd := exec.Command(bin, args...)
	logPath := filepath.Join(d.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start the %s: %w", name, err)
	}
	d.servers = append(d.servers, cmd)
	go func() { _ = cmd.Wait(); logf.Close() }()
	if err := wait.Poll(ctx, d.t.opt.StartTimeout, "the "+name+" answering", up); err != nil {
		return fmt.Errorf("%w (see %s)", err, logPath)
	}
	return nil
}

// addReconciler starts one more reconciler and waits until it is ready.
func (d *deployment) addReconciler(ctx context.Context) (*proc, error) {
	d.mu.Lock()
	d.next++
	pod := fmt.Sprintf("reconciler-%d", d.next)
	d.mu.Unlock()
	r, err := d.startReconciler(pod)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.procs = append(d.procs, r)
	d.mu.Unlock()
	return r, r.ready(ctx, d.t.opt.StartTimeout)
}

func (d *deployment) all() []*proc {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*proc(nil), d.procs...)
}

func (d *deployment) byPod(pod string) (*proc, error) {
	for _, r := range d.all() {
		if r.pod == pod {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no reconciler %s", pod)
}

// Pods are the reconcilers still running.
func (d *deployment) Pods(context.Context) ([]string, error) {
	var out []string
	for _, r := range d.all() {
		if !r.exited() {
			out = append(out, r.pod)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (d *deployment) Events() driver.EventLog { return events{d} }
func (d *deployment) Sink() driver.Sink       { return sink{d} }

// Status reads the reconciler's /status.
func (d *deployment) Status(ctx context.Context, pod string) (json.RawMessage, error) {
	r, err := d.byPod(pod)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s /status: %w", pod, err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s /status: %w", pod, err)
	}
	return raw, nil
}

// StopReconcilers sends SIGTERM to every reconciler and waits for each.
func (d *deployment) StopReconcilers(ctx context.Context) error {
	var errs []error
	for _, r := range d.all() {
		errs = append(errs, r.stop(ctx, d.t.opt.StartTimeout))
	}
	return errors.Join(errs...)
}

// Close kills whatever still runs and deletes the namespace.
func (d *deployment) Close(ctx context.Context) error {
	for _, r := range d.all() {
		r.kill()
	}
	for _, cmd := range d.servers {
		_ = cmd.Process.Kill()
	}
	return d.t.opt.Kube.CoreV1().Namespaces().Delete(ctx, d.ns, metav1.DeleteOptions{})
}

// events are the processes' stdout, parsed as it was printed: nothing to
// refresh, nothing lost when a process exits.
type events struct{ d *deployment }

func (e events) Snapshot() map[string][]eventlog.Event {
	out := map[string][]eventlog.Event{}
	for _, r := range e.d.all() {
		out[r.pod] = r.events()
	}
	return out
}

func (events) Refresh(context.Context, string) error { return nil }

func (e events) Stop(context.Context) (map[string][]eventlog.Event, []string) {
	var problems []string
	for _, r := range e.d.all() {
		if !r.exited() {
			problems = append(problems, r.pod+": still running when the log was read")
		}
		for _, p := range r.problems() {
			problems = append(problems, r.pod+": "+p)
		}
	}
	return e.Snapshot(), problems
}

// sink reads the sink directly.
type sink struct{ d *deployment }

func (s sink) History(ctx context.Context) ([]contract.Attempt, error) {
	as, dropped, err := s.d.client.HistoryWithDropped(ctx)
	if err != nil {
		return as, err
	}
	return as, driver.DroppedErr(dropped)
}

func (s sink) Records(ctx context.Context, keys []string) ([]contract.Record, error) {
	out := []contract.Record{}
	for _, k := range keys {
		rec, found, _, err := s.d.client.Get(ctx, k)
		if err != nil {
			return out, fmt.Errorf("sink record %q: %w", k, err)
		}
		if found {
			out = append(out, rec)
		}
	}
	return out, nil
}

// Witness reads the witness's history from its admin listener.
func (d *deployment) Witness(ctx context.Context) (*record.History, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.witnessAdmin+record.PathHistory, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("witness history: %w", err)
	}
	defer resp.Body.Close()
	var h record.History
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("witness history: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return nil, fmt.Errorf("witness history: bad body: %w", err)
	}
	return &h, nil
}

// Lacks: the local target can do everything a fault needs.
func (t *Target) Lacks(fault.Capability) string { return "" }

// UnderTest: the local target runs our fixture's binaries, as its name says.
func (d *deployment) UnderTest(context.Context) *history.UnderTest { return nil }
