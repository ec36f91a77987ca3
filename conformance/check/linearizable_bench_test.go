package check

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// longHistory is n witness operations as conformance runs record them:
// mostly sequential writes of the leader over 30 rows, a fence per term,
// the previous leader's stale writes overlapping the new leader's first
// ones, and 2% answers lost (applied or not). The answers come from the
// reference rule applied in call order, so the history is linearizable.
func longHistory(n int) *history.Scenario {
	rng := rand.New(rand.NewSource(1))
	s := &history.Scenario{Name: "long"}
	w := &record.History{Instance: "bench", Started: synth.T0}
	var floor uint64
	recs := map[string]contract.Record{}
	var keys []string
	term := uint64(0)
	at := synth.T0
	for i := 0; len(w.Operations) < n; i++ {
		o := record.Operation{ID: uint64(len(w.Operations) + 1), Source: fmt.Sprintf("10.0.0.%d:4000", term%3), Invoked: at, Completed: at.Add(800 * time.Microsecond)}
		epoch := term
		switch {
		case i%100 == 0:
			term++
			epoch = term
			o.Method, o.Path = "POST", contract.PathFence
		case i%100 < 10 && term > 1:
			epoch = term - 1 // the old leader, overlapping the new one
			o.Source = fmt.Sprintf("10.0.0.%d:4000", (term-1)%3)
			o.Invoked = at.Add(-400 * time.Microsecond)
			fallthrough
		default:
			k := fmt.Sprintf("row-%02d", rng.Intn(30))
			v := fmt.Sprintf("v-%d", i)
			o.Method, o.Path, o.Key, o.IdempotencyKey, o.ValueSHA256 = "PUT", contract.RecordPath(k), k, fmt.Sprintf("idem-%d", i), sha(v)
		}
		o.Epoch, o.EpochHeader = epoch, fmt.Sprint(epoch)
		lost := o.Key != "" && epoch >= floor && rng.Intn(100) < lostPercent
		switch {
		case epoch < floor:
			o.Type, o.Status, o.Result, o.HighestEpoch = record.Fail, 409, contract.ResultRejectStale, floor
		case o.Key == "":
			floor = epoch
			o.Type, o.Status, o.Result, o.HighestEpoch = record.OK, 200, contract.ResultOK, epoch
		case lost:
			o.Type, o.Error = record.Info, "upstream timeout"
		default:
			o.Type, o.Status, o.Result, o.ResultEpoch = record.OK, 200, contract.ResultOK, epoch
		}
		if o.Key != "" && (o.Type == record.OK || lost && rng.Intn(2) == 0) {
			floor = epoch
			if _, ok := recs[o.Key]; !ok {
				keys = append(keys, o.Key)
			}
			recs[o.Key] = contract.Record{Key: o.Key, Value: fmt.Sprintf("v-%d", i), Epoch: epoch}
		}
		w.Operations = append(w.Operations, o)
		at = at.Add(time.Millisecond)
	}
	w.Read = at
	for _, k := range keys {
		s.FinalRecords = append(s.FinalRecords, recs[k])
	}
	s.Witness = w
	return s
}

// lostPercent of the leader's writes lose their answer.
var lostPercent = 2

func TestLinearizableLongHistory(t *testing.T) {
	defer func(p int) { lostPercent = p }(lostPercent)
	for _, p := range []int{0, 2} {
		lostPercent = p
		s := longHistory(1000)
		start := time.Now()
		v := checkLinearizable(s)
		t.Logf("1000 witness operations, %d%% answers lost: linearizable judged in %v", p, time.Since(start))
		if v.Status != StatusPass {
			t.Fatalf("%v", v.Evidence)
		}
	}
}

// The same history with one stale write acknowledged in the middle: the
// violation is found as fast (porcupine's search fails at the first
// operation no state explains).
func TestLinearizableLongHistoryViolation(t *testing.T) {
	for _, p := range []int{0, 2} {
		defer func(p int) { lostPercent = p }(lostPercent)
		lostPercent = p
		s := longHistory(1000)
		o := &s.Witness.Operations[505]
		if o.Type != record.Fail {
			t.Fatalf("op %d is no stale write: %+v", o.ID, o)
		}
		o.Type, o.Status, o.Result, o.ResultEpoch, o.HighestEpoch = record.OK, 200, contract.ResultOK, o.Epoch, 0
		start := time.Now()
		v := checkLinearizable(s)
		t.Logf("1000 witness operations, %d%% answers lost, one stale write acknowledged: judged in %v", p, time.Since(start))
		if v.Status == StatusPass || v.Status == StatusInconclusive || !strings.Contains(strings.Join(v.Evidence, "\n"), fmt.Sprintf("#%d put", o.ID)) {
			t.Fatalf("want a violation naming #%d: %v", o.ID, v.Evidence)
		}
	}
}

func BenchmarkLinearizable1000(b *testing.B) {
	s := longHistory(1000)
	for b.Loop() {
		if v := checkLinearizable(s); v.Status != StatusPass {
			b.Fatal(v.Evidence)
		}
	}
}
