package check

// The fixtures' own rules judged by the suite's checks: the fixture is held
// to the rule the suite enforces, not to a copy of it (here, on the
// harness's side: the fixtures know nothing of the harness).

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fixtures/reconciler/term"
	refsink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/fence"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// The term decision (fixtures/reconciler/term), replayed:

// simulate replays a fixed scenario through Decide the way the lock does
// (read, decide, commit, remember the highest term) and returns the Lease's
// committed history as the conformance Lease watch would record it.
func simulate(t *testing.T, mode term.Mode) []history.LeaseRecord {
	t.Helper()
	type lease struct {
		exists bool
		holder string
		ann    string
	}
	var l lease
	seen := map[string]uint64{}
	var hist []history.LeaseRecord
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	act := func(id string) {
		if l.exists {
			v, _ := term.Parse(l.ann)
			seen[id] = max(seen[id], v)
		}
		d, err := term.Decide(term.Input{Exists: l.exists, Holder: l.holder, Identity: id, Annotation: l.ann, HighestSeen: seen[id], Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		l = lease{exists: true, holder: id, ann: term.Format(d.Term)}
		seen[id] = max(seen[id], d.Term)
		n := len(hist) + 1
		hist = append(hist, history.LeaseRecord{Observed: t0.Add(time.Duration(n) * time.Second), Event: "MODIFIED",
			ResourceVersion: fmt.Sprint(n), Holder: id, TermRaw: term.Format(d.Term), Term: d.Term, TermOK: true})
	}
	act("a_1") // create
	act("a_1") // renew
	act("a_1") // renew
	act("b_2") // takeover after expiry
	act("b_2") // renew
	act("c_3") // takeover
	act("a_4") // pod a restarted: new identity
	// c_3 stands for election and reads the Lease (term 4) ...
	v, _ := term.Parse(l.ann)
	seen["c_3"] = max(seen["c_3"], v)
	// ... then someone deletes and re-creates the Lease empty.
	l = lease{exists: true, holder: "x", ann: ""}
	act("c_3")
	act("c_3")
	return hist
}

// termStep judges a history with the conformance suite's own checker, so
// the fixture is held to the rule the suite enforces, not to a copy of it.
func fixtureTermStep(recs []history.LeaseRecord) Verdict {
	c, _ := ByName(TermStep)
	w := history.LeaseWatch{Start: recs[0].Observed.Add(-time.Second), End: recs[len(recs)-1].Observed.Add(time.Second), Records: recs}
	return c.Judge(&history.Scenario{Lease: w})
}

func TestFixtureTermDecisionPassesTermStep(t *testing.T) {
	h := simulate(t, term.Mode{})
	if v := fixtureTermStep(h); v.Status != StatusPass {
		t.Fatalf("correct mode failed the check: %v (history %v)", v.Evidence, h)
	}
	if last := h[len(h)-1].Term; last != 5 {
		t.Fatalf("history %v: last term %d, want 5", h, last)
	}
}

// Negative controls: each broken mode must fail the same check.
func TestFixtureTermBrokenModesFailTermStep(t *testing.T) {
	for name, m := range map[string]term.Mode{
		"term-on-renew": {TermOnRenew: true},
		"no-term-bump":  {NoTermBump: true},
	} {
		h := simulate(t, m)
		if v := fixtureTermStep(h); v.Status == StatusPass || v.Status == StatusInconclusive {
			t.Errorf("%s: check did not catch a broken history %v: %+v", name, h, v)
		}
	}
}

// The reference sink (fixtures/sink):

// holdFence holds a fence's Apply, before the store's lock, until released:
// a write that arrives after the fence is then decided before it.
type holdFence struct {
	store.Store
	held, release chan struct{}
}

func (h *holdFence) Apply(ctx context.Context, req fence.Request, rule fence.Rule) (fence.Decision, error) {
	if req.Op == contract.OpFence {
		close(h.held)
		<-h.release
	}
	return h.Store.Apply(ctx, req, rule)
}

// The history's Order is the order the store decided in. Judged in arrival
// order, a write decided before a concurrent fence but arriving after it
// looks like a stale commit; judged in decision order it is none.
func TestHistoryOrderIsDecisionOrder(t *testing.T) {
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hold := &holdFence{Store: st, held: make(chan struct{}), release: make(chan struct{})}
	srv, err := refsink.New(context.Background(), refsink.Config{Store: hold})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c := &client.Client{BaseURL: hs.URL, HTTP: hs.Client()}
	ctx := context.Background()
	if _, _, err := c.Put(ctx, "a", []byte("1"), 1, "w-1"); err != nil {
		t.Fatal(err)
	}
	fenced := make(chan error, 1)
	go func() { _, _, err := c.Fence(ctx, 2); fenced <- err }()
	<-hold.held // the fence has arrived and waits outside the store
	if wr, _, err := c.Put(ctx, "b", []byte("2"), 1, "w-2"); err != nil || wr.Result != contract.ResultOK {
		t.Fatalf("the write decided before the fence: %+v %v", wr, err)
	}
	close(hold.release)
	if err := <-fenced; err != nil {
		t.Fatal(err)
	}
	as, err := c.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 || as[1].Op != contract.OpFence || as[2].Order >= as[1].Order {
		t.Fatalf("want the fence second by arrival and last by decision: %+v", as)
	}
	stale, _ := ByName(NoStaleCommit)
	h := &history.Scenario{Name: "order", Attempts: as}
	if v := stale.Judge(h); v.Status != StatusPass {
		t.Errorf("judged in decision order: %v", v.Evidence)
	}
	arrival := append([]contract.Attempt(nil), as...)
	for i := range arrival {
		arrival[i].Order = 0 // a sink that reports no order is judged by arrival
	}
	if v := stale.Judge(&history.Scenario{Name: "arrival", Attempts: arrival}); v.Status == StatusPass {
		t.Error("judged in arrival order the write looks stale; the test no longer shows why Order exists")
	}
}
