package witness

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// setNemesis POSTs req to the admin listener and returns the status and state.
func setNemesis(t *testing.T, admin string, req record.NemesisRequest) (int, record.NemesisState) {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(admin+record.PathNemesis, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st record.NemesisState
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, st
}

// The run-time nemesis arms a hold at the epoch committed so far (once at
// a time, never before a commit), and turns lost answers on and off.
func TestRuntimeNemesis(t *testing.T) {
	r, c, _ := nemesisRig(t, NemesisConfig{Runtime: true})
	admin := httptest.NewServer(r.wt.Admin())
	t.Cleanup(admin.Close)
	ctx := context.Background()
	if code, _ := setNemesis(t, admin.URL, record.NemesisRequest{Hold: true}); code != http.StatusConflict {
		t.Fatalf("a hold before any commit answered %d, want 409", code)
	}
	c.Fence(ctx, 1)
	r.next(t)
	if wr, _, err := c.Put(ctx, "a", []byte("v"), 1, "i-a"); err != nil || wr.Result != contract.ResultOK {
		t.Fatalf("put a: %+v %v", wr, err)
	}
	r.next(t)
	if code, st := setNemesis(t, admin.URL, record.NemesisRequest{Hold: true}); code != http.StatusOK || !st.Holding || st.HoldEpoch != 1 {
		t.Fatalf("arm: %d %+v, want holding epochs <= 1", code, st)
	}
	if code, _ := setNemesis(t, admin.URL, record.NemesisRequest{Hold: true}); code != http.StatusConflict {
		t.Fatalf("a second hold while one is armed answered %d, want 409", code)
	}
	got := make(chan string, 1)
	go func() { wr, _, _ := c.Put(ctx, "b", []byte("stale"), 1, "i-b"); got <- wr.Result }()
	waitHeld(t, r.wt, 1)
	if fr, _, err := c.Fence(ctx, 2); err != nil || fr.Result != contract.ResultOK {
		t.Fatalf("fence 2: %+v %v", fr, err)
	}
	if res := <-got; res != contract.ResultRejectStale {
		t.Fatalf("the held write was answered %q, want %s", res, contract.ResultRejectStale)
	}
	r.next(t)
	r.next(t)
	// Armed again after the release: at the highest epoch committed, 2 once
	// a write of term 2 committed.
	if wr, _, err := c.Put(ctx, "c", []byte("v"), 2, "i-c"); err != nil || wr.Result != contract.ResultOK {
		t.Fatalf("put c: %+v %v", wr, err)
	}
	r.next(t)
	if code, st := setNemesis(t, admin.URL, record.NemesisRequest{Hold: true}); code != http.StatusOK || st.HoldEpoch != 2 {
		t.Fatalf("re-arm: %d %+v, want holding epochs <= 2", code, st)
	}
	c.Fence(ctx, 3) // releases nothing held, ends the hold
	r.next(t)

	one, zero := 1, 0
	if code, st := setNemesis(t, admin.URL, record.NemesisRequest{LoseEvery: &one}); code != http.StatusOK || st.LoseEvery != 1 || st.Holding {
		t.Fatalf("lose every 1: %d %+v", code, st)
	}
	if _, _, err := c.Put(ctx, "d", []byte("v"), 3, "i-d"); err == nil {
		t.Fatal("with lose_every 1 the answer came back")
	}
	if lost := r.next(t); lost.Nemesis == nil || !lost.Nemesis.LostAnswer {
		t.Fatalf("op %+v not recorded as a lost answer", lost)
	}
	setNemesis(t, admin.URL, record.NemesisRequest{LoseEvery: &zero})
	if wr, _, err := c.Put(ctx, "d", []byte("v"), 3, "i-d"); err != nil || wr.Result != contract.ResultOKDup {
		t.Fatalf("retry with losses off: %+v %v, want OK_DUP", wr, err)
	}
	neg := -1
	if code, _ := setNemesis(t, admin.URL, record.NemesisRequest{LoseEvery: &neg}); code != http.StatusConflict {
		t.Fatalf("lose_every -1 answered %d, want 409", code)
	}
}

// Without --nemesis-runtime the admin path refuses, whatever else is on.
func TestRuntimeNemesisOff(t *testing.T) {
	for _, cfg := range []NemesisConfig{{}, {LoseEvery: 3}} {
		r, _, _ := nemesisRig(t, cfg)
		admin := httptest.NewServer(r.wt.Admin())
		if code, _ := setNemesis(t, admin.URL, record.NemesisRequest{Hold: true}); code != http.StatusConflict {
			t.Errorf("%+v: answered %d, want 409", cfg, code)
		}
		admin.Close()
	}
}
