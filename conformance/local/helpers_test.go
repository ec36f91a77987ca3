//go:build integration

package local

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newSlowProxy forwards HTTP to target, delaying every request.
func newSlowProxy(target string, delay time.Duration) (*httptest.Server, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay): // the simulated network latency
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	})), nil
}

var createOpts = metav1.CreateOptions{}

func nsObj(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
