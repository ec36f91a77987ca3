//go:build integration

package collect

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// binDir finds kube-apiserver and etcd built by scripts/k8s-bins.sh.
func binDir(t *testing.T) string {
	if d := os.Getenv("FENCECHECK_K8S_BINS"); d != "" {
		return d
	}
	cache := os.Getenv("FENCECHECK_CACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache", "fencecheck")
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "k8s-bins", "*", "kube-apiserver"))
	if len(dirs) == 0 {
		t.Fatalf("no kube-apiserver under %s/k8s-bins: run `bash scripts/k8s-bins.sh` (or set FENCECHECK_K8S_BINS)", cache)
	}
	sort.Slice(dirs, func(i, j int) bool { return modTime(dirs[i]).After(modTime(dirs[j])) })
	return filepath.Dir(dirs[0])
}

func modTime(p string) time.Time {
	st, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// localAPI is etcd and kube-apiserver as local processes.
type localAPI struct {
	t         *testing.T
	bins, dir string
	etcdURL   string
	apiPort   int
	etcd, api *exec.Cmd
	cfg       *rest.Config
}

func startLocalAPI(t *testing.T) *localAPI {
	a := &localAPI{t: t, bins: binDir(t), dir: t.TempDir(), apiPort: freePort(t)}
	cp, pp := freePort(t), freePort(t)
	a.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", cp)
	a.etcd = a.start("etcd", filepath.Join(a.bins, "etcd"), "--data-dir", filepath.Join(a.dir, "etcd"),
		"--listen-client-urls", a.etcdURL, "--advertise-client-urls", a.etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pp), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pp),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", pp))
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	write := func(name string, b []byte) string {
		p := filepath.Join(a.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	write("tokens.csv", []byte("fencecheck-token,admin,admin,system:masters\n"))
	a.startAPI()
	a.cfg = &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", a.apiPort), BearerToken: "fencecheck-token",
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	t.Cleanup(func() {
		for _, c := range []*exec.Cmd{a.api, a.etcd} {
			if c != nil && c.Process != nil {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}
	})
	return a
}

func (a *localAPI) start(name, bin string, args ...string) *exec.Cmd {
	logf, err := os.Create(filepath.Join(a.dir, name+".log"))
	if err != nil {
		a.t.Fatal(err)
	}
	c := exec.Command(bin, args...)
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		a.t.Fatalf("start %s: %v", name, err)
	}
	return c
}

func (a *localAPI) startAPI() {
	a.api = a.start("kube-apiserver", filepath.Join(a.bins, "kube-apiserver"),
		"--etcd-servers", a.etcdURL, "--cert-dir", filepath.Join(a.dir, "certs"),
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(a.apiPort),
		"--service-account-key-file", filepath.Join(a.dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(a.dir, "sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--token-auth-file", filepath.Join(a.dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow", "--endpoint-reconciler-type", "none",
		"--service-cluster-ip-range", "10.96.0.0/16")
	a.waitReady()
}

func (a *localAPI) waitReady() {
	deadline := time.Now().Add(60 * time.Second)
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", a.apiPort), BearerToken: "fencecheck-token", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cs := kubernetes.NewForConfigOrDie(cfg)
	for time.Now().Before(deadline) {
		if b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background()); err == nil && string(b) == "ok" {
			return
		}
		time.Sleep(200 * time.Millisecond) // polling a process start-up with a deadline
	}
	log, _ := os.ReadFile(filepath.Join(a.dir, "kube-apiserver.log"))
	a.t.Fatalf("kube-apiserver not ready in 60s; log tail:\n%s", tail(string(log), 2000))
}

func (a *localAPI) stopAPI() {
	_ = a.api.Process.Signal(os.Interrupt)
	_ = a.api.Wait()
}

// compact compacts etcd up to its current revision.
func (a *localAPI) compact(t *testing.T) {
	etcdctl := filepath.Join(a.bins, "etcdctl")
	out, err := exec.Command(etcdctl, "--endpoints", a.etcdURL, "endpoint", "status", "-w", "json").Output()
	if err != nil {
		t.Fatalf("etcdctl endpoint status: %v", err)
	}
	var st []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
		} `json:"Status"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st) == 0 {
		t.Fatalf("etcdctl status %s: %v", out, err)
	}
	rev := st[0].Status.Header.Revision
	if b, err := exec.Command(etcdctl, "--endpoints", a.etcdURL, "compact", fmt.Sprint(rev)).CombinedOutput(); err != nil {
		t.Fatalf("etcdctl compact %d: %v %s", rev, err, b)
	}
	t.Logf("compacted etcd at revision %d", rev)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func holder(s string) *string { return &s }

// Against a real apiserver: every version is recorded in order; a watch
// that cannot resume (its resourceVersion is compacted away while the
// apiserver is down) records a 410 gap and relists; updates after the gap
// are recorded again.
func TestLeaseWatcherRealAPIServer(t *testing.T) {
	a := startLocalAPI(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(a.cfg)
	leases := cs.CoordinationV1().Leases("default")
	l, err := leases.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fc", Annotations: map[string]string{ann: "1"}},
		Spec: coordv1.LeaseSpec{HolderIdentity: holder("a_00000001")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := WatchLease(ctx, cs, "default", "fc", ann, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	update := func(h, term string) {
		t.Helper()
		cur, err := leases.Get(ctx, "fc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewMicroTime(time.Now())
		cur.Spec.HolderIdentity, cur.Annotations[ann], cur.Spec.RenewTime = holder(h), term, &now
		if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitN := func(n int) []history.LeaseRecord {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := lw.WaitFor(c, fmt.Sprintf("%d records", n), func(rs []history.LeaseRecord) bool { return len(rs) >= n }); err != nil {
			t.Fatalf("%v: %+v", err, lw.Snapshot())
		}
		return lw.Snapshot().Records
	}
	update("a_00000001", "1")
	update("c_00000003", "2")
	rs := waitN(3)
	if rs[0].Event != "LIST" || rs[0].ResourceVersion != l.ResourceVersion || rs[2].Holder != "c_00000003" || rs[2].Term != 2 {
		t.Fatalf("records %+v", rs)
	}
	// Other writes move etcd's revision past the watch's resourceVersion.
	for i := 0; i < 3; i++ {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "bump-"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.stopAPI()
	a.compact(t)
	a.startAPI()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(lw.Snapshot().Gaps) == 0 && c.Err() == nil {
		pause(c, 50*time.Millisecond)
	}
	update("b_00000002", "3")
	rs = waitN(5)
	w := lw.Stop()
	if len(w.Gaps) != 1 || !strings.Contains(w.Gaps[0].Reason, "410") {
		t.Fatalf("want one 410 gap, got %+v", w.Gaps)
	}
	var events []string
	for _, r := range rs {
		events = append(events, r.Event+":"+r.Holder)
	}
	want := "LIST:a_00000001 MODIFIED:a_00000001 MODIFIED:c_00000003 LIST:c_00000003 MODIFIED:b_00000002"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("records\n got %s\nwant %s", got, want)
	}
	t.Logf("gap %s .. %s: %s", w.Gaps[0].From.Format(time.RFC3339Nano), w.Gaps[0].To.Format(time.RFC3339Nano), w.Gaps[0].Reason)
}
