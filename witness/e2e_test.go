package witness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
	"github.com/fencecheck/fencecheck/witness/record"
)

func startSink(tb testing.TB) *sinktest.Sink {
	dir := tb.TempDir()
	return sinktest.Start(tb, func(context.Context) (store.Store, error) { return boltstore.Open(dir) }, "")
}

// commit is what a fenced commit is, from either witness.
type commit struct {
	op, key         string
	epoch           uint64
	idemKey, sha256 string
}

// crossCheck compares the commits the witness saw answered OK with the
// commits the sink's own history reports, both ways, as multisets. It
// reports every difference; an incomplete witness history is one too.
func crossCheck(h record.History, attempts []contract.Attempt) []string {
	var diffs []string
	if h.Dropped > 0 {
		diffs = append(diffs, fmt.Sprintf("witness dropped %d operations: evidence incomplete", h.Dropped))
	}
	count := map[commit]int{}
	for _, o := range h.Operations {
		switch {
		case o.Type == record.Invoke:
			diffs = append(diffs, fmt.Sprintf("witness op %d still in flight", o.ID))
		case o.Type == record.OK && o.Result == contract.ResultOK && o.Method == http.MethodPut && o.Key != "":
			count[commit{contract.OpPut, o.Key, o.Epoch, o.IdempotencyKey, o.ValueSHA256}]++
		case o.Type == record.OK && o.Result == contract.ResultOK && o.Path == contract.PathFence && o.Method == http.MethodPost:
			count[commit{op: contract.OpFence, epoch: o.Epoch}]++
		}
	}
	for _, a := range attempts {
		var c commit
		switch {
		case a.Committed():
			c = commit{contract.OpPut, a.Key, a.Epoch, a.IdempotencyKey, sha(a.Value)}
		case a.Op == contract.OpFence && a.Result == contract.ResultOK:
			c = commit{op: contract.OpFence, epoch: a.Epoch}
		default:
			continue
		}
		if count[c] == 0 {
			diffs = append(diffs, fmt.Sprintf("sink reports %+v (seq %d) that no client was answered OK for", c, a.Seq))
			continue
		}
		count[c]--
	}
	for c, n := range count {
		for ; n > 0; n-- {
			diffs = append(diffs, fmt.Sprintf("a client was answered OK for %+v, the sink's history has no such commit", c))
		}
	}
	return diffs
}

// runThroughWitness drives the reference sink through a witness with
// contract/client the way a leader change does (fence, concurrent writers,
// a stale writer, a retried write, an escaped key) and returns both
// histories.
func runThroughWitness(t *testing.T) (record.History, []contract.Attempt) {
	s := startSink(t)
	r := startRig(t, Config{Upstream: s.URL})
	ctx := context.Background()
	via := &client.Client{BaseURL: r.url}
	mustFence := func(e uint64) {
		if fr, _, err := via.Fence(ctx, e); err != nil || fr.Result != contract.ResultOK {
			t.Fatalf("fence %d: %+v %v", e, fr, err)
		}
	}
	mustFence(1)
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				key := fmt.Sprintf("row/%d-%d", w, i)
				if _, _, err := via.Put(ctx, key, []byte(fmt.Sprintf("v%d.%d", w, i)), 1, fmt.Sprintf("t1-w%d-%03d", w, i)); err != nil {
					t.Errorf("put %s: %v", key, err)
				}
			}
		}()
	}
	wg.Wait()
	mustFence(2)
	if wr, _, err := via.Put(ctx, "row/0-0", []byte("stale"), 1, "t1-stale"); err != nil || wr.Result != contract.ResultRejectStale {
		t.Fatalf("stale put: %+v %v", wr, err)
	}
	for i := 0; i < 2; i++ { // the second is a retry: OK_DUP, not a commit
		if _, _, err := via.Put(ctx, "a/b c", []byte("new"), 2, "t2-000001"); err != nil {
			t.Fatal(err)
		}
	}
	const sent = 35 // 2 fences, 30 writes, the stale one, the retried pair
	for range sent {
		r.next(t) // every operation completed before the histories are read
	}
	attempts, err := (&client.Client{BaseURL: s.URL}).History(ctx) // the sink's own, directly
	if err != nil {
		t.Fatal(err)
	}
	admin := httptest.NewServer(r.wt.Admin())
	t.Cleanup(admin.Close)
	var h record.History
	if err := json.Unmarshal([]byte(get(t, admin.URL+record.PathHistory)), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Operations) != sent {
		t.Fatalf("witness recorded %d operations, want %d", len(h.Operations), sent)
	}
	return h, attempts
}

func TestWitnessAgreesWithReferenceSink(t *testing.T) {
	h, attempts := runThroughWitness(t)
	if diffs := crossCheck(h, attempts); len(diffs) > 0 {
		t.Errorf("witness and sink disagree:\n%v", diffs)
	}
	var ok, fail int
	for _, o := range h.Operations {
		switch o.Type {
		case record.OK:
			ok++
		case record.Fail:
			fail++
		}
		if o.Key == "a/b c" && o.Path != "/v1/records/a%2Fb%20c" {
			t.Errorf("escaped key: path %q", o.Path)
		}
		// The reference sink names its instance on every answer; the
		// checks see a restart as a change of it.
		if o.Status != 0 && o.SinkInstance == "" {
			t.Errorf("op %d (%s %s): no sink instance recorded", o.ID, o.Method, o.Path)
		}
	}
	if ok != 34 || fail != 1 {
		t.Errorf("%d ok, %d fail; want 34 and the stale write's 1", ok, fail)
	}
}

// The negative controls of crossCheck: a witness history that lost one
// commit, one whose value hash differs, a sink history that hides one.
func TestCrossCheckCatchesAMissingOperation(t *testing.T) {
	h, attempts := runThroughWitness(t)
	firstPut := func() int {
		for i, o := range h.Operations {
			if o.Method == http.MethodPut && o.Result == contract.ResultOK {
				return i
			}
		}
		t.Fatal("no committed put")
		return -1
	}
	i := firstPut()

	dropped := h
	dropped.Operations = append(append([]record.Operation(nil), h.Operations[:i]...), h.Operations[i+1:]...)
	if diffs := crossCheck(dropped, attempts); len(diffs) != 1 {
		t.Errorf("a witness that lost one commit: %d differences %v, want 1", len(diffs), diffs)
	}

	altered := h
	altered.Operations = append([]record.Operation(nil), h.Operations...)
	altered.Operations[i].ValueSHA256 = sha("something else")
	if diffs := crossCheck(altered, attempts); len(diffs) != 2 {
		t.Errorf("a value the sink did not commit: %d differences %v, want 2 (one each way)", len(diffs), diffs)
	}

	var hidden []contract.Attempt
	hid := false
	for _, a := range attempts {
		if a.Committed() && !hid {
			hid = true
			continue
		}
		hidden = append(hidden, a)
	}
	if diffs := crossCheck(h, hidden); len(diffs) != 1 {
		t.Errorf("a sink history hiding one commit: %d differences %v, want 1", len(diffs), diffs)
	}

	incomplete := h
	incomplete.Dropped = 1
	if diffs := crossCheck(incomplete, attempts); len(diffs) != 1 {
		t.Errorf("dropped operations: %d differences %v, want 1", len(diffs), diffs)
	}
}
