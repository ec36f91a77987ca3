// Package kubetest starts a real kube-apiserver (with its etcd) as local
// processes for integration tests: real optimistic concurrency, real RBAC,
// no kubelet. Binaries come from $FENCECHECK_KUBE_BIN_DIR (scripts/k8s-bins.sh
// prints it).
package kubetest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// EnvBinDir names the directory holding etcd and kube-apiserver.
const EnvBinDir = "FENCECHECK_KUBE_BIN_DIR"

// Options configure one apiserver.
type Options struct {
	// AuthorizationMode is passed to --authorization-mode; "" means AlwaysAllow.
	// Use "RBAC" to test Roles (the admin token is in system:masters).
	AuthorizationMode string
	// ReadyTimeout bounds the wait for /readyz; 0 means 90s (a loaded
	// 2-core machine can take a while).
	ReadyTimeout time.Duration
	// BinDir overrides $FENCECHECK_KUBE_BIN_DIR.
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

	etcd, apiserver *exec.Cmd
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
		bin = os.Getenv(EnvBinDir)
	}
	if bin == "" {
		return nil, fmt.Errorf("%s is not set: run `export %s=$(bash scripts/k8s-bins.sh)` (builds or reuses etcd and kube-apiserver)", EnvBinDir, EnvBinDir)
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if fi, err := os.Stat(filepath.Join(bin, b)); err != nil || fi.IsDir() {
			return nil, fmt.Errorf("%s=%s has no %s binary: run `bash scripts/k8s-bins.sh`", EnvBinDir, bin, b)
		}
	}
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	s = &Server{Dir: dir}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	s.etcd, err = startProc(filepath.Join(bin, "etcd"), filepath.Join(dir, "etcd.log"),
		"--name=kubetest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return nil, err
	}
	logf("kubetest: etcd pid %d on %s", s.etcd.Process.Pid, etcdURL)

	if err := writeServiceAccountKey(dir); err != nil {
		return nil, err
	}
	token := randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",kubetest-admin,kubetest-admin-uid,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	authz := opts.AuthorizationMode
	if authz == "" {
		authz = "AlwaysAllow"
	}
	s.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	s.apiserver, err = startProc(filepath.Join(bin, "kube-apiserver"), filepath.Join(dir, "kube-apiserver.log"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode="+authz,
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		"--v=1")
	if err != nil {
		return nil, err
	}
	logf("kubetest: kube-apiserver pid %d on %s (authorization %s)", s.apiserver.Process.Pid, s.URL, authz)

	s.Config = &rest.Config{Host: s.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	start := time.Now()
	if err := s.waitReady(timeout); err != nil {
		return nil, err
	}
	logf("kubetest: apiserver ready after %v", time.Since(start).Round(time.Millisecond))
	return s, nil
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
		for name, c := range map[string]*exec.Cmd{"etcd": s.etcd, "kube-apiserver": s.apiserver} {
			if exited(c) {
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
	for _, c := range []*exec.Cmd{s.apiserver, s.etcd} {
		stopProc(c)
	}
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

func startProc(path, logFile string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(logFile)
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
	go func() { _ = c.Wait(); f.Close() }()
	return c, nil
}

func exited(c *exec.Cmd) bool {
	return c != nil && c.Process != nil && c.Process.Signal(syscall.Signal(0)) != nil
}

func stopProc(c *exec.Cmd) {
	if c == nil || c.Process == nil {
		return
	}
	_ = c.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !exited(c) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = c.Process.Kill()
}

// freePorts reserves n distinct loopback ports (released before use: a
// small window another process could take; start-up then fails loudly).
func freePorts(n int) ([]int, error) {
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
