package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeAPIServer serves /version and requires the bearer token.
func fakeAPIServer(t *testing.T, status int) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"gitVersion":"v1.34.4"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// targetFor writes a fake service account dir and builds the target the way a pod does.
func targetFor(t *testing.T, srv *httptest.Server) apiserverTarget {
	t.Helper()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
	tg, err := inClusterTarget(func(k string) string { return env[k] }, dir)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func pingServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(pingHandler(pingReply{Pod: "p-1", IP: "10.244.1.5"}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCheckPasses(t *testing.T) {
	tg := targetFor(t, fakeAPIServer(t, 200))
	var out bytes.Buffer
	if code := doCheck(&tg, pingServer(t).URL+"/ping", 2*time.Second, &out); code != 0 {
		t.Fatalf("exit %d, output:\n%s", code, &out)
	}
	if !strings.Contains(out.String(), "version v1.34.4") || !strings.Contains(out.String(), `"pod":"p-1"`) {
		t.Errorf("output lacks results:\n%s", &out)
	}
}

// --wait: a check that fails at first passes once its target comes up, and
// one that keeps failing fails when the wait is over, not sooner or never.
func TestCheckUntil(t *testing.T) {
	defer func(d time.Duration) { retryEvery = d }(retryEvery)
	retryEvery = 10 * time.Millisecond
	tries := 0
	failTwice := func(w io.Writer) int {
		if tries++; tries <= 2 {
			fmt.Fprintln(w, "FAIL url: connection refused")
			return 1
		}
		fmt.Fprintln(w, "OK url")
		return 0
	}
	var out bytes.Buffer
	if code := checkUntil(5*time.Second, &out, failTwice); code != 0 || tries != 3 || strings.Count(out.String(), "FAIL") != 2 || !strings.HasSuffix(out.String(), "OK url\n") {
		t.Errorf("failing twice then passing: exit %d after %d tries; output:\n%s", code, tries, &out)
	}
	start := time.Now()
	tries, out = 0, bytes.Buffer{}
	always := func(w io.Writer) int { tries++; fmt.Fprintln(w, "FAIL url"); return 1 }
	if code := checkUntil(200*time.Millisecond, &out, always); code != 1 || tries < 2 || time.Since(start) < 150*time.Millisecond {
		t.Errorf("always failing: exit %d after %d tries in %s; want exit 1 after the wait", code, tries, time.Since(start))
	}
	tries = 0
	if code := checkUntil(0, &out, always); code != 1 || tries != 1 {
		t.Errorf("without --wait: exit %d after %d tries, want one try", code, tries)
	}
}

func TestCheckFailures(t *testing.T) {
	ping := pingServer(t).URL + "/ping"
	bad := targetFor(t, fakeAPIServer(t, 500))
	good := targetFor(t, fakeAPIServer(t, 200))
	wrongCA := good
	wrongCA.TLS = &tls.Config{} // system roots: must reject the test cert
	noToken := good
	noToken.Token = ""
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cases := map[string]struct {
		tg  *apiserverTarget
		url string
	}{
		"apiserver 500":    {&bad, ping},
		"apiserver bad CA": {&wrongCA, ping},
		"apiserver 403":    {&noToken, ping},
		"url 404":          {&good, pingServer(t).URL + "/nope"},
		"url refused":      {nil, closedURL + "/ping"},
	}
	for name, c := range cases {
		var out bytes.Buffer
		if code := doCheck(c.tg, c.url, 2*time.Second, &out); code == 0 || !strings.Contains(out.String(), "FAIL") {
			t.Errorf("%s: exit %d, want failure; output:\n%s", name, code, &out)
		}
	}
}

func TestInClusterTargetOutsidePod(t *testing.T) {
	if _, err := inClusterTarget(func(string) string { return "" }, t.TempDir()); err == nil {
		t.Fatal("want error without KUBERNETES_SERVICE_HOST")
	}
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	if _, err := inClusterTarget(func(k string) string { return env[k] }, t.TempDir()); err == nil {
		t.Fatal("want error without a token")
	}
}

func TestRecorderStateChanges(t *testing.T) {
	r := newRecorder()
	now := time.Unix(100, 0)
	steps := []struct {
		target  string
		err     error
		changed bool
	}{
		{"apiserver", nil, true},
		{"apiserver", nil, false},
		{"url", nil, true},
		{"apiserver", errors.New("no route to host"), true},
		{"apiserver", errors.New("no route to host"), false},
		{"url", nil, false},
		{"apiserver", nil, true},
	}
	for i, s := range steps {
		line, changed := r.record(s.target, s.err, now.Add(time.Duration(i)*time.Second))
		if changed != s.changed {
			t.Fatalf("step %d (%s %v): changed=%v want %v", i, s.target, s.err, changed, s.changed)
		}
		if changed && s.err != nil && !strings.Contains(line, "fail: no route to host") {
			t.Errorf("step %d: line %q", i, line)
		}
	}
	st := r.snapshot()
	if st.APIServerOK != 3 || st.APIServerFail != 2 || st.URLOK != 2 || st.URLFail != 0 {
		t.Errorf("counters = %+v", st)
	}
	if st.LastAPIServerError != "no route to host" || !st.LastAPIServerFail.Equal(now.Add(4*time.Second)) {
		t.Errorf("last fail = %q at %v", st.LastAPIServerError, st.LastAPIServerFail)
	}
	// The JSON field names are an interface the chaos tests read.
	rec := httptest.NewRecorder()
	r.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/stats", nil))
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"apiserver_ok", "apiserver_fail", "url_ok", "url_fail", "last_apiserver_error", "last_apiserver_fail", "last_url_ok"} {
		if _, ok := m[k]; !ok {
			t.Errorf("stats JSON lacks %q: %s", k, rec.Body)
		}
	}
}

func TestPollerCountsRealTraffic(t *testing.T) {
	tg := targetFor(t, fakeAPIServer(t, 200))
	p := &poller{interval: time.Millisecond, apiClient: tg.keptOpenClient(time.Second), target: tg,
		urlClient: newConnClient(time.Second), url: "http://127.0.0.1:1/unreachable", rec: newRecorder(), out: &bytes.Buffer{}}
	p.once()
	p.once()
	st := p.rec.snapshot()
	if st.APIServerOK != 2 || st.URLFail != 2 || st.URLOK != 0 || st.LastURLError == "" {
		t.Errorf("stats = %+v", st)
	}
}

func TestCLIRejectsBadUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"bogus"}, {"check"}, {"check", "--nope"}, {"poll"}, {"serve", "extra"}} {
		var o, e bytes.Buffer
		if code := run(args, &o, &e); code == 0 {
			t.Errorf("run(%q) = 0, want non-zero", args)
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"--help"}, &o, &e); code != 0 || !strings.Contains(o.String(), "poll") {
		t.Errorf("--help: code %d, out %q", code, o.String())
	}
}
