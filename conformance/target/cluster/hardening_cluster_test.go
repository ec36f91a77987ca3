//go:build cluster

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/contract"
	refsink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/leader"
)

// TestHardenedDeployment deploys a scenario namespace as the suite does
// (Pod Security restricted, the token Secret, the sink, the witness and two
// reconcilers) and tries the hostile inputs of issue 12 against it:
//   - the reconcilers commit through the witness with the writer token;
//   - an unauthenticated fence at 2^64-1 (and one with a wrong token) is
//     answered 401 and the floor is unchanged; the writer token cannot read
//     the history (403);
//   - 1,000 stale 1 MiB PUTs are all refused and the sink is still up, the
//     same pod, with its history (prefixes and hashes, under its budget);
//   - a pod violating "restricted" is refused by the apiserver;
//   - a SubjectAccessReview: the reconciler cannot update another Lease.
//
// Needs the kind cluster with the images loaded (scripts/images.sh
// reconciler sink witness); KUBECONFIG names it.
func TestHardenedDeployment(t *testing.T) {
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		t.Fatal("KUBECONFIG is not set")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 50, 100
	kube := kubernetes.NewForConfigOrDie(rc)
	res, err := resources.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(filepath.Join("..", "..", ".."))
	tgt := New(Options{Kube: kube, Res: res, Root: root, DeployTimeout: 3 * time.Minute, Logf: t.Logf})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	ns := fmt.Sprintf("fc-harden-%d", time.Now().Unix())
	dep, err := tgt.Open(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*deployment)
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	if err := d.Deploy(ctx, driver.Spec{Replicas: 2}); err != nil {
		t.Fatalf("deploy in a restricted namespace: %v", err)
	}
	sec, err := kube.CoreV1().Secrets(ns).Get(ctx, SinkTokenSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writer := string(sec.Data[SinkWriterTokenKey])

	proxy := func(method, path, token string, hdr map[string]string, body []byte) (int, []byte) {
		req := kube.CoreV1().RESTClient().Verb(method).Namespace(ns).Resource("services").
			Name(net.JoinSchemeNamePort("http", SinkService, SinkPort)).SubResource("proxy").Suffix(path)
		if token != "" {
			req = req.SetHeader(contract.HeaderToken, token)
		}
		for k, v := range hdr {
			req = req.SetHeader(k, v)
		}
		if body != nil {
			req = req.Body(body)
		}
		var code int
		r := req.Do(ctx).StatusCode(&code)
		raw, _ := r.Raw()
		return code, raw
	}
	history := func() []contract.Attempt {
		h, _, err := collect.SinkHistory(ctx, kube, ns, SinkService, SinkPort, d.adminToken)
		if err != nil {
			t.Fatalf("history with the admin token: %v", err)
		}
		return h
	}
	floor := func() uint64 {
		code, raw := proxy("GET", contract.PathFence, d.adminToken, nil, nil)
		var fr contract.FenceResponse
		if code != http.StatusOK || json.Unmarshal(raw, &fr) != nil {
			t.Fatalf("GET /v1/fence: %d %s", code, raw)
		}
		return fr.HighestEpoch
	}

	// The reconcilers write with the writer token, through the witness.
	err = wait.Poll(ctx, 2*time.Minute, "a reconciler commit in the sink's history", func(context.Context) (bool, error) {
		for _, a := range history() {
			if a.Committed() {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v: the reconcilers' writer token is not accepted?", err)
	}

	// No token, a wrong token: 401, and the floor stays.
	before := floor()
	maxFence := map[string]string{contract.HeaderEpoch: "18446744073709551615"}
	for _, tok := range []string{"", "not-the-token"} {
		if code, raw := proxy("POST", contract.PathFence, tok, maxFence, nil); code != http.StatusUnauthorized {
			t.Fatalf("fence at 2^64-1 with token %q: %d %s, want 401", tok, code, raw)
		}
	}
	if after := floor(); after != before || after == 1<<64-1 {
		t.Fatalf("floor %d before, %d after the refused fences", before, after)
	}
	t.Logf("unauthenticated fence at 2^64-1: 401, floor %d before and after", before)
	if code, _ := proxy("GET", contract.PathHistory, writer, nil, nil); code != http.StatusForbidden {
		t.Fatalf("history with the writer token: %d, want 403", code)
	}

	// 1,000 stale 1 MiB PUTs, all refused; the sink survives them.
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: SinkSelector})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("sink pods: %v %d", err, len(pods.Items))
	}
	sinkPod := pods.Items[0].Name
	stale := map[string]string{contract.HeaderEpoch: "0", "Content-Type": "application/octet-stream"}
	value := bytes.Repeat([]byte("x"), contract.MaxValueBytes)
	var refused, other atomic.Int64
	var mu sync.Mutex
	var odd []string
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				code, raw := proxy("PUT", contract.RecordPath(fmt.Sprintf("flood-%04d", i)), writer, stale, value)
				if code == http.StatusConflict {
					refused.Add(1)
					continue
				}
				other.Add(1)
				mu.Lock()
				if len(odd) < 5 {
					odd = append(odd, fmt.Sprintf("%d %.200s", code, raw))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 1000 {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("1000 stale 1 MiB PUTs in %v: %d refused 409, %d other %v", time.Since(start).Round(time.Millisecond), refused.Load(), other.Load(), odd)
	if refused.Load() != 1000 {
		t.Fatalf("%d of 1000 stale PUTs refused with 409; others: %v", refused.Load(), odd)
	}
	p, err := kube.CoreV1().Pods(ns).Get(ctx, sinkPod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sink pod %s is gone: %v", sinkPod, err)
	}
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 || !p.Status.ContainerStatuses[0].Ready {
		t.Fatalf("the sink restarted %d times (ready %v): %+v", n, p.Status.ContainerStatuses[0].Ready, p.Status.ContainerStatuses[0].LastTerminationState)
	}
	flood, hashed := 0, 0
	for _, a := range history() {
		if strings.HasPrefix(a.Key, "flood-") {
			flood++
			if a.ValueLen == contract.MaxValueBytes && len(a.Value) <= contract.MaxAttemptValuePrefix && a.ValueSHA256 != "" {
				hashed++
			}
		}
	}
	if flood != 1000 || hashed != 1000 {
		t.Fatalf("history: %d flood attempts, %d kept as prefix and hash; want 1000 and 1000", flood, hashed)
	}
	code, raw := proxy("GET", "/metrics", d.adminToken, nil, nil)
	if code != http.StatusOK {
		t.Fatalf("metrics with the admin token: %d", code)
	}
	rss, hist := metric(raw, "process_resident_memory_bytes"), metric(raw, "fencecheck_sink_history_bytes")
	t.Logf("after the flood: sink %s up, restarts 0, RSS %.1f MiB, history %.0f KiB (%d flood attempts kept as 1 KiB prefix + SHA-256)", sinkPod, rss/(1<<20), hist/1024, flood)
	if hist > refsink.DefaultHistoryBytes {
		t.Fatalf("history %.0f bytes over its budget", hist)
	}

	// A pod that "restricted" does not admit is refused in the namespace.
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root-net-admin"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "fencecheck/sink:dev", ImagePullPolicy: corev1.PullNever,
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
	}}}}
	_, err = kube.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a root pod with NET_ADMIN in %s: %v, want refused by PodSecurity restricted", ns, err)
	}
	t.Logf("refused: %v", err)

	// The reconciler may update its own Lease, and no other.
	can := func(verb, name string) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ns + ":fencecheck-reconciler",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: "coordination.k8s.io", Resource: "leases",
				Verb: verb, Name: name}}}
		r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if !can("update", leader.LeaseName) || !can("get", leader.LeaseName) {
		t.Fatalf("the reconciler cannot get/update its own Lease %s", leader.LeaseName)
	}
	for _, verb := range []string{"update", "get", "delete"} {
		if can(verb, "another-lease") {
			t.Fatalf("the reconciler may %s leases/another-lease", verb)
		}
	}
	t.Logf("SubjectAccessReview: update/get leases/%s allowed, update/get/delete leases/another-lease denied", leader.LeaseName)
}

// metric reads one unlabelled sample from a Prometheus text exposition.
func metric(text []byte, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
