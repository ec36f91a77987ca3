// Package localapi runs etcd and kube-apiserver as local processes (the
// binaries scripts/k8s-bins.sh builds) for host-level integration tests:
// a real apiserver with no kubelet, on loopback ports.
package localapi

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Token is the static admin token the apiserver accepts.
const Token = "fencecheck-token"

// BinDir finds the newest directory with kube-apiserver under
// $FENCECHECK_K8S_BINS or $FENCECHECK_CACHE/k8s-bins/*.
func BinDir() (string, error) {
	if d := os.Getenv("FENCECHECK_K8S_BINS"); d != "" {
		return d, nil
	}
	cache := os.Getenv("FENCECHECK_CACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache", "fencecheck")
	}
	found, _ := filepath.Glob(filepath.Join(cache, "k8s-bins", "*", "kube-apiserver"))
	if len(found) == 0 {
		return "", fmt.Errorf("no kube-apiserver under %s/k8s-bins: run `bash scripts/k8s-bins.sh` (or set FENCECHECK_K8S_BINS)", cache)
	}
	sort.Slice(found, func(i, j int) bool { return mtime(found[i]).After(mtime(found[j])) })
	return filepath.Dir(found[0]), nil
}

func mtime(p string) time.Time {
	st, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// FreePort asks the kernel for an unused loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// API is a running etcd + kube-apiserver.
type API struct {
	Bins, Dir string
	EtcdURL   string
	Port      int
	Config    *rest.Config
	etcd, api *exec.Cmd
}

// Start runs etcd and kube-apiserver with their state and logs in dir.
func Start(dir string) (*API, error) {
	bins, err := BinDir()
	if err != nil {
		return nil, err
	}
	a := &API{Bins: bins, Dir: dir}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	a.Port = ports[2]
	a.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if a.etcd, err = a.start("etcd", "etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", a.EtcdURL,
		"--advertise-client-urls", a.EtcdURL, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer); err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	for name, b := range map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": []byte(Token + ",admin,admin,system:masters\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	a.Config = &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", a.Port), BearerToken: Token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := a.StartAPIServer(); err != nil {
		a.Stop()
		return nil, err
	}
	return a, nil
}

func (a *API) start(name, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(a.Dir, name+".log"))
	if err != nil {
		return nil, err
	}
	c := exec.Command(filepath.Join(a.Bins, bin), args...)
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return c, nil
}

// StartAPIServer (re)starts kube-apiserver on the same port and waits for
// /readyz.
func (a *API) StartAPIServer() error {
	var err error
	a.api, err = a.start("kube-apiserver", "kube-apiserver", "--etcd-servers", a.EtcdURL, "--cert-dir", filepath.Join(a.Dir, "certs"),
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(a.Port),
		"--service-account-key-file", filepath.Join(a.Dir, "sa.pub"), "--service-account-signing-key-file", filepath.Join(a.Dir, "sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--token-auth-file", filepath.Join(a.Dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow", "--endpoint-reconciler-type", "none", "--service-cluster-ip-range", "10.96.0.0/16")
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(a.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(b) == "ok" {
			return nil
		}
		time.Sleep(200 * time.Millisecond) // polling a process start-up, with a deadline
	}
	log, _ := os.ReadFile(filepath.Join(a.Dir, "kube-apiserver.log"))
	if len(log) > 2000 {
		log = log[len(log)-2000:]
	}
	return fmt.Errorf("kube-apiserver not ready in 90s; log tail:\n%s", log)
}

// StopAPIServer stops kube-apiserver (etcd keeps running).
func (a *API) StopAPIServer() {
	if a.api != nil && a.api.Process != nil {
		_ = a.api.Process.Signal(os.Interrupt)
		_ = a.api.Wait()
		a.api = nil
	}
}

// Compact compacts etcd up to its current revision.
func (a *API) Compact() (int64, error) {
	etcdctl := filepath.Join(a.Bins, "etcdctl")
	out, err := exec.Command(etcdctl, "--endpoints", a.EtcdURL, "endpoint", "status", "-w", "json").Output()
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
	if b, err := exec.Command(etcdctl, "--endpoints", a.EtcdURL, "compact", fmt.Sprint(rev)).CombinedOutput(); err != nil {
		return rev, fmt.Errorf("etcdctl compact %d: %w %s", rev, err, b)
	}
	return rev, nil
}

// Kubeconfig writes a kubeconfig for server (default: this apiserver).
func (a *API) Kubeconfig(path, server string) error {
	if server == "" {
		server = a.Config.Host
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
`, server, Token)
	return os.WriteFile(path, []byte(kc), 0o600)
}

// Stop kills both processes.
func (a *API) Stop() {
	for _, c := range []*exec.Cmd{a.api, a.etcd} {
		if c != nil && c.Process != nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}
