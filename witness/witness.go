// Package witness is the harness's own evidence of what the sink was asked
// and answered: an HTTP reverse proxy in front of the sink that forwards
// every request and answer unchanged and records each exchange as an
// operation of a Jepsen-style client history (package witness/record).
// The sink is the component under test; the witness is not.
package witness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Defaults of Config.
const (
	DefaultMaxOps  = 200_000
	DefaultTimeout = 10 * time.Second
)

// Config assembles a witness.
type Config struct {
	// Upstream is the sink's base URL, e.g. http://sink:8080 (no path).
	Upstream string
	// MaxOps caps the operations kept (default DefaultMaxOps).
	MaxOps int
	// Timeout bounds one upstream exchange, answer body included
	// (default DefaultTimeout).
	Timeout time.Duration
	// Transport reaches the upstream; nil means NewTransport().
	Transport http.RoundTripper
	// Nemesis are the faults the witness injects (none by default).
	Nemesis NemesisConfig
}

// Witness is the proxy (ServeHTTP) and its history (History, Admin).
type Witness struct {
	up       *url.URL
	timeout  time.Duration
	rt       http.RoundTripper
	log      *opLog
	met      *metrics
	nem      *nemesis // nil: no faults, every request is forwarded as is
	instance string
	started  time.Time
	// gate, while closed, refuses client requests (the sink-crash nemesis).
	gate gate
	// completed, if set, sees every finished operation (tests wait on it).
	completed func(record.Operation)
}

// New checks cfg and builds a witness.
func New(cfg Config) (*Witness, error) {
	up, err := ParseUpstream(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxOps < 0:
		return nil, fmt.Errorf("witness: max ops must be positive, got %d", cfg.MaxOps)
	case cfg.MaxOps == 0:
		cfg.MaxOps = DefaultMaxOps
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("witness: timeout must be positive, got %s", cfg.Timeout)
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Transport == nil {
		cfg.Transport = NewTransport()
	}
	if err := cfg.Nemesis.Validate(); err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	wt := &Witness{
		up: up, timeout: cfg.Timeout, rt: cfg.Transport,
		log: newOpLog(cfg.MaxOps), met: newMetrics(),
		instance: hex.EncodeToString(id), started: time.Now(),
	}
	if cfg.Nemesis.On() {
		wt.nem = newNemesis(cfg.Nemesis)
	}
	return wt, nil
}

// ParseUpstream checks an upstream base URL: http or https, a host, no
// path, query or credentials (requests keep their own path and query).
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("witness: upstream %q: %w", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("witness: upstream %q: scheme must be http or https", s)
	case u.Host == "":
		return nil, fmt.Errorf("witness: upstream %q: no host", s)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("witness: upstream %q: only scheme://host[:port], no path, query or credentials", s)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// NewTransport is the upstream transport: no environment proxy, no gzip
// it did not ask for (answers pass through as the sink sent them), enough
// idle connections for every replica's writer.
func NewTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// ServeHTTP forwards r and records the exchange.
func (wt *Witness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if wt.refused(r) {
		panic(http.ErrAbortHandler)
	}
	tap := newBodyTap(r.Body)
	op, slot := wt.log.invoke(requestOp(r), time.Now())
	wt.met.inFlight.Inc()
	var a answer
	if wt.nem != nil {
		a = wt.nem.serve(wt, w, r, tap, &op)
	} else {
		a = wt.forward(w, r, tap)
	}
	op = finish(op, tap.value(), a)
	op.Completed = time.Now()
	wt.log.complete(slot, op)
	wt.met.done(op, slot < 0)
	if wt.completed != nil {
		wt.completed(op)
	}
	if a.err != "" || a.lost {
		// No definite answer (or one the nemesis loses): break the client's connection, as the
		// upstream's failure would have; never a made-up 502 that a
		// client could take for the sink's answer.
		panic(http.ErrAbortHandler)
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// forward sends r upstream once and passes the answer back.
func (wt *Witness) forward(w http.ResponseWriter, r *http.Request, tap *bodyTap) answer {
	ctx, cancel := context.WithTimeout(r.Context(), wt.timeout)
	defer cancel()
	resp, foreign, err := wt.roundTrip(wt.outbound(ctx, r, tap))
	if err != nil {
		return answer{err: wt.why(ctx, r, tap, "no answer", err), notSent: dialFailed(err)}
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	removeHopByHop(h)
	w.WriteHeader(resp.StatusCode)

	a := answer{status: resp.StatusCode, instance: resp.Header.Get(contract.HeaderInstanceID), foreign: foreign}
	var c capture
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	for {
		n, rerr := resp.Body.Read(*bp)
		if n > 0 {
			c.add((*bp)[:n])
			a.bodyLen += int64(n)
			if _, werr := w.Write((*bp)[:n]); werr != nil {
				a.err = "client went away while the answer was passed back: " + werr.Error()
				break
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			a.err = wt.why(ctx, r, tap, "answer cut short", rerr)
			break
		}
	}
	if a.err == "" {
		if err := http.NewResponseController(w).Flush(); err != nil {
			a.err = "client went away while the answer was passed back: " + err.Error()
		}
	}
	a.body, a.truncated = c.buf, c.truncated
	return a
}

// roundTrip sends out upstream. An answer without the sink's
// Sink-Instance-Id is not the sink's: something else holds the Service's
// address on that connection (seen on kind: the host's gateway answering
// an empty 404 on every request of a kept-alive connection for minutes,
// docs/kind.md). foreign is then the peer that answered, kept in the
// record so a report can name it, and once the answer is read the
// transport's idle connections are dropped, so the next request dials the
// Service again. (Closing that connection under the transport instead let
// the next request pick it from the pool before the transport saw it close:
// a request never sent, recorded as info.) The answer itself still passes
// back unchanged.
func (wt *Witness) roundTrip(out *http.Request) (resp *http.Response, foreign string, err error) {
	var conn net.Conn
	out = out.WithContext(httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) { conn = ci.Conn },
	}))
	resp, err = wt.rt.RoundTrip(out)
	if err != nil || resp.Header.Get(contract.HeaderInstanceID) != "" || conn == nil {
		return resp, "", err
	}
	resp.Body = dropIdleAfter{resp.Body, wt.rt}
	return resp, conn.RemoteAddr().String(), nil
}

// dropIdleAfter closes the transport's idle connections, the one the
// answer came on among them, once the answer's body is closed.
type dropIdleAfter struct {
	io.ReadCloser
	rt http.RoundTripper
}

func (d dropIdleAfter) Close() error {
	err := d.ReadCloser.Close()
	if c, ok := d.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return err
}

// dialFailed: the upstream was never reached, so nothing was sent.
func dialFailed(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// outbound is r addressed to the upstream: same method, path, query,
// Host and end-to-end headers, the body through the tap.
func (wt *Witness) outbound(ctx context.Context, r *http.Request, tap *bodyTap) *http.Request {
	u := *wt.up
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	removeHopByHop(h)
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // keeps the Transport from adding its own
	}
	out := &http.Request{
		Method: r.Method, URL: &u, Host: r.Host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		ContentLength: r.ContentLength, Body: tap,
	}
	// Go's Transport silently re-sends a request it deems replayable (no
	// body, and a GET-like method or an Idempotency-Key header) when a
	// reused connection fails; a witness must never send twice. The tap (a
	// body with no GetBody) is never replayed, but on a bodiless PUT or
	// POST it costs an empty chunked body, so a bodiless request that Go
	// would not replay anyway keeps http.NoBody.
	if (r.Body == nil || r.Body == http.NoBody) && !replayable(r) {
		out.Body = http.NoBody
	}
	return out.WithContext(ctx)
}

// replayable is net/http's rule for a bodiless request it may re-send.
func replayable(r *http.Request) bool {
	switch r.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, idem := r.Header["Idempotency-Key"]
	_, xIdem := r.Header["X-Idempotency-Key"]
	return idem || xIdem
}

// why names the reason an exchange has no definite answer.
func (wt *Witness) why(ctx context.Context, r *http.Request, tap *bodyTap, what string, err error) string {
	switch {
	case tap.clientErr() != nil:
		return "client went away while sending the body: " + tap.clientErr().Error()
	case r.Context().Err() != nil:
		return "client went away before the answer: " + what + ": " + err.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("upstream timeout after %s: %s", wt.timeout, what)
	}
	return "upstream: " + what + ": " + err.Error()
}

// hopByHop are the per-connection headers (RFC 9110 §7.6.1): a proxy
// answers for them itself; everything else passes unchanged.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// History is the history so far.
func (wt *Witness) History() record.History {
	ops, dropped := wt.log.snapshot()
	if ops == nil {
		ops = []record.Operation{}
	}
	return record.History{Instance: wt.instance, Started: wt.started, Read: time.Now(), Dropped: dropped, Operations: ops}
}
