package witness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// rig is a witness in front of upstream, with its completed operations
// delivered on a channel so tests wait on them instead of sleeping.
type rig struct {
	wt   *Witness
	url  string // the proxied listener
	done chan record.Operation
}

func startRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	wt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{wt: wt, done: make(chan record.Operation, 100)}
	wt.completed = func(op record.Operation) { r.done <- op }
	srv := httptest.NewServer(wt)
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *rig) next(t *testing.T) record.Operation {
	t.Helper()
	select {
	case op := <-r.done:
		return op
	case <-time.After(10 * time.Second):
		t.Fatal("no operation completed within 10s")
		return record.Operation{}
	}
}

func addrOf(url string) string { return strings.TrimPrefix(url, "http://") }

// exchange sends a raw request on a new connection and returns every byte
// of the answer (the request asks the server to close).
func exchange(t *testing.T, addr, request string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	return b
}

// sameAnswer: the same status line, the same header lines and the same
// body bytes. Only the order of header lines may differ: Go's server writes
// a Content-Length it computed after the others, one it was given in order.
func sameAnswer(a, b []byte) bool {
	ha, bodyA, okA := bytes.Cut(a, []byte("\r\n\r\n"))
	hb, bodyB, okB := bytes.Cut(b, []byte("\r\n\r\n"))
	la, lb := strings.Split(string(ha), "\r\n"), strings.Split(string(hb), "\r\n")
	slices.Sort(la[1:])
	slices.Sort(lb[1:])
	return okA && okB && slices.Equal(la, lb) && bytes.Equal(bodyA, bodyB)
}

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// seen is one request as the upstream received it.
type seen struct {
	method, path, query, host, body string
	header                          http.Header
}

func TestForwardsUnchanged(t *testing.T) {
	got := make(chan seen, 1)
	answer := "\x00\xffnot json, not utf-8\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Host, string(b), r.Header.Clone()}
		h := w.Header()
		h.Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT") // fixed, so two answers can be byte-compared
		h["X-Multi"] = []string{"one", "two"}
		h.Set("Content-Type", "application/octet-stream")
		w.WriteHeader(201)
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL})

	const value = "value-\x01-bytes"
	request := "PUT /v1/records/a%2Fb%20c?x=1&y=%20 HTTP/1.1\r\nHost: witness.ns:8080\r\n" +
		"x-camel-leader-epoch: 42\r\nIdempotency-Key: term-42-000001\r\nX-Custom: kept\r\nX-Custom: twice\r\n" +
		"User-Agent: fencecheck-test\r\nContent-Length: " + strconv.Itoa(len(value)) + "\r\nConnection: close\r\n\r\n" + value

	direct := exchange(t, addrOf(up.URL), request)
	<-got
	via := exchange(t, addrOf(r.url), request)
	if !sameAnswer(via, direct) {
		t.Errorf("answer through the witness differs from the upstream's:\n--- via witness\n%q\n--- direct\n%q", via, direct)
	}
	s := <-got
	want := seen{"PUT", "/v1/records/a%2Fb%20c", "x=1&y=%20", "witness.ns:8080", value, nil}
	if s.method != want.method || s.path != want.path || s.query != want.query || s.host != want.host || s.body != want.body {
		t.Errorf("upstream saw %+v, want %+v", s, want)
	}
	for k, v := range map[string][]string{
		"X-Camel-Leader-Epoch": {"42"}, "Idempotency-Key": {"term-42-000001"},
		"X-Custom": {"kept", "twice"}, "User-Agent": {"fencecheck-test"},
	} {
		if strings.Join(s.header[k], "|") != strings.Join(v, "|") {
			t.Errorf("upstream saw %s = %q, want %q", k, s.header[k], v)
		}
	}
	for _, k := range []string{"Connection", "X-Forwarded-For", "Accept-Encoding"} {
		if v, ok := s.header[k]; ok {
			t.Errorf("upstream saw %s: %q; the witness must add nothing", k, v)
		}
	}

	op := r.next(t)
	wantOp := record.Operation{
		ID: 1, Source: op.Source, Invoked: op.Invoked, Completed: op.Completed,
		Method: "PUT", Path: "/v1/records/a%2Fb%20c?x=1&y=%20", Key: "a/b c",
		EpochHeader: "42", Epoch: 42, IdempotencyKey: "term-42-000001",
		ValueLen: int64(len(value)), ValueSHA256: sha(value),
		Type: record.OK, Status: 201, AnswerLen: int64(len(answer)),
		ForeignPeer: addrOf(up.URL), // it sends no Sink-Instance-Id
	}
	if op != wantOp {
		t.Errorf("op =\n%+v\nwant\n%+v", op, wantOp)
	}
	if host, _, err := net.SplitHostPort(op.Source); err != nil || host != "127.0.0.1" {
		t.Errorf("source %q: want the client's TCP address 127.0.0.1:port", op.Source)
	}
	if op.Completed.Before(op.Invoked) {
		t.Errorf("completed %v before invoked %v", op.Completed, op.Invoked)
	}
}

func TestRedirectPassedThroughNotFollowed(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/v1/records/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL})
	req, _ := http.NewRequest("PUT", r.url+"/v1/records/k", strings.NewReader("v"))
	resp, err := http.DefaultTransport.RoundTrip(req) // a Transport never follows
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 307 || resp.Header.Get("Location") != "/v1/records/elsewhere" {
		t.Errorf("got %d Location %q, want the upstream's 307 to /v1/records/elsewhere", resp.StatusCode, resp.Header.Get("Location"))
	}
	op := r.next(t)
	if op.Type != record.Fail || op.Status != 307 {
		t.Errorf("op type %s status %d, want fail 307", op.Type, op.Status)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("upstream hit %d times, want 1 (the witness must not follow)", n)
	}
}

func TestUpstreamHangsIsInfoAfterTimeout(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets up.Close finish
	r := startRig(t, Config{Upstream: up.URL, Timeout: 200 * time.Millisecond})
	resp, err := http.Post(r.url+contract.PathFence, "", nil)
	if err == nil {
		resp.Body.Close()
		t.Errorf("client got %d; want its connection broken, as a hung upstream gives no answer", resp.StatusCode)
	}
	op := r.next(t)
	if op.Type != record.Info || op.Status != 0 || !strings.Contains(op.Error, "upstream timeout after 200ms") {
		t.Errorf("op = %+v, want info with an upstream timeout", op)
	}
	if d := op.Completed.Sub(op.Invoked); d < 200*time.Millisecond {
		t.Errorf("completed after %s, before the 200ms timeout", d)
	}
}

// closingUpstream answers the first request it reads and then, for every
// later one, reads it and closes the connection without a word.
func closingUpstream(t *testing.T) (url string, requests *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if requests.Add(1) > 1 {
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), requests
}

// The second request goes out on the reused connection, which the upstream
// then closes: the witness records info and never sends it again (Go's
// Transport would, on a fresh connection, for a GET or a bodiless request
// with an Idempotency-Key).
func TestUpstreamClosesConnectionIsInfoNotRetried(t *testing.T) {
	for _, c := range []struct {
		name, method, body string
		idem               bool
	}{
		{"get", "GET", "", false},
		{"bodiless put with idempotency key", "PUT", "", true},
		{"put", "PUT", "value", true},
		{"fence", "POST", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up, requests := closingUpstream(t)
			r := startRig(t, Config{Upstream: up})
			client := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(client.CloseIdleConnections)
			send := func() (int, error) {
				req, _ := http.NewRequest(c.method, r.url+"/v1/records/k", strings.NewReader(c.body))
				if c.body == "" {
					req.Body, req.ContentLength = http.NoBody, 0
				}
				if c.idem {
					req.Header.Set(contract.HeaderIdempotencyKey, "k-1")
				}
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			if st, err := send(); err != nil || st != 200 {
				t.Fatalf("first request: %d %v", st, err)
			}
			if op := r.next(t); op.Type != record.OK {
				t.Fatalf("first op %+v, want ok", op)
			}
			if st, err := send(); err == nil {
				t.Errorf("second request answered %d; want the client's connection broken", st)
			}
			op := r.next(t)
			if op.Type != record.Info || !strings.HasPrefix(op.Error, "upstream: no answer") {
				t.Errorf("second op = %+v, want info: upstream: no answer", op)
			}
			if n := requests.Load(); n != 2 {
				t.Errorf("upstream read %d requests, want 2: the witness re-sent one", n)
			}
		})
	}
}

func TestClientDisconnectsMidRequest(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		w.Write([]byte(`{"result":"OK"}`))
	}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL})
	c, err := net.Dial("tcp", addrOf(r.url))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "PUT /v1/records/k HTTP/1.1\r\nHost: w\r\nx-camel-leader-epoch: 3\r\nContent-Length: 100\r\n\r\n0123456789")
	c.Close() // 90 bytes short
	op := r.next(t)
	if op.Type != record.Info || !strings.Contains(op.Error, "client went away") {
		t.Errorf("op = %+v, want info: client went away", op)
	}
	if !op.ValuePartial || op.ValueLen > 10 {
		t.Errorf("value len %d partial %v, want at most the 10 bytes sent, partial", op.ValueLen, op.ValuePartial)
	}
}

func TestInFlightListedAsInvoke(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Write([]byte(`{"result":"OK","highest_epoch":9}`))
	}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL})
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", r.url+contract.PathFence, nil)
		req.Header.Set(contract.HeaderEpoch, "9")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the upstream")
	}
	h := r.wt.History()
	if len(h.Operations) != 1 || h.Operations[0].Type != record.Invoke || !h.Operations[0].Completed.IsZero() || h.Operations[0].Epoch != 9 {
		t.Errorf("while in flight: %+v, want one invoke with epoch 9 and no completion", h.Operations)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if op := r.next(t); op.Type != record.OK || op.HighestEpoch != 9 || op.Result != contract.ResultOK {
		t.Errorf("after the answer: %+v, want ok with highest epoch 9", op)
	}
	if h := r.wt.History(); h.Operations[0].Type != record.OK {
		t.Errorf("history after completion: %+v", h.Operations[0])
	}
}

func TestMaxOpsCountsDropped(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL, MaxOps: 2})
	for i := 0; i < 3; i++ {
		resp, err := http.Get(r.url + "/v1/fence")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		r.next(t)
	}
	admin := httptest.NewServer(r.wt.Admin())
	t.Cleanup(admin.Close)
	resp, err := http.Get(admin.URL + record.PathHistory)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h record.History
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if len(h.Operations) != 2 || h.Dropped != 1 || h.Instance == "" || h.Started.IsZero() {
		t.Errorf("history: %d ops, dropped %d, instance %q, started %v; want 2, 1, an id, a time", len(h.Operations), h.Dropped, h.Instance, h.Started)
	}
	m := get(t, admin.URL+"/metrics")
	for _, line := range []string{`fencecheck_witness_operations_total{type="ok"} 3`, "fencecheck_witness_dropped_operations_total 1", "fencecheck_witness_operation_seconds_count 3"} {
		if !strings.Contains(m, line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	if body := get(t, admin.URL+"/healthz"); body != "ok\n" {
		t.Errorf("healthz = %q", body)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Upstream: ""},
		{Upstream: "sink:8080"},
		{Upstream: "ftp://sink"},
		{Upstream: "http://"},
		{Upstream: "http://sink:8080/v1"},
		{Upstream: "http://sink:8080?x=1"},
		{Upstream: "http://u:p@sink:8080"},
		{Upstream: "http://sink:8080", MaxOps: -1},
		{Upstream: "http://sink:8080", Timeout: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := New(Config{Upstream: "http://sink:8080/"}); err != nil {
		t.Errorf("a trailing slash: %v", err)
	}
}

// A dial that fails sent nothing: a definite fail, not info.
func TestUpstreamUnreachableIsFail(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := startRig(t, Config{Upstream: "http://" + addr})
	if resp, err := http.Post(r.url+contract.PathFence, "", nil); err == nil {
		resp.Body.Close()
		t.Errorf("client got %d, want its connection broken", resp.StatusCode)
	}
	if op := r.next(t); op.Type != record.Fail || !strings.Contains(op.Error, "connection refused") {
		t.Errorf("op = %+v, want fail: connection refused", op)
	}
}

// TestForeignAnswerClosesItsConnection: an answer without the sink's
// Sink-Instance-Id is not the sink's, so the connection it came on is not
// kept for the next request (on kind an empty 404 came back on every
// request of one kept-alive connection for two minutes); the sink's own
// answers keep theirs.
func TestForeignAnswerClosesItsConnection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instance  string
		nemesis   NemesisConfig // LoseEvery sends a PUT through sendBuffered
		wantConns int
	}{
		{"not the sink's answer", "", NemesisConfig{}, 3},
		{"the sink's answer", "abc", NemesisConfig{}, 1},
		{"not the sink's answer, buffered", "", NemesisConfig{LoseEvery: 1000}, 3},
		{"the sink's answer, buffered", "abc", NemesisConfig{LoseEvery: 1000}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			conns := map[string]bool{}
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				conns[r.RemoteAddr] = true
				mu.Unlock()
				if tc.instance != "" {
					w.Header().Set(contract.HeaderInstanceID, tc.instance)
				}
				w.WriteHeader(http.StatusNotFound)
			}))
			t.Cleanup(up.Close)
			r := startRig(t, Config{Upstream: up.URL, Nemesis: tc.nemesis})
			for range 3 {
				req, _ := http.NewRequest(http.MethodPost, r.url+contract.PathFence, nil)
				if tc.nemesis.LoseEvery > 0 {
					req, _ = http.NewRequest(http.MethodPut, r.url+contract.PathRecords+"k", strings.NewReader("v"))
				}
				req.Header.Set(contract.HeaderEpoch, "1")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				op := r.next(t)
				if op.Status != http.StatusNotFound || op.SinkInstance != tc.instance {
					t.Fatalf("op = %+v, want the 404 recorded with instance %q", op, tc.instance)
				}
				if foreign := tc.instance == ""; (op.ForeignPeer == addrOf(up.URL)) != foreign || (op.ForeignPeer == "") == foreign {
					t.Fatalf("foreign peer %q, want the upstream's address only for an answer without an instance", op.ForeignPeer)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(conns) != tc.wantConns {
				t.Errorf("the upstream saw %d connections for 3 requests, want %d", len(conns), tc.wantConns)
			}
		})
	}
}
