package witness

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
	"github.com/fencecheck/fencecheck/witness/record"
)

func putOp(id, epoch uint64) record.Operation {
	return record.Operation{ID: id, Method: http.MethodPut, Key: "k", EpochHeader: "x", Epoch: epoch}
}

func TestNemesisHoldDecisions(t *testing.T) {
	n := newNemesis(NemesisConfig{HoldAfter: 2})
	if h, _ := n.hold(putOp(1, 1)); h != nil {
		t.Fatal("held before armed")
	}
	n.answered(http.StatusOK, contract.ResultOKDup, 1) // a duplicate is no fresh commit
	n.answered(http.StatusConflict, contract.ResultRejectStale, 1)
	n.answered(http.StatusOK, contract.ResultOK, 1)
	if n.holding() {
		t.Fatal("armed after one fresh OK, want two")
	}
	n.answered(http.StatusOK, contract.ResultOK, 1)
	if !n.holding() {
		t.Fatal("not armed after two fresh OKs")
	}
	h, e := n.hold(putOp(5, 1))
	if h == nil || e != 1 {
		t.Fatalf("a write of epoch 1 under E=1 not held: %v %d", h, e)
	}
	if h2, _ := n.hold(putOp(6, 2)); h2 != nil {
		t.Fatal("a write above E held")
	}
	if n.hold(record.Operation{ID: 7, Method: http.MethodPut, Key: "k"}); len(n.held) != 1 {
		t.Fatal("a write with no epoch held")
	}
	if hs := n.take(8, 1, false); hs != nil {
		t.Fatal("a fence at E released the hold")
	}
	hs := n.take(9, 2, false)
	if len(hs) != 1 || hs[0] != h || h.by != 9 || h.beforeFence {
		t.Fatalf("fence 2 released %v", hs)
	}
	if n.expire(h) {
		t.Fatal("a released write expired")
	}
	if h3, _ := n.hold(putOp(10, 1)); h3 != nil || n.holding() {
		t.Fatal("the hold armed again after its release")
	}
}

func TestNemesisExpireAndLose(t *testing.T) {
	n := newNemesis(NemesisConfig{HoldAfter: 1, LoseEvery: 3})
	var lost []int
	for i := 1; i <= 7; i++ {
		if n.answered(http.StatusOK, contract.ResultOK, 1) {
			lost = append(lost, i)
		}
	}
	if len(lost) != 2 || lost[0] != 3 || lost[1] != 6 {
		t.Fatalf("lost the answers of fresh OKs %v, want [3 6]", lost)
	}
	h, _ := n.hold(putOp(1, 1))
	if !n.expire(h) || len(n.held) != 0 {
		t.Fatal("a held write did not expire")
	}
	if hs := n.take(2, 2, true); len(hs) != 0 {
		t.Fatalf("an expired write was released: %v", hs)
	}
}

func TestNemesisConfigValidate(t *testing.T) {
	for _, c := range []NemesisConfig{{HoldAfter: -1}, {LoseEvery: -1}, {RaceLag: time.Millisecond}, {HoldAfter: 1, MaxHold: -time.Second}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if (NemesisConfig{}).On() {
		t.Error("the zero config is on")
	}
}

// nemesisRig is a witness with faults in front of the reference sink.
func nemesisRig(t *testing.T, cfg NemesisConfig) (*rig, *client.Client, *client.Client) {
	s := startSink(t)
	r := startRig(t, Config{Upstream: s.URL, Timeout: 5 * time.Second, Nemesis: cfg})
	// No keep-alive: a lost answer must reach the test, not a transport retry.
	c := &client.Client{BaseURL: r.url, HTTP: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	return r, c, &client.Client{BaseURL: s.URL}
}

// waitHeld waits until the witness holds n writes.
func waitHeld(t *testing.T, wt *Witness, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		wt.nem.mu.Lock()
		got := len(wt.nem.held)
		wt.nem.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes held after 10s, want %d", got, n)
		}
	}
}

func TestHeldWriteReachesSinkAfterTheFenceAndIsRejected(t *testing.T) {
	r, c, direct := nemesisRig(t, NemesisConfig{HoldAfter: 2})
	ctx := context.Background()
	if _, _, err := c.Fence(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if wr, _, err := c.Put(ctx, k, []byte("v1"), 1, "i-"+k); err != nil || wr.Result != contract.ResultOK {
			t.Fatalf("put %s: %+v %v", k, wr, err)
		}
	}
	for range 3 {
		r.next(t)
	}
	type res struct {
		wr  contract.WriteResponse
		err error
	}
	got := make(chan res, 1)
	go func() { wr, _, err := c.Put(ctx, "c", []byte("stale"), 1, "i-c"); got <- res{wr, err} }()
	waitHeld(t, r.wt, 1)
	fr, _, err := c.Fence(ctx, 2)
	if err != nil || fr.Result != contract.ResultOK {
		t.Fatalf("fence 2: %+v %v", fr, err)
	}
	if g := <-got; g.err != nil || g.wr.Result != contract.ResultRejectStale {
		t.Fatalf("held write answered %+v %v, want REJECT_STALE_EPOCH", g.wr, g.err)
	}
	ops := map[uint64]record.Operation{}
	for range 2 {
		op := r.next(t)
		ops[op.ID] = op
	}
	held, fence := ops[4], ops[5]
	if held.Nemesis == nil || !held.Nemesis.Held || held.Nemesis.HoldEpoch != 1 || held.Nemesis.ReleasedBy != 5 || held.Status != http.StatusConflict {
		t.Fatalf("held op %+v %+v", held, held.Nemesis)
	}
	if fence.Nemesis == nil || len(fence.Nemesis.Releases) != 1 || fence.Nemesis.Releases[0] != 4 {
		t.Fatalf("fence op %+v %+v", fence, fence.Nemesis)
	}
	// The fence's answer passes back only after the sink answered the held
	// write; the two operations' Completed stamps are taken afterwards, by
	// their own handlers, in either order (CI saw the held one 35µs later).
	if !held.Nemesis.Sent.After(fence.Nemesis.Answered) || held.Nemesis.Answered.After(fence.Completed) {
		t.Fatalf("held write sent %s, fence answered %s; the sink answered the held write %s, fence completed %s",
			held.Nemesis.Sent, fence.Nemesis.Answered, held.Nemesis.Answered, fence.Completed)
	}
	as, err := direct.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := as[len(as)-1]
	if last.Key != "c" || last.Result != contract.ResultRejectStale {
		t.Fatalf("the sink's last attempt is %+v, want the held write rejected", last)
	}
}

func TestRaceLagSendsHeldWritesBeforeTheFence(t *testing.T) {
	const lag = 50 * time.Millisecond
	r, c, _ := nemesisRig(t, NemesisConfig{HoldAfter: 1, RaceLag: lag})
	ctx := context.Background()
	c.Fence(ctx, 1)
	c.Put(ctx, "a", []byte("v"), 1, "i-a")
	r.next(t)
	r.next(t)
	go c.Put(ctx, "b", []byte("v"), 1, "i-b")
	waitHeld(t, r.wt, 1)
	if _, _, err := c.Fence(ctx, 2); err != nil {
		t.Fatal(err)
	}
	ops := map[uint64]record.Operation{}
	for range 2 {
		op := r.next(t)
		ops[op.ID] = op
	}
	held, fence := ops[3], ops[4]
	if held.Nemesis == nil || !held.Nemesis.ReleasedBeforeFence || held.Type != record.OK {
		t.Fatalf("held op %+v %+v, want released before the fence and committed", held, held.Nemesis)
	}
	if d := fence.Nemesis.Sent.Sub(held.Nemesis.Sent); d < lag {
		t.Fatalf("the fence was sent %s after the held write, want at least %s", d, lag)
	}
}

func TestLostAnswerCommitsAndTheRetryIsADuplicate(t *testing.T) {
	r, c, _ := nemesisRig(t, NemesisConfig{LoseEvery: 2})
	ctx := context.Background()
	c.Fence(ctx, 1)
	r.next(t)
	if wr, _, err := c.Put(ctx, "a", []byte("v"), 1, "i-a"); err != nil || wr.Result != contract.ResultOK {
		t.Fatalf("first put: %+v %v", wr, err)
	}
	r.next(t)
	if _, _, err := c.Put(ctx, "b", []byte("v"), 1, "i-b"); err == nil {
		t.Fatal("the second fresh OK's answer was not lost")
	}
	lost := r.next(t)
	if lost.Type != record.OK || lost.Result != contract.ResultOK || lost.Nemesis == nil || !lost.Nemesis.LostAnswer {
		t.Fatalf("lost op %+v %+v", lost, lost.Nemesis)
	}
	if wr, _, err := c.Put(ctx, "b", []byte("v"), 1, "i-b"); err != nil || wr.Result != contract.ResultOKDup {
		t.Fatalf("retry: %+v %v, want OK_DUP", wr, err)
	}
	if retry := r.next(t); retry.Nemesis != nil {
		t.Fatalf("the retry was touched: %+v", retry.Nemesis)
	}
}

// The racy control's race, deterministic: a held stale write released
// RaceLag before the new leader's fence reaches the racy-window sink's
// check first, the fence lands inside its window, and the write's act
// commits after the fence, 5 times of 5.
func TestRaceLagHitsTheRacyWindowEveryTime(t *testing.T) {
	for i := range 5 {
		dir := t.TempDir()
		s := sinktest.Start(t, func(context.Context) (store.Store, error) { return boltstore.Open(dir) }, "racy-window")
		r := startRig(t, Config{Upstream: s.URL, Timeout: 5 * time.Second, Nemesis: NemesisConfig{HoldAfter: 1, RaceLag: 50 * time.Millisecond}})
		c := &client.Client{BaseURL: r.url}
		ctx := context.Background()
		c.Fence(ctx, 1)
		c.Put(ctx, "a", []byte("v"), 1, "i-a")
		go c.Put(ctx, "b", []byte("stale"), 1, "i-b")
		waitHeld(t, r.wt, 1)
		if fr, _, err := c.Fence(ctx, 2); err != nil || fr.Result != contract.ResultOK {
			t.Fatalf("run %d: fence 2: %+v %v", i, fr, err)
		}
		as, err := (&client.Client{BaseURL: s.URL}).History(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var stale, fence2 contract.Attempt
		for _, a := range as {
			switch {
			case a.Op == contract.OpPut && a.Key == "b":
				stale = a
			case a.Op == contract.OpFence && a.Epoch == 2:
				fence2 = a
			}
		}
		if !stale.Committed() || stale.Order <= fence2.Order {
			t.Fatalf("run %d: stale write %+v, fence %+v: want the epoch-1 commit decided after the fence", i, stale, fence2)
		}
	}
}

// The held-writes controls' sinks commit a held write the reference sink
// rejects: the fault reaches them exactly as it reaches a correct sink.
func TestHeldWriteCommitsOnTheControlSinks(t *testing.T) {
	for _, variant := range []string{"per-key-floor", "ignore-fence"} {
		t.Run(variant, func(t *testing.T) {
			dir := t.TempDir()
			s := sinktest.Start(t, func(context.Context) (store.Store, error) { return boltstore.Open(dir) }, variant)
			r := startRig(t, Config{Upstream: s.URL, Timeout: 5 * time.Second, Nemesis: NemesisConfig{HoldAfter: 1}})
			c := &client.Client{BaseURL: r.url}
			ctx := context.Background()
			c.Fence(ctx, 1)
			c.Put(ctx, "a", []byte("v"), 1, "i-a")
			got := make(chan contract.WriteResponse, 1)
			go func() { wr, _, _ := c.Put(ctx, "b", []byte("stale"), 1, "i-b"); got <- wr }()
			waitHeld(t, r.wt, 1)
			if fr, _, err := c.Fence(ctx, 2); err != nil || fr.Result != contract.ResultOK {
				t.Fatalf("fence 2: %+v %v", fr, err)
			}
			if wr := <-got; wr.Result != contract.ResultOK {
				t.Fatalf("held write on %s: %+v, want OK (the defect)", variant, wr)
			}
		})
	}
}

// A slow sink: once armed at run time, every answer passes back unchanged
// after a delay the seed draws (the same seed, the same delays, recorded
// on each operation), the sink acting at once; disarmed, none.
func TestSlowAnswersAreSeededAndRecorded(t *testing.T) {
	const max = 20 * time.Millisecond
	draws := func(seed uint64) []time.Duration {
		n := newNemesis(NemesisConfig{Runtime: true})
		if st, err := n.set(record.NemesisRequest{Slow: &record.SlowRequest{Max: max, Seed: seed}}); err != nil || st.SlowMax != max {
			t.Fatalf("arm: %+v %v", st, err)
		}
		var out []time.Duration
		for range 5 {
			out = append(out, n.delay())
		}
		return out
	}
	a, b, c := draws(7), draws(7), draws(8)
	if fmt.Sprint(a) != fmt.Sprint(b) || fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatalf("seed 7 drew %v and %v, seed 8 %v", a, b, c)
	}
	for _, d := range a {
		if d < 0 || d > max {
			t.Fatalf("delay %v outside [0, %v]", d, max)
		}
	}
	if _, err := newNemesis(NemesisConfig{Runtime: true}).set(record.NemesisRequest{Slow: &record.SlowRequest{Max: -1}}); err == nil {
		t.Error("a negative max must be refused")
	}

	r, cl, direct := nemesisRig(t, NemesisConfig{Runtime: true})
	ctx := context.Background()
	if _, err := r.wt.nem.set(record.NemesisRequest{Slow: &record.SlowRequest{Max: max, Seed: 7}}); err != nil {
		t.Fatal(err)
	}
	if fr, _, err := cl.Fence(ctx, 1); err != nil || fr.Result != contract.ResultOK {
		t.Fatalf("fence: %+v %v", fr, err)
	}
	if wr, _, err := cl.Put(ctx, "a", []byte("v"), 1, "i-a"); err != nil || wr.Result != contract.ResultOK {
		t.Fatalf("put: %+v %v", wr, err)
	}
	for i, want := range a[:2] {
		op := r.next(t)
		if op.Nemesis == nil || op.Nemesis.Delayed != want || op.Type != record.OK {
			t.Fatalf("op %d: %+v %+v, want delayed %v", i, op, op.Nemesis, want)
		}
		if op.Completed.Sub(op.Nemesis.Answered) < want {
			t.Errorf("op %d passed back %v after the sink's answer, want at least %v", i, op.Completed.Sub(op.Nemesis.Answered), want)
		}
	}
	if as, err := direct.History(ctx); err != nil || len(as) != 2 {
		t.Fatalf("the sink saw %d attempts (%v), want the fence and the write once each", len(as), err)
	}
	r.wt.nem.set(record.NemesisRequest{Slow: &record.SlowRequest{}})
	cl.Put(ctx, "b", []byte("v"), 1, "i-b")
	if op := r.next(t); op.Nemesis != nil {
		t.Fatalf("disarmed, the put was still touched: %+v", op.Nemesis)
	}
}
