package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Stats is the JSON served at GET /stats. The chaos engineer's tests read
// these field names: keep them stable.
type Stats struct {
	APIServerOK        int64     `json:"apiserver_ok"`
	APIServerFail      int64     `json:"apiserver_fail"`
	URLOK              int64     `json:"url_ok"`
	URLFail            int64     `json:"url_fail"`
	LastAPIServerOK    time.Time `json:"last_apiserver_ok,omitempty"`
	LastAPIServerFail  time.Time `json:"last_apiserver_fail,omitempty"`
	LastAPIServerError string    `json:"last_apiserver_error,omitempty"`
	LastURLOK          time.Time `json:"last_url_ok,omitempty"`
	LastURLFail        time.Time `json:"last_url_fail,omitempty"`
	LastURLError       string    `json:"last_url_error,omitempty"`
}

// recorder keeps Stats and reports changes of state (ok <-> failing).
type recorder struct {
	mu    sync.Mutex
	s     Stats
	state map[string]string // target -> "ok" | "fail"
}

func newRecorder() *recorder { return &recorder{state: map[string]string{}} }

// record counts one result and returns a log line when the target's state
// changed (the first result always counts as a change).
func (r *recorder) record(target string, err error, at time.Time) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := "ok"
	if err != nil {
		state = "fail"
	}
	switch {
	case target == "apiserver" && err == nil:
		r.s.APIServerOK++
		r.s.LastAPIServerOK = at
	case target == "apiserver":
		r.s.APIServerFail++
		r.s.LastAPIServerFail, r.s.LastAPIServerError = at, err.Error()
	case err == nil:
		r.s.URLOK++
		r.s.LastURLOK = at
	default:
		r.s.URLFail++
		r.s.LastURLFail, r.s.LastURLError = at, err.Error()
	}
	if r.state[target] == state {
		return "", false
	}
	r.state[target] = state
	line := fmt.Sprintf("%s %s %s", at.UTC().Format(time.RFC3339Nano), target, state)
	if err != nil {
		line += ": " + err.Error()
	}
	return line, true
}

func (r *recorder) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

func (r *recorder) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.snapshot())
	})
	return mux
}

// poller runs both checks every interval until ctx ends.
type poller struct {
	interval  time.Duration
	apiClient *http.Client
	target    apiserverTarget
	urlClient *http.Client
	url       string
	rec       *recorder
	out       io.Writer
}

func (p *poller) once() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, err := getVersion(p.apiClient, p.target)
		if line, changed := p.rec.record("apiserver", err, time.Now()); changed {
			fmt.Fprintln(p.out, line)
		}
	}()
	go func() {
		defer wg.Done()
		_, err := getURL(p.urlClient, p.url)
		if line, changed := p.rec.record("url", err, time.Now()); changed {
			fmt.Fprintln(p.out, line)
		}
	}()
	wg.Wait()
}

func (p *poller) loop(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.once()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func runPoll(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("poll", flag.ContinueOnError)
	fs.SetOutput(stderr)
	interval := fs.Duration("interval", 200*time.Millisecond, "time between rounds")
	url := fs.String("url", "", "URL to GET each round over a new connection (required)")
	addr := fs.String("addr", ":8081", "address serving GET /stats")
	timeout := fs.Duration("timeout", time.Second, "timeout of each request")
	if err := fs.Parse(args); err != nil {
		return exitForFlagErr(err)
	}
	if fs.NArg() > 0 || *url == "" || *interval <= 0 {
		fmt.Fprintln(stderr, "poll: --url is required, --interval must be > 0, no other arguments")
		return 2
	}
	target, err := inClusterTarget(os.Getenv, saDir)
	if err != nil {
		fmt.Fprintln(stderr, "poll:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "poll:", err)
		return 1
	}
	p := &poller{interval: *interval, apiClient: target.keptOpenClient(*timeout), target: target,
		urlClient: newConnClient(*timeout), url: *url, rec: newRecorder(), out: stdout}
	fmt.Fprintf(stdout, "probe poll: apiserver %s and %s every %s; stats on %s/stats\n", target.URL, *url, *interval, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go p.loop(ctx)
	return serveUntilSignal(ln, p.rec.handler(), stderr)
}
