// Command witness is the harness's recording proxy in front of the sink
// (package witness): every reconciler's --sink-url points at it, it
// forwards each request unchanged to --upstream and records what was asked
// and answered, from its own side, for the conformance checks.
//
// Flags:
//
//	--listen :8080               the proxied listener (reconcilers connect here)
//	--admin :8082                GET /v1/witness/history, /healthz, /metrics;
//	                             never the proxied port, so nothing forwarded collides
//	--upstream http://sink:8080  the sink's base URL (scheme://host[:port], no path)
//	--max-ops 200000             operations kept; past it they are counted as
//	                             "dropped" in the history (evidence incomplete)
//	--timeout 10s                one upstream exchange, answer included; past it
//	                             the operation is info and the client's connection is cut
//
// The nemesis (off by default; docs/architecture.md, "The witness's nemesis"):
//
//	--hold-writes-after N        once N PUTs were answered with a fresh OK, hold every PUT
//	                             of epoch <= E (the highest committed) until a fence above E
//	                             is answered OK, then deliver them before that answer goes back
//	--race-lag D                 with held writes: release them before the fence instead and
//	                             forward the fence D later (a race at the sink, in a known order)
//	--max-hold D                 a hold no fence ends is sent anyway after D (default 60s)
//	--lose-answers-every N       lose the answer of every N-th PUT answered with a fresh OK
//	                             (read it, then close the client's connection)
//	--nemesis-runtime            the harness may arm a hold (of the epochs committed so far)
//	                             and set the lost-answer rate while the witness runs:
//	                             POST /v1/witness/nemesis on the admin port (mixed schedules)
//
// --help prints this; an unknown flag or a bad value is an error (exit 2).
// SIGTERM or SIGINT: stop accepting, finish in-flight requests (up to
// --timeout + 5s), exit 0. The history lives in memory only (the process
// writes nothing to disk): read it before the pod goes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/witness"
	"github.com/fencecheck/fencecheck/witness/record"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "witness:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := serve(ctx, o, log, nil); err != nil {
		fmt.Fprintln(os.Stderr, "witness:", err)
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	listen, admin, upstream string
	maxOps                  int
	timeout                 time.Duration
	nemesis                 witness.NemesisConfig
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("witness", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.listen, "listen", ":8080", "proxied listen address (clients connect here)")
	fs.StringVar(&o.admin, "admin", ":8082", "admin listen address: "+record.PathHistory+", /healthz, /metrics")
	fs.StringVar(&o.upstream, "upstream", "http://sink:8080", "the sink's base URL")
	fs.IntVar(&o.maxOps, "max-ops", witness.DefaultMaxOps, "operations kept; past it they are counted as dropped")
	fs.DurationVar(&o.timeout, "timeout", witness.DefaultTimeout, "upper bound of one upstream exchange")
	fs.IntVar(&o.nemesis.HoldAfter, "hold-writes-after", 0, "nemesis: after N fresh OK PUTs hold writes of epoch <= the highest committed until a higher fence (0: off)")
	fs.DurationVar(&o.nemesis.RaceLag, "race-lag", 0, "nemesis: release held writes before the fence and forward the fence this much later (0: after its answer)")
	fs.DurationVar(&o.nemesis.MaxHold, "max-hold", witness.DefaultMaxHold, "nemesis: a hold no fence ends is sent anyway after this")
	fs.IntVar(&o.nemesis.LoseEvery, "lose-answers-every", 0, "nemesis: lose the answer of every N-th PUT answered with a fresh OK (0: off)")
	fs.BoolVar(&o.nemesis.Runtime, "nemesis-runtime", false, "nemesis: the harness may arm a hold and set the lost-answer rate at run time (POST "+record.PathNemesis+" on the admin port)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: witness [flags]\n\nThe harness's recording proxy in front of the sink (see docs/architecture.md).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.maxOps <= 0:
		return o, fmt.Errorf("--max-ops must be positive, got %d", o.maxOps)
	case o.timeout <= 0:
		return o, fmt.Errorf("--timeout must be positive, got %s", o.timeout)
	case o.listen == o.admin:
		return o, fmt.Errorf("--listen and --admin must differ (both %q): the history must not share the proxied port", o.listen)
	}
	if _, err := witness.ParseUpstream(o.upstream); err != nil {
		return o, err
	}
	if err := o.nemesis.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// serve runs both listeners until ctx ends, then drains them. ready, if
// set, is told the bound addresses (tests listen on port 0).
func serve(ctx context.Context, o options, log *slog.Logger, ready func(proxy, admin string)) error {
	wt, err := witness.New(witness.Config{Upstream: o.upstream, MaxOps: o.maxOps, Timeout: o.timeout, Nemesis: o.nemesis})
	if err != nil {
		return err
	}
	pln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	aln, err := net.Listen("tcp", o.admin)
	if err != nil {
		pln.Close()
		return err
	}
	// No read or write timeout on the proxy: --timeout bounds each exchange,
	// and a server timeout shorter than it would cut answers short.
	proxy := &http.Server{Handler: wt, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 90 * time.Second, MaxHeaderBytes: 64 << 10}
	admin := &http.Server{Handler: wt.Admin(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: time.Minute}
	errc := make(chan error, 2)
	go func() { errc <- proxy.Serve(pln) }()
	go func() { errc <- admin.Serve(aln) }()
	log.Info("witness listening", "proxy", pln.Addr().String(), "admin", aln.Addr().String(),
		"upstream", o.upstream, "max_ops", o.maxOps, "timeout", o.timeout.String(), "instance", wt.History().Instance,
		"hold_writes_after", o.nemesis.HoldAfter, "race_lag", o.nemesis.RaceLag.String(), "lose_answers_every", o.nemesis.LoseEvery, "nemesis_runtime", o.nemesis.Runtime)
	if ready != nil {
		ready(pln.Addr().String(), aln.Addr().String())
	}
	select {
	case err := <-errc:
		proxy.Close()
		admin.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	shutCtx, cancel := context.WithTimeout(context.Background(), o.timeout+5*time.Second)
	defer cancel()
	// The proxy first: its last operations complete while the admin
	// listener can still serve the history.
	perr := proxy.Shutdown(shutCtx)
	aerr := admin.Shutdown(shutCtx)
	if err := errors.Join(perr, aerr); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
