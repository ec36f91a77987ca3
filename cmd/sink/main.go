// Command sink is the reference fencing sink of fencecheck (sink contract
// v1, HTTP binding). --broken=<variant> serves a negative control instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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

func run(args []string) int {
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "listen address")
	data := fs.String("data", "/data", "data directory of the bolt store")
	kind := fs.String("store", "bolt", "store: bolt or postgres")
	dsn := fs.String("pg-dsn", "", "PostgreSQL DSN for --store=postgres (default: $FENCECHECK_PG_DSN)")
	pgPrefix := fs.String("pg-prefix", "sink", "table name prefix in PostgreSQL")
	brokenName := fs.String("broken", "", "serve a negative control instead of the reference rule: "+strings.Join(broken.Names(), ", "))
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sink [flags]\n\nThe reference fencing sink (sink contract v1, see docs/sink-contract.md).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sink: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var st store.Store
	var err error
	switch *kind {
	case "bolt":
		st, err = boltstore.Open(*data)
	case "postgres":
		if *dsn == "" {
			*dsn = os.Getenv("FENCECHECK_PG_DSN")
		}
		if *dsn == "" {
			err = errors.New("--store=postgres needs --pg-dsn or FENCECHECK_PG_DSN")
		} else {
			openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			st, err = pgstore.Open(openCtx, *dsn, *pgPrefix)
			cancel()
		}
	default:
		err = fmt.Errorf("unknown --store %q (bolt or postgres)", *kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}
	defer st.Close()

	cfg := sink.Config{Store: st, Log: log}
	if *brokenName != "" {
		v, err := broken.Lookup(*brokenName)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sink:", err)
			return 2
		}
		cfg = v.Config(st, log)
		log.Warn("serving a NEGATIVE CONTROL, not the reference sink", "variant", v.Name, "breaks", v.Description)
	}
	srv, err := sink.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}
	hs := sink.HTTPServer(srv.Handler(), sink.DefaultTimeouts)
	log.Info("sink listening", "addr", ln.Addr().String(), "store", *kind, "data", *data, "broken", *brokenName)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
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
