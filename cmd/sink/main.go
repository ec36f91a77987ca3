// Command sink is the reference fencing sink of fencecheck (sink contract
// v1, HTTP binding). --broken=<variant> serves a negative control instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/broken"
	"github.com/fencecheck/fencecheck/fixtures/sink/pgstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

func main() { os.Exit(run(os.Args[1:])) }

// options are the command-line flags.
type options struct {
	addr, data, store, pgDSN, pgPrefix, broken string
	tlsCert, tlsKey                            string
	tokenFiles                                 []string
	adminTokenFile                             string
	historyBytes                               int64
	maxBodies                                  int
}

// errHelp means --help was asked for and printed.
var errHelp = flag.ErrHelp

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.addr, "addr", ":8080", "listen address")
	fs.StringVar(&o.data, "data", "/data", "data directory of the bolt store")
	fs.StringVar(&o.store, "store", "bolt", "store: bolt or postgres")
	fs.StringVar(&o.pgDSN, "pg-dsn", "", "PostgreSQL DSN for --store=postgres (default: $FENCECHECK_PG_DSN)")
	fs.StringVar(&o.pgPrefix, "pg-prefix", "sink", "table name prefix in PostgreSQL")
	fs.Func("token-file", "a writer token (repeatable): every path but /healthz needs \"Authorization: Bearer <token>\" with a writer or the admin token", func(v string) error {
		o.tokenFiles = append(o.tokenFiles, v)
		return nil
	})
	fs.StringVar(&o.adminTokenFile, "admin-token-file", "", "the admin token: the only one that reads /v1/history and /metrics (needs --token-file)")
	fs.Int64Var(&o.historyBytes, "history-bytes", sink.DefaultHistoryBytes, "memory budget of the in-memory history (values kept as a 1 KiB prefix and a SHA-256)")
	fs.IntVar(&o.maxBodies, "max-bodies", sink.DefaultMaxBodies, "request bodies read at once (the next waits, then gets 503)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (with --tls-key)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.broken, "broken", "", "serve a negative control instead of the reference rule: "+strings.Join(broken.Names(), ", "))
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sink [flags]\n\nThe reference fencing sink (sink contract v1, see docs/sink-contract.md).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.broken != "" {
		if _, err := broken.Lookup(o.broken); err != nil {
			return o, err
		}
	}
	switch o.store {
	case "bolt", "postgres":
	default:
		return o, fmt.Errorf("unknown --store %q (bolt or postgres)", o.store)
	}
	if o.adminTokenFile != "" && len(o.tokenFiles) == 0 {
		return o, errors.New("--admin-token-file needs --token-file (the writers' token)")
	}
	if o.historyBytes < 1<<20 {
		return o, fmt.Errorf("--history-bytes %d: at least 1 MiB", o.historyBytes)
	}
	if o.maxBodies < 1 {
		return o, fmt.Errorf("--max-bodies %d: at least 1", o.maxBodies)
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return o, errors.New("--tls-cert and --tls-key go together")
	}
	return o, nil
}

// readToken reads the bearer token: the file's content without surrounding
// whitespace, which must not be empty.
func readToken(flag, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--%s %s is empty", flag, path)
	}
	return tok, nil
}

// readTokens reads the writer tokens and the admin token.
func readTokens(o options) (sink.Tokens, error) {
	var t sink.Tokens
	for _, f := range o.tokenFiles {
		tok, err := readToken("token-file", f)
		if err != nil {
			return t, err
		}
		t.Writers = append(t.Writers, tok)
	}
	if o.adminTokenFile != "" {
		tok, err := readToken("admin-token-file", o.adminTokenFile)
		if err != nil {
			return t, err
		}
		t.Admin = tok
	}
	for _, w := range t.Writers {
		if w == t.Admin {
			return t, errors.New("the admin token must differ from every writer token")
		}
	}
	return t, nil
}

func run(args []string) int {
	o, err := parseFlags(args, os.Stderr)
	switch {
	case errors.Is(err, errHelp):
		return 0
	case err != nil:
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var st store.Store
	switch o.store {
	case "bolt":
		st, err = boltstore.Open(o.data)
	case "postgres":
		if o.pgDSN == "" {
			o.pgDSN = os.Getenv("FENCECHECK_PG_DSN")
		}
		if o.pgDSN == "" {
			err = errors.New("--store=postgres needs --pg-dsn or FENCECHECK_PG_DSN")
		} else {
			openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			st, err = pgstore.Open(openCtx, o.pgDSN, o.pgPrefix)
			cancel()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}
	defer st.Close()

	cfg := sink.Config{Store: st, Log: log}
	var v broken.Variant // the zero variant serves the handler as it is
	if o.broken != "" {
		v, _ = broken.Lookup(o.broken) // validated by parseFlags
		cfg = v.Config(st, log)
		log.Warn("serving a NEGATIVE CONTROL, not the reference sink", "variant", v.Name, "breaks", v.Description)
	}
	cfg.HistoryBytes, cfg.MaxBodies = o.historyBytes, o.maxBodies
	srv, err := sink.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}

	h := v.Serve(srv.Handler())
	if len(o.tokenFiles) > 0 {
		toks, err := readTokens(o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sink:", err)
			return 1
		}
		h = sink.RequireTokens(h, toks)
	} else {
		log.Warn("no --token-file: anyone who reaches the sink may write and fence it (development only)")
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}
	hs := sink.HTTPServer(h, sink.DefaultTimeouts)
	log.Info("sink listening", "addr", ln.Addr().String(), "store", o.store, "data", o.data, "broken", o.broken,
		"tls", o.tlsCert != "", "auth", len(o.tokenFiles) > 0, "admin", o.adminTokenFile != "",
		"history_bytes", o.historyBytes, "max_bodies", o.maxBodies)
	errc := make(chan error, 1)
	go func() {
		if o.tlsCert != "" {
			errc <- hs.ServeTLS(ln, o.tlsCert, o.tlsKey)
			return
		}
		errc <- hs.Serve(ln)
	}()
	select {
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
