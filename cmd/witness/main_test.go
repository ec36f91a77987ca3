package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/witness/record"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != ":8080" || o.admin != ":8082" || o.upstream != "http://sink:8080" || o.maxOps != 200000 || o.timeout != 10*time.Second {
		t.Errorf("defaults = %+v", o)
	}
	var help bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "-upstream") {
		t.Errorf("--help: %v, printed %q", err, help.String())
	}
	for args, want := range map[string]string{
		"--bogus":               "flag provided but not defined",
		"--max-ops=0":           "--max-ops must be positive",
		"--timeout=-1s":         "--timeout must be positive",
		"--timeout=soon":        "invalid value",
		"--upstream=sink:8080":  "scheme must be http",
		"--upstream=http://s/x": "no path",
		"--admin=:8080":         "must differ",
		"extra":                 "unexpected argument",
	} {
		_, err := parseFlags(strings.Fields(args), io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", args, err, want)
		}
	}
}

// serve proxies, serves the history on the admin port, and drains and
// returns nil when its context ends (what SIGTERM does).
func TestServeAndShutdown(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"result":"OK","highest_epoch":1}`))
	}))
	t.Cleanup(up.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type addrs struct{ proxy, admin string }
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	o := options{listen: "127.0.0.1:0", admin: "127.0.0.1:0", upstream: up.URL, maxOps: 10, timeout: time.Second}
	go func() {
		done <- serve(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil)), func(p, a string) { ready <- addrs{p, a} })
	}()
	var a addrs
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("not ready in 10s")
	}
	resp, err := http.Post("http://"+a.proxy+"/v1/fence", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The client has its answer a moment before the witness completes the
	// operation: wait for it, with a deadline.
	var h record.History
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err = http.Get("http://" + a.admin + record.PathHistory)
		if err != nil {
			t.Fatal(err)
		}
		h = record.History{}
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err == nil && len(h.Operations) == 1 && h.Operations[0].Type == record.OK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history %+v %v, want the one ok fence", h, err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	// On the proxied port the history's path is just another request for the upstream.
	resp, err = http.Get("http://" + a.proxy + record.PathHistory)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"result":"OK","highest_epoch":1}` {
		t.Errorf("proxied %s answered %q, want the upstream's answer", record.PathHistory, b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown in 10s")
	}
}
