package check

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
)

// caseStudy replays Part 5 of the split-brain case study: pod-A leads with
// epoch 1 and writes x=1, y=2; a 12s partition lets pod-C take epoch 2 and
// write x=10; pod-A, not yet aware, writes x=99 and y=3 with epoch 1.
// fenced selects the InventoryDB of Part 2 (reject epoch < highest) or the
// unfenced store of Part 1 (accept everything).
func caseStudy(fenced bool) *history.Scenario {
	t0 := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	s := &history.Scenario{Name: "case-study", Events: map[string][]eventlog.Event{}, Expect: map[string]history.Expectation{}}
	s.Lease = history.LeaseWatch{Start: t0, End: at(20), Records: []history.LeaseRecord{
		{Observed: at(0.1), Event: "ADDED", ResourceVersion: "1", UID: "u", Holder: "pod-A_00000001", Term: 1, TermRaw: "1", TermOK: true},
		{Observed: at(1.1), Event: "MODIFIED", ResourceVersion: "2", UID: "u", Holder: "pod-A_00000001", Term: 1, TermRaw: "1", TermOK: true},
		{Observed: at(12.1), Event: "MODIFIED", ResourceVersion: "3", UID: "u", Holder: "pod-C_00000003", Term: 2, TermRaw: "2", TermOK: true},
	}}
	var floor, seq uint64
	var senders []string
	write := func(pod string, sec float64, key, val string, epoch uint64) {
		seq++
		senders = append(senders, pod)
		a := contract.Attempt{Seq: seq, Arrived: at(sec), Op: contract.OpPut, Key: key, Value: val, Epoch: epoch, IdempotencyKey: pod + "-" + val, Status: 200, Result: contract.ResultOK}
		if fenced && epoch < floor {
			a.Status, a.Result = 409, contract.ResultRejectStale
		} else if epoch > floor {
			floor = epoch
		}
		a.FloorAfter = floor
		s.Attempts = append(s.Attempts, a)
		s.Events[pod] = append(s.Events[pod], eventlog.Event{Time: at(sec), Pod: pod, Identity: pod + "_0000000" + map[string]string{"pod-A": "1", "pod-C": "3"}[pod],
			Kind: eventlog.KindWrite, Key: key, Value: val, Epoch: epoch, IdempotencyKey: a.IdempotencyKey, Result: a.Result, Status: a.Status})
	}
	write("pod-A", 0.2, "x", "1", 1)
	write("pod-A", 0.3, "y", "2", 1)
	write("pod-C", 12.2, "x", "10", 2)
	write("pod-A", 12.3, "x", "99", 1)               // stale
	write("pod-A", 12.4, "y", "3", 1)                // also stale
	for _, pod := range []string{"pod-A", "pod-C"} { // both logs complete
		s.Events[pod] = append(s.Events[pod], eventlog.Event{Time: at(20), Pod: pod, Kind: eventlog.KindStopped})
	}
	// What a witness in front of the sink saw, from each pod's address.
	ips := map[string]string{"pod-A": "10.0.0.1", "pod-C": "10.0.0.3"}
	for pod, ip := range ips {
		s.PodIPs = append(s.PodIPs, history.PodIP{Pod: pod, IP: ip, From: t0})
	}
	s.Witness = synth.WitnessOf(s.Attempts)
	for i := range s.Witness.Operations {
		s.Witness.Operations[i].Source = ips[senders[i]] + ":41000"
	}
	return s
}

// The case study's three invariants, as this package states them:
//   - "at most one epoch active at a time per row" is checked as "no row
//     returns to an older epoch" (row-epoch-monotonic). Read literally
//     (any change of a row's epoch fails), the invariant fails the case
//     study's own correct run, where x legitimately moves 1 -> 2.
//   - "rejected writes never appear in db" (rejected-not-in-final-state).
//   - "highest epoch is monotonic" (floor-monotonic).
func TestCaseStudyFencedPasses(t *testing.T) {
	s := caseStudy(true)
	for _, c := range []string{RowEpochMonotonic, RejectedNotInState, FloorMonotonic, NoStaleCommit, RejectStaleSeen, EpochHeldByWriter, Idempotency, TermMonotonic} {
		wantPass(t, s, c)
	}
	// Final db of the case study: x=10@2, y=2@1.
	st := replayState(attempts(s))
	if st["x"].Value != "10" || st["x"].Epoch != 2 || st["y"].Value != "2" || st["y"].Epoch != 1 {
		t.Errorf("final state %+v, want x=10@2 y=2@1", st)
	}
}

func TestCaseStudyUnfencedFails(t *testing.T) {
	s := caseStudy(false)
	wantFail(t, s, RowEpochMonotonic, "row x went back from epoch 2 (seq 3) to 1 (seq 4)")
	wantFail(t, s, FloorMonotonic, "committed below the highest committed epoch 2")
	wantFail(t, s, NoStaleCommit, "put x=\"99\" epoch 1")
	wantFail(t, s, RejectStaleSeen, "never answered")
}

// A sink that rejects but keeps the value breaks invariant 2.
func TestCaseStudyRejectedValueInDB(t *testing.T) {
	s := caseStudy(true)
	s.FinalRecords = []contract.Record{{Key: "x", Value: "99", Epoch: 1}, {Key: "y", Value: "2", Epoch: 1}}
	wantFail(t, s, RejectedNotInState, "was rejected, yet the final state holds it")
}
