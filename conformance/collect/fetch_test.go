package collect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// proxied serves the apiserver's service proxy path for ns/http:sink:8080
// from the sink at url, as the apiserver does (status and body passed
// through), and counts the requests.
func proxied(t *testing.T, sinkURL string) (kubernetes.Interface, *atomic.Int64) {
	t.Helper()
	const prefix = "/api/v1/namespaces/ns/services/http:sink:8080/proxy"
	target, err := url.Parse(sinkURL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if !strings.HasPrefix(r.URL.EscapedPath(), prefix) {
			http.Error(w, "not a proxy path: "+r.URL.Path, http.StatusTeapot)
			return
		}
		r.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
		r.URL.RawPath = strings.TrimPrefix(r.URL.EscapedPath(), prefix)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL}), &n
}

// referenceSink starts the reference sink, wrapped by wrap, with a few
// records written.
func referenceSink(t *testing.T, wrap ...func(http.Handler) http.Handler) string {
	t.Helper()
	dir := t.TempDir()
	s := sinktest.StartWith(t, func(context.Context) (store.Store, error) { return boltstore.Open(dir) },
		func(st store.Store) (sink.Config, error) { return sink.Config{Store: st}, nil }, wrap...)
	c := &client.Client{BaseURL: s.URL}
	for _, k := range []string{"row-1", "row 2", "row-3", "a/b"} {
		if _, rep, err := c.Put(context.Background(), k, []byte("v"+k), 1, ""); err != nil || rep.Status != 200 {
			t.Fatalf("put %s: %+v %v", k, rep, err)
		}
	}
	return s.URL
}

// The final records come in one request from the reference sink, and
// key by key, in the keys' order, from a sink without the bulk read.
func TestSinkRecordsBulkAndFallback(t *testing.T) {
	keys := []string{"row-1", "never-written", "row 2", "row-3"}
	withBulk := referenceSink(t)
	kube, n := proxied(t, withBulk)
	recs, err := SinkRecords(context.Background(), kube, "ns", "sink", "8080", "", keys)
	if err != nil || len(recs) != 3 || recs[0].Key != "row-1" || recs[1].Key != "row 2" || recs[1].Value != "vrow 2" || recs[2].Key != "row-3" {
		t.Fatalf("bulk: %+v %v", recs, err)
	}
	if n.Load() != 1 {
		t.Errorf("bulk read took %d requests, want 1", n.Load())
	}
	noBulk := referenceSink(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == contract.PathRecordsBulk {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	kube, n = proxied(t, noBulk)
	again, err := SinkRecords(context.Background(), kube, "ns", "sink", "8080", "", keys)
	if err != nil || len(again) != 3 {
		t.Fatalf("key by key: %+v %v", again, err)
	}
	for i := range recs {
		if again[i] != recs[i] {
			t.Errorf("key by key %+v, bulk %+v", again[i], recs[i])
		}
	}
	if n.Load() != int64(1+len(keys)) {
		t.Errorf("fallback took %d requests, want 1 + %d", n.Load(), len(keys))
	}
	if _, err := SinkRecords(context.Background(), kube, "ns", "sink", "8080", "", []string{"a/b"}); err == nil || !strings.Contains(err.Error(), "bulk read can") {
		t.Errorf("a key with a / key by key: %v", err)
	}
	kube, _ = proxied(t, withBulk)
	if recs, err := SinkRecords(context.Background(), kube, "ns", "sink", "8080", "", []string{"a/b"}); err != nil || len(recs) != 1 || recs[0].Value != "va/b" {
		t.Errorf("a key with a / in bulk: %+v %v", recs, err)
	}
	if recs, err := SinkRecords(context.Background(), kube, "ns", "sink", "8080", "", nil); err != nil || len(recs) != 0 || recs == nil {
		t.Errorf("no keys: %#v %v", recs, err)
	}
}
