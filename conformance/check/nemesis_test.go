package check

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func hexSHA(v string) string { s := sha256.Sum256([]byte(v)); return hex.EncodeToString(s[:]) }

func wfence(id uint64, epoch uint64, inv, done int) record.Operation {
	return record.Operation{ID: id, Source: "10.0.0.2:1", Method: "POST", Path: contract.PathFence, EpochHeader: "e", Epoch: epoch,
		Invoked: at(inv), Completed: at(done), Type: record.OK, Status: 200, Result: contract.ResultOK, HighestEpoch: epoch}
}

func wput(id uint64, src, key, value string, epoch uint64, idem string, inv, done int, status int, result string) record.Operation {
	o := record.Operation{ID: id, Source: src, Method: "PUT", Path: contract.PathRecords + key, Key: key, EpochHeader: "e", Epoch: epoch,
		IdempotencyKey: idem, ValueLen: int64(len(value)), ValueSHA256: hexSHA(value), Invoked: at(inv), Completed: at(done), Status: status, Result: result}
	switch {
	case status >= 200 && status < 300:
		o.Type, o.ResultEpoch = record.OK, epoch
	default:
		o.Type, o.HighestEpoch = record.Fail, 2
	}
	return o
}

// heldRun: leader 1 fences and writes, its write #3 is held from 100 ms;
// leader 2's fence #4 is answered by the sink at 210 ms, the held write is
// sent at 211 ms and answered (status) at 212, then the fence's answer
// goes back at 213; leader 2 writes.
func heldRun(status int, result string) *history.Scenario {
	held := wput(3, "10.0.0.1:1", "b", "old", 1, "i-b", 100, 212, status, result)
	held.Nemesis = &record.Fault{Held: true, HoldEpoch: 1, ReleasedBy: 4, Sent: at(211), Answered: at(212)}
	fence := wfence(4, 2, 200, 213)
	fence.Nemesis = &record.Fault{Releases: []uint64{3}, Sent: at(200), Answered: at(210)}
	ops := []record.Operation{wfence(1, 1, 0, 1), wput(2, "10.0.0.1:1", "a", "old", 1, "i-a", 10, 11, 200, contract.ResultOK), held, fence,
		wput(5, "10.0.0.2:1", "a", "new", 2, "i-a2", 220, 221, 200, contract.ResultOK)}
	final := []contract.Record{{Key: "a", Value: "new", Epoch: 2}}
	if status == 200 {
		final = append(final, contract.Record{Key: "b", Value: "old", Epoch: 1})
	}
	return &history.Scenario{Name: "held", Witness: &record.History{Started: t0, Read: at(1000), Operations: ops}, FinalRecords: final}
}

func TestHeldWritesRejected(t *testing.T) {
	if v := checkHeldWrites(heldRun(409, contract.ResultRejectStale)); v.Status != StatusPass {
		t.Errorf("correct run: %+v", v)
	}
	v := checkHeldWrites(heldRun(200, contract.ResultOK))
	if v.Status == StatusPass || v.Status == StatusInconclusive || !strings.Contains(strings.Join(v.Evidence, "\n"), "committed") {
		t.Errorf("a held write committed past the fence: %+v", v)
	}
	// Sent before the fence was answered: not held past it.
	s := heldRun(409, contract.ResultRejectStale)
	s.Witness.Operations[2].Nemesis.Sent = at(205)
	if v := checkHeldWrites(s); v.Status == StatusPass || v.Status == StatusInconclusive {
		t.Errorf("a write sent before the fence's answer: %+v", v)
	}
	// No hold took effect: INCONCLUSIVE, never a pass or a catch.
	s = heldRun(409, contract.ResultRejectStale)
	s.Witness.Operations[2].Nemesis = &record.Fault{Held: true, HoldEpoch: 1, Expired: true, Sent: at(211)}
	s.Witness.Operations[3].Nemesis = nil
	if v := checkHeldWrites(s); v.Status == StatusPass || v.Status != StatusInconclusive {
		t.Errorf("an expired hold: %+v", v)
	}
	if v := checkHeldWrites(&history.Scenario{}); v.Status == StatusPass || v.Status != StatusInconclusive {
		t.Errorf("no witness: %+v", v)
	}
	// Released before the fence (the race mode) counts as the fault.
	s = heldRun(200, contract.ResultOK)
	s.Witness.Operations[2].Nemesis.ReleasedBeforeFence = true
	if v := checkHeldWrites(s); v.Status != StatusPass {
		t.Errorf("a write released before the fence: %+v", v)
	}
}

// A held write the sink committed after it answered a higher fence is no
// linearizable outcome once the witness's upstream times are used, though
// the client's own interval (sent before the fence, answered before the
// fence's answer came back) would allow it.
func TestLinearizableUsesTheUpstreamTimesOfHeldWrites(t *testing.T) {
	if v := checkLinearizable(heldRun(409, contract.ResultRejectStale)); v.Status != StatusPass {
		t.Fatalf("correct held run: %+v", v)
	}
	if v := checkLinearizable(heldRun(200, contract.ResultOK)); v.Status == StatusPass || v.Status == StatusInconclusive {
		t.Fatalf("a held write committed past the fence: %+v", v)
	}
	s := heldRun(200, contract.ResultOK)
	s.Witness.Operations[2].Nemesis, s.Witness.Operations[3].Nemesis = nil, nil
	if v := checkLinearizable(s); v.Status != StatusPass {
		t.Fatalf("without the upstream times the same answers are concurrent, so linearizable: %+v", v)
	}
}

func lostRun(retryStatus int, retryResult string) *history.Scenario {
	lost := wput(2, "10.0.0.1:1", "a", "v", 1, "i-a", 10, 11, 200, contract.ResultOK)
	lost.Nemesis = &record.Fault{LostAnswer: true, Sent: at(10), Answered: at(11)}
	retry := wput(3, "10.0.0.1:2", "a", "v", 1, "i-a", 220, 221, retryStatus, retryResult)
	ops := []record.Operation{wfence(1, 1, 0, 1), lost, retry}
	return &history.Scenario{Name: "lost", Witness: &record.History{Started: t0, Read: at(1000), Operations: ops},
		FinalRecords: []contract.Record{{Key: "a", Value: "v", Epoch: 1}}}
}

func TestLostAnswersDeduplicated(t *testing.T) {
	if v := checkLostAnswers(lostRun(200, contract.ResultOKDup)); v.Status != StatusPass {
		t.Errorf("correct run: %+v", v)
	}
	v := checkLostAnswers(lostRun(200, contract.ResultOK))
	if v.Status == StatusPass || v.Status == StatusInconclusive || !strings.Contains(strings.Join(v.Evidence, "\n"), "committed twice") {
		t.Errorf("a retry committed again: %+v", v)
	}
	s := lostRun(200, contract.ResultOKDup)
	s.Witness.Operations = s.Witness.Operations[:2]
	if v := checkLostAnswers(s); v.Status == StatusPass || v.Status != StatusInconclusive {
		t.Errorf("no retry: %+v", v)
	}
	s = lostRun(200, contract.ResultOKDup)
	s.Witness.Operations[1].Nemesis = nil
	if v := checkLostAnswers(s); v.Status == StatusPass || v.Status != StatusInconclusive {
		t.Errorf("no lost answer: %+v", v)
	}
}
