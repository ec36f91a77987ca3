// Package kubetest starts a real kube-apiserver (with its etcd) as local
// processes for integration tests: real optimistic concurrency, real RBAC,
// no kubelet. Binaries come from $FENCECHECK_KUBE_BIN_DIR (scripts/k8s-bins.sh
// prints it), or else the newest complete build under
// $FENCECHECK_CACHE/k8s-bins/*.
package kubetest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// EnvBinDir names the directory holding etcd and kube-apiserver.
const EnvBinDir = "FENCECHECK_KUBE_BIN_DIR"

// BinDir is $FENCECHECK_KUBE_BIN_DIR or, when that is unset, the newest
// complete scripts/k8s-bins.sh output under $FENCECHECK_CACHE/k8s-bins/*
// ($FENCECHECK_CACHE defaults to ~/.cache/fencecheck, as in the scripts).
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	cache := os.Getenv("FENCECHECK_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "fencecheck")
	}
	// .complete is written last by k8s-bins.sh: a build in progress is skipped.
	marks, _ := filepath.Glob(filepath.Join(cache, "k8s-bins", "*", ".complete"))
	var found []string
	for _, m := range marks {
		if isFile(filepath.Join(filepath.Dir(m), "kube-apiserver")) {
			found = append(found, filepath.Join(filepath.Dir(m), "kube-apiserver"))
		}
	}
	if len(found) == 0 {
		return "", fmt.Errorf("%s is not set and %s/k8s-bins holds no complete build: run `export %s=$(bash scripts/k8s-bins.sh --apiserver-only)` (builds or reuses etcd and kube-apiserver)", EnvBinDir, cache, EnvBinDir)
	}
	sort.Slice(found, func(i, j int) bool { return mtime(found[i]).After(mtime(found[j])) })
	return filepath.Dir(found[0]), nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func mtime(p string) time.Time {
	fi, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Options configure one apiserver.
type Options struct {
	// AuthorizationMode is passed to --authorization-mode; "" means AlwaysAllow.
	// Use "RBAC" to test Roles (the admin token is in system:masters).
	AuthorizationMode string
	// ReadyTimeout bounds the wait for /readyz; 0 means 90s (a loaded
	// 2-core machine can take a while).
	ReadyTimeout time.Duration
	// BinDir overrides BinDir() ($FENCECHECK_KUBE_BIN_DIR or the cache).
	BinDir string
	// Log receives progress lines; nil means none.
	Log func(format string, args ...any)
}

// Server is a running etcd + kube-apiserver pair.
type Server struct {
	// Config authenticates as the admin (system:masters) with a static token.
	Config *rest.Config
	URL    string
	Dir    string // temp dir with data, certs, keys and the two process logs
	// Port is the apiserver's loopback port (it keeps it across restarts);
	// EtcdURL is etcd's client URL.
	Port    int
	EtcdURL string

	bin             string
	authz           string
	readyTimeout    time.Duration
	logf            func(format string, args ...any)
	etcd, apiserver *proc
	stopped         bool
}

// Start starts a server for a test and stops it at cleanup. A missing
// prerequisite is a t.Fatal that says what to run.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Log == nil {
		opts.Log = t.Logf
	}
	s, err := StartE(opts)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartE is Start without a testing.TB.
func StartE(opts Options) (s *Server, err error) {
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bin := opts.BinDir
	if bin == "" {
		if bin, err = BinDir(); err != nil {
			return nil, err
		}
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if !isFile(filepath.Join(bin, b)) {
			return nil, fmt.Errorf("%s=%s has no %s binary: run `bash scripts/k8s-bins.sh --apiserver-only`", EnvBinDir, bin, b)
		}
	}
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	s = &Server{Dir: dir, bin: bin, logf: logf}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()

	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	s.EtcdURL = etcdURL
	s.etcd, err = startProc(filepath.Join(bin, "etcd"), filepath.Join(dir, "etcd.log"),
		"--name=kubetest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return nil, err
	}
	logf("kubetest: etcd pid %d on %s", s.etcd.cmd.Process.Pid, etcdURL)

	if err := writeServiceAccountKey(dir); err != nil {
		return nil, err
	}
	token := randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",kubetest-admin,kubetest-admin-uid,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	s.authz = opts.AuthorizationMode
	if s.authz == "" {
		s.authz = "AlwaysAllow"
	}
	s.readyTimeout = opts.ReadyTimeout
	if s.readyTimeout == 0 {
		s.readyTimeout = 90 * time.Second
	}
	s.Port = ports[2]
	s.URL = "https://127.0.0.1:" + strconv.Itoa(s.Port)
	s.Config = &rest.Config{Host: s.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
	if err := s.StartAPIServer(); err != nil {
		return nil, err
	}
	return s, nil
}

// StartAPIServer starts kube-apiserver on the server's port (again, after
// StopAPIServer; its log is appended to) and waits for /readyz.
func (s *Server) StartAPIServer() error {
	if s.apiserver != nil && !s.apiserver.exited() {
		return errors.New("kube-apiserver is already running")
	}
	var err error
	s.apiserver, err = startProc(filepath.Join(s.bin, "kube-apiserver"), filepath.Join(s.Dir, "kube-apiserver.log"),
		"--etcd-servers="+s.EtcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(s.Port),
		"--cert-dir="+filepath.Join(s.Dir, "certs"),
		"--service-account-key-file="+filepath.Join(s.Dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(s.Dir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--token-auth-file="+filepath.Join(s.Dir, "tokens.csv"),
		"--authorization-mode="+s.authz,
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		"--v=1")
	if err != nil {
		return err
	}
	s.logf("kubetest: kube-apiserver pid %d on %s (authorization %s)", s.apiserver.cmd.Process.Pid, s.URL, s.authz)
	start := time.Now()
	if err := s.waitReady(s.readyTimeout); err != nil {
		return err
	}
	s.logf("kubetest: apiserver ready after %v", time.Since(start).Round(time.Millisecond))
	return nil
}

// StopAPIServer stops kube-apiserver and waits for it to exit; etcd keeps
// running.
func (s *Server) StopAPIServer() {
	s.apiserver.stop()
}

// Compact compacts etcd up to its current revision (with etcdctl from the
// binary directory) and returns that revision. It first writes a key outside
// the apiserver's prefix, so the compacted range covers every
// resourceVersion the apiserver ever handed out, bookmarks included: a watch
// resumed from any of them must get 410 Gone.
func (s *Server) Compact() (int64, error) {
	etcdctl := filepath.Join(s.bin, "etcdctl")
	if b, err := exec.Command(etcdctl, "--endpoints", s.EtcdURL, "put", "/fencecheck-compact-bump", time.Now().String()).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("etcdctl put: %w %s", err, b)
	}
	out, err := exec.Command(etcdctl, "--endpoints", s.EtcdURL, "endpoint", "status", "-w", "json").Output()
	if err != nil {
		return 0, fmt.Errorf("etcdctl endpoint status: %w", err)
	}
	var st []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
		} `json:"Status"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st) == 0 {
		return 0, errors.Join(fmt.Errorf("etcdctl status %s", out), err)
	}
	rev := st[0].Status.Header.Revision
	if b, err := exec.Command(etcdctl, "--endpoints", s.EtcdURL, "compact", strconv.FormatInt(rev, 10)).CombinedOutput(); err != nil {
		return rev, fmt.Errorf("etcdctl compact %d: %w %s", rev, err, b)
	}
	return rev, nil
}

// Kubeconfig writes a kubeconfig (admin token, TLS unverified) for server;
// "" means this apiserver. A different server is, say, a proxy in front of it.
func (s *Server) Kubeconfig(path, server string) error {
	if server == "" {
		server = s.URL
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: local
  context: {cluster: local, user: admin, namespace: default}
current-context: local
`, server, s.Config.BearerToken)
	return os.WriteFile(path, []byte(kc), 0o600)
}

// waitReady polls /readyz until 200, a process exits, or the deadline.
func (s *Server) waitReady(timeout time.Duration) error {
	rt, err := rest.TransportFor(s.Config)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: rt, Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		for name, p := range map[string]*proc{"etcd": s.etcd, "kube-apiserver": s.apiserver} {
			if p.exited() {
				return fmt.Errorf("%s exited during start-up:\n%s", name, s.tail(name+".log"))
			}
		}
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond) // polling with a deadline
	}
	return fmt.Errorf("kube-apiserver not ready after %v (last: %s):\n%s", timeout, last, s.tail("kube-apiserver.log"))
}

// Stop kills both processes and removes the temp dir. Safe to call twice.
func (s *Server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.apiserver.stop()
	s.etcd.stop()
	if s.Dir != "" && os.Getenv("KUBETEST_KEEP") == "" {
		_ = os.RemoveAll(s.Dir)
	}
}

func (s *Server) tail(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, name))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// proc is a started child process; done closes when it has been reaped.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startProc starts path with its output appended to logFile.
func startProc(path, logFile string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c := exec.Command(path, args...)
	c.Stdout, c.Stderr = f, f
	// The children must not outlive a crashed test binary.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p := &proc{cmd: c, done: make(chan struct{})}
	go func() { _ = c.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) exited() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, kills after 10s, and waits for the exit.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(10 * time.Second):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	ps, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// FreePorts reserves n distinct loopback ports (released before use: a
// small window another process could take; start-up then fails loudly).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeServiceAccountKey makes the RSA key pair the apiserver signs and
// verifies service-account tokens with.
func writeServiceAccountKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	var priv, pubPEM bytes.Buffer
	_ = pem.Encode(&priv, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	_ = pem.Encode(&pubPEM, &pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return errors.Join(os.WriteFile(filepath.Join(dir, "sa.key"), priv.Bytes(), 0o600), os.WriteFile(filepath.Join(dir, "sa.pub"), pubPEM.Bytes(), 0o644))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Impersonate returns a copy of the admin config acting as user (in groups):
// for checking what a Role lets a service account do.
func (s *Server) Impersonate(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(s.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

// ServiceAccountUser is the username of a service account.
func ServiceAccountUser(ns, name string) (user string, groups []string) {
	return "system:serviceaccount:" + ns + ":" + name, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}
