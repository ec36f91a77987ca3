package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
)

// TestClientSendsContractHeaders checks the wire format the client puts on
// the request, against a handler that records what it got.
func TestClientSendsContractHeaders(t *testing.T) {
	var gotPath, gotEpoch, gotIdem, gotMethod string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotMethod, gotPath = r.Method, r.URL.EscapedPath()
		gotEpoch, gotIdem = r.Header.Get(contract.HeaderEpoch), r.Header.Get(contract.HeaderIdempotencyKey)
		switch {
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(contract.WriteResponse{Result: contract.ResultRejectStale, HighestEpoch: 9})
		case r.Method == http.MethodPost:
			_ = json.NewEncoder(w).Encode(contract.FenceResponse{Result: contract.ResultOK, HighestEpoch: 7})
		case r.URL.Path == contract.PathFence:
			_ = json.NewEncoder(w).Encode(contract.FenceResponse{HighestEpoch: 7})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/"}
	ctx := context.Background()

	wr, rep, err := c.Put(ctx, "row/1 x", []byte("v"), 3, "idem-1")
	if err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPut || gotPath != "/v1/records/row%2F1%20x" || gotEpoch != "3" || gotIdem != "idem-1" {
		t.Errorf("sent %s %s epoch=%q idem=%q", gotMethod, gotPath, gotEpoch, gotIdem)
	}
	if rep.Status != http.StatusConflict || wr.Result != contract.ResultRejectStale || wr.HighestEpoch != 9 {
		t.Errorf("decoded %d %+v", rep.Status, wr)
	}

	if _, _, err := c.Put(ctx, "k", nil, 4, ""); err != nil || gotIdem != "" {
		t.Errorf("empty idempotency key was sent as %q (err %v)", gotIdem, err)
	}

	fr, _, err := c.Fence(ctx, 7)
	if err != nil || fr.HighestEpoch != 7 || gotEpoch != "7" {
		t.Errorf("fence: %+v %v epoch header %q", fr, err, gotEpoch)
	}
	if f, _, err := c.Floor(ctx); err != nil || f != 7 {
		t.Errorf("floor: %d %v", f, err)
	}
	if _, found, _, err := c.Get(ctx, "missing"); err != nil || found {
		t.Errorf("get missing: found=%v err=%v", found, err)
	}
	if _, err := c.History(ctx); err == nil {
		t.Error("history on a sink without /v1/history: want an error")
	}
}

// An empty 404 is not the sink's answer: the retry must not go back on
// the connection that brought it (on kind that connection answered 404
// for minutes), so the next request dials again and reaches the sink.
func TestAnswerWithoutResultDropsTheConnection(t *testing.T) {
	var mu sync.Mutex
	first := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if first == "" {
			first = r.RemoteAddr
		}
		foreign := r.RemoteAddr == first
		mu.Unlock()
		if foreign {
			w.WriteHeader(http.StatusNotFound) // empty, kept alive
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"result":"OK","epoch":"1"}`)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, HTTP: srv.Client()}
	_, rep, err := c.Fence(context.Background(), 1)
	if err != nil || rep.Status != http.StatusNotFound {
		t.Fatalf("first answer: status %d, err %v; want the empty 404", rep.Status, err)
	}
	fr, rep, err := c.Fence(context.Background(), 1)
	if err != nil || rep.Status != http.StatusOK || fr.Result != "OK" {
		t.Fatalf("retry: status %d result %q err %v: it went back on the connection that answered 404", rep.Status, fr.Result, err)
	}
}
