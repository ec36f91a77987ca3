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
	"syscall"
)

// pingReply is what GET /ping answers.
type pingReply struct {
	Pod  string `json:"pod"`
	IP   string `json:"ip"`
	Node string `json:"node,omitempty"`
}

func selfIdentity() pingReply {
	r := pingReply{Pod: os.Getenv("POD_NAME"), IP: os.Getenv("POD_IP"), Node: os.Getenv("NODE_NAME")}
	if r.Pod == "" {
		r.Pod, _ = os.Hostname()
	}
	if r.IP == "" {
		r.IP = firstNonLoopbackIP()
	}
	return r
}

func firstNonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

func pingHandler(id pingReply) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(id)
	})
	return mux
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", ":8080", "listen address")
	if err := fs.Parse(args); err != nil {
		return exitForFlagErr(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	id := selfIdentity()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "serve:", err)
		return 1
	}
	fmt.Fprintf(stdout, "probe serve: listening on %s as pod=%s ip=%s\n", ln.Addr(), id.Pod, id.IP)
	return serveUntilSignal(ln, pingHandler(id), stderr)
}

func serveUntilSignal(ln net.Listener, h http.Handler, stderr io.Writer) int {
	srv := &http.Server{Handler: h}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, "serve:", err)
		return 1
	case <-ctx.Done():
		_ = srv.Shutdown(context.Background())
		return 0
	}
}

func exitForFlagErr(err error) int {
	if err == flag.ErrHelp {
		return 0
	}
	return 2
}
