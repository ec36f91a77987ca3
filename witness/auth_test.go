package witness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencecheck/fencecheck/contract/client"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
)

// The witness passes Authorization through unchanged: a writer with the
// sink's token is let through, one without is answered 401 by the sink
// (not by the witness), and both exchanges are recorded.
func TestAuthorizationPassedThrough(t *testing.T) {
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := sink.New(context.Background(), sink.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(sink.RequireTokens(srv.Handler(), sink.Tokens{Writers: []string{"w"}, Admin: "a"}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL})
	ctx := context.Background()

	writer := &client.Client{BaseURL: r.url, Token: "w"}
	if fr, rep, err := writer.Fence(ctx, 7); err != nil || rep.Status != http.StatusOK || fr.Result != "OK" {
		t.Fatalf("fence with the writer token through the witness: %v %d %s", err, rep.Status, rep.Body)
	}
	if op := r.next(t); op.Status != http.StatusOK || op.Epoch != 7 {
		t.Fatalf("recorded %+v", op)
	}
	anon := &client.Client{BaseURL: r.url}
	if _, rep, err := anon.Fence(ctx, 1<<64-1); err != nil || rep.Status != http.StatusUnauthorized {
		t.Fatalf("fence without a token through the witness: %v %d %s", err, rep.Status, rep.Body)
	}
	if op := r.next(t); op.Status != http.StatusUnauthorized {
		t.Fatalf("recorded %+v, want the sink's 401", op)
	}
	if _, err := writer.History(ctx); err == nil {
		t.Fatal("the writer token read the history through the witness")
	}
	r.next(t)
	admin := &client.Client{BaseURL: up.URL, Token: "a"}
	if f, _, err := admin.Floor(ctx); err != nil || f != 7 {
		t.Fatalf("floor %d (%v), want 7", f, err)
	}
}
