package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

func verdict(t *testing.T, s *history.Scenario, name string) Verdict {
	t.Helper()
	c, ok := ByName(name)
	if !ok {
		t.Fatalf("no checker %q", name)
	}
	return c.Judge(s)
}

func wantPass(t *testing.T, s *history.Scenario, name string) {
	t.Helper()
	if v := verdict(t, s, name); v.Status != StatusPass {
		t.Errorf("%s on %s: want pass, got fail:\n  %s", name, s.Name, strings.Join(v.Evidence, "\n  "))
	}
}

func wantFail(t *testing.T, s *history.Scenario, name, evidence string) {
	t.Helper()
	v := verdict(t, s, name)
	if v.Status == StatusPass {
		t.Errorf("%s on %s: the broken variant passed:\n  %s", name, s.Name, strings.Join(v.Evidence, "\n  "))
		return
	}
	if v.Status == StatusInconclusive {
		// Missing evidence never catches a broken variant.
		t.Errorf("%s on %s: INCONCLUSIVE, not caught:\n  %s", name, s.Name, strings.Join(v.Evidence, "\n  "))
		return
	}
	if !strings.Contains(strings.Join(v.Evidence, "\n"), evidence) {
		t.Errorf("%s on %s: failed, but evidence lacks %q:\n  %s", name, s.Name, evidence, strings.Join(v.Evidence, "\n  "))
	}
}

// wantInconclusive: the check cannot judge for lack of evidence. That fails
// a must-pass check but never catches a negative control.
func wantInconclusive(t *testing.T, s *history.Scenario, name, evidence string) {
	t.Helper()
	v := verdict(t, s, name)
	if v.Status == StatusPass || v.Status != StatusInconclusive {
		t.Errorf("%s on %s: want INCONCLUSIVE, got pass=%v:\n  %s", name, s.Name, v.Status == StatusPass, strings.Join(v.Evidence, "\n  "))
		return
	}
	if !strings.Contains(strings.Join(v.Evidence, "\n"), evidence) {
		t.Errorf("%s on %s: inconclusive, but evidence lacks %q:\n  %s", name, s.Name, evidence, strings.Join(v.Evidence, "\n  "))
	}
}

// Missing evidence is INCONCLUSIVE, never a violation.
func TestMissingEvidenceIsInconclusive(t *testing.T) {
	gap := synth.Scenario("watch-gap", synth.Defect{WatchGap: true})
	wantInconclusive(t, gap, TermMonotonic, "watch gap")
	wantInconclusive(t, gap, TermStep, "watch gap")
	s := synth.Scenario("no-sink", synth.Defect{})
	s.MissingEvidence(history.EvidenceSink, "sink history via fc/sink:8080: the server could not find the requested resource")
	for _, c := range []string{NoStaleCommit, Idempotency, FloorMonotonic} {
		wantInconclusive(t, s, c, "sink evidence incomplete")
	}
	wantPass(t, s, TermStep) // the Lease watch is intact
	cut := synth.Scenario("cut-log", synth.Defect{})
	evs := cut.Events["pod-a"]
	cut.Events["pod-a"] = evs[:len(evs)-1]
	for _, c := range []string{BridgeDrain, BridgeCapacity, BridgeJoin, BridgeAbort} {
		wantInconclusive(t, cut, c, "pod-a: its log does not end with the stopped event")
	}
	// A violation shown by what was collected stands.
	bad := synth.Scenario("unfenced-and-missing", synth.Defect{IgnoreDemotion: true, UnfencedSink: true})
	bad.MissingEvidence(history.EvidenceFinalState, "records: timeout")
	wantFail(t, bad, NoStaleCommit, "stale commit")
	wantInconclusive(t, bad, RejectedNotInState, "final-state evidence incomplete")
}

// A correct history edited so that the old leader never stops sending
// after it lost the Lease fails old-leader-steps-down, although its own
// log (a lost event, then stopped) says it stepped down.
func TestStepsDownJudgedFromTheWitness(t *testing.T) {
	s := synth.Scenario("edited", synth.Defect{})
	wantPass(t, s, OldLeaderStepsDown)
	to := Takeovers(s)[1]
	late := s.Witness.Operations[len(s.Witness.Operations)-1]
	late.ID++
	late.Invoked = to.Observed.Add(s.Config.DrainTimeout.D() + time.Second)
	late.Completed = late.Invoked.Add(time.Millisecond)
	late.Method, late.Key, late.Epoch, late.EpochHeader = "PUT", "row-001", to.FromTerm, fmt.Sprint(to.FromTerm)
	late.Type, late.Status, late.Result = record.Fail, 409, contract.ResultRejectStale
	s.Witness.Operations = append(s.Witness.Operations, late)
	wantFail(t, s, OldLeaderStepsDown, "kept sending after losing the Lease")
	s.Witness = nil
	wantInconclusive(t, s, OldLeaderStepsDown, "no witness history")
}

// Every check the correct synthetic run expects passes.
func TestCorrectRunPassesEverything(t *testing.T) {
	for _, d := range []synth.Defect{{}, {Shutdown: true}} {
		s := synth.Scenario("correct", d)
		for _, r := range EvaluateScenario(s) {
			if r.Status != StatusPass {
				t.Errorf("%s (shutdown=%v): %v", r.Check, d.Shutdown, r.Evidence)
			}
		}
	}
}

// Each broken variant is caught by the check named for it.
func TestNegativeControls(t *testing.T) {
	cases := []struct {
		name     string
		d        synth.Defect
		check    string
		evidence string
	}{
		{"term-on-renew", synth.Defect{TermOnRenew: true}, TermStep, "renew by pod-a_000000a0 changed the term 1 -> 2"},
		{"no-term-bump", synth.Defect{NoTermBump: true}, TermStep, "moved the term 1 -> 1, want 2"},
		{"no-term-bump", synth.Defect{NoTermBump: true}, TermMonotonic, "term 1 repeated for a new holder"},
		{"ignore-demotion-unfenced-sink", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}, NoStaleCommit, "stale commit"},
		{"ignore-demotion-unfenced-sink", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}, RowEpochMonotonic, "went back from epoch 2"},
		{"ignore-demotion-unfenced-sink", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}, FloorMonotonic, "committed below the highest committed epoch 2"},
		{"ignore-demotion", synth.Defect{IgnoreDemotion: true}, OldLeaderStepsDown, "kept sending after losing the Lease"},
		{"live-epoch", synth.Defect{IgnoreDemotion: true, LiveEpoch: true}, EpochHeldByWriter, "sent by pod-a, which the Lease watch never shows holding term 2"},
		{"fencing-off", synth.Defect{FencingOff: true, UnfencedSink: true}, UnfencedWrites, "committed without an epoch"},
		{"no-drain", synth.Defect{NoDrain: true}, BridgeDrain, "the witness never saw it send seqs 13-14 (2 of the 15 it enqueued"},
		{"slow-abort", synth.Defect{Shutdown: true, SlowAbort: true}, BridgeAbort, "took 900ms to abort"},
		{"fenced-sink-no-stale-writer", synth.Defect{}, RejectStaleSeen, "never answered REJECT_STALE_EPOCH"},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.check, func(t *testing.T) {
			wantFail(t, synth.Scenario(c.name, c.d), c.check, c.evidence)
		})
	}
}

// The sink fences a stale leader that keeps writing: REJECT_STALE_EPOCH is
// seen and nothing stale commits, although the reconciler is broken.
func TestIgnoreDemotionFencedSink(t *testing.T) {
	s := synth.Scenario("ignore-demotion", synth.Defect{IgnoreDemotion: true})
	for _, c := range []string{RejectStaleSeen, NoStaleCommit, RowEpochMonotonic, FloorMonotonic, RejectedNotInState, EpochHeldByWriter} {
		wantPass(t, s, c)
	}
}

func TestLiveEpochIsNotStale(t *testing.T) {
	// Stamping the live term makes stale writes look current to the sink:
	// only epoch-held-by-writer can tell.
	s := synth.Scenario("live-epoch", synth.Defect{IgnoreDemotion: true, LiveEpoch: true})
	wantPass(t, s, NoStaleCommit)
	wantFail(t, s, EpochHeldByWriter, "was sent by pod-a, which the Lease watch never shows holding term 2 (it held [1])")
}

func TestWatchMustCoverPhases(t *testing.T) {
	s := synth.Scenario("late-watch", synth.Defect{})
	s.Lease.Start = s.Phases[0].Start.Add(time.Second)
	wantInconclusive(t, s, TermMonotonic, "after the scenario began")
	s = synth.Scenario("early-end", synth.Defect{})
	s.Lease.End = s.Phases[len(s.Phases)-1].End.Add(-time.Second)
	wantInconclusive(t, s, TermMonotonic, "before the scenario ended")
	s = synth.Scenario("empty", synth.Defect{})
	s.Lease.Records = nil
	wantInconclusive(t, s, TermMonotonic, "no versions")
}

func TestTermGoesBackAndMalformed(t *testing.T) {
	s := synth.Scenario("back", synth.Defect{})
	r := s.Lease.Records[len(s.Lease.Records)-1]
	r.Term, r.TermRaw, r.ResourceVersion = 1, "1", "9999"
	s.Lease.Records = append(s.Lease.Records, r)
	wantFail(t, s, TermMonotonic, "term went back 2 -> 1")

	s = synth.Scenario("malformed", synth.Defect{})
	s.Lease.Records[3].TermOK, s.Lease.Records[3].TermRaw = false, "0x1"
	wantFail(t, s, TermMonotonic, "not a decimal uint64")

	s = synth.Scenario("recreated", synth.Defect{})
	s.Lease.Records[5].UID = "other"
	wantFail(t, s, TermMonotonic, "not above the highest term seen")

	// A -> released -> B with A's term: repeated although not adjacent.
	s = synth.Scenario("repeat-after-release", synth.Defect{})
	recs := s.Lease.Records
	rel := recs[2]
	rel.Holder, rel.ResourceVersion = "", "1500"
	other := recs[2]
	other.Holder, other.ResourceVersion = "pod-b_000000a1", "1501"
	s.Lease.Records = append(append(append([]history.LeaseRecord{}, recs[:3]...), rel, other), recs[3:]...)
	wantFail(t, s, TermMonotonic, "had already been held by")
}

func TestIdempotencyDoubleApply(t *testing.T) {
	s := synth.Scenario("double-apply", synth.Defect{})
	wantPass(t, s, Idempotency)
	var dup contract.Attempt
	for _, a := range s.Attempts {
		if a.Committed() {
			dup = a
			break
		}
	}
	dup.Seq = uint64(len(s.Attempts) + 1)
	s.Attempts = append(s.Attempts, dup)
	wantFail(t, s, Idempotency, "applied twice")

	s = synth.Scenario("dup-without-apply", synth.Defect{})
	s.Attempts = append(s.Attempts, contract.Attempt{Seq: uint64(len(s.Attempts) + 1), Op: contract.OpPut, Key: "k", Value: "v", Epoch: 2, IdempotencyKey: "never", Result: contract.ResultOKDup, FloorAfter: 2})
	wantFail(t, s, Idempotency, "OK_DUP for a key never applied")
}

func TestSinkHistoryHolesAndFinalState(t *testing.T) {
	s := synth.Scenario("hole", synth.Defect{})
	s.Attempts = append(s.Attempts[:4], s.Attempts[5:]...)
	wantFail(t, s, FloorMonotonic, "has a hole")

	s = synth.Scenario("floor-back", synth.Defect{})
	s.Attempts[len(s.Attempts)-1].FloorAfter = 1
	wantFail(t, s, FloorMonotonic, "floor went back 2 -> 1")

	s = synth.Scenario("state-mismatch", synth.Defect{})
	s.FinalRecords[0].Value = "tampered"
	wantFail(t, s, RejectedNotInState, "the sink's final state says \"tampered\"")

	// A sink that answers REJECT but stores the value anyway.
	s = synth.Scenario("reject-but-store", synth.Defect{IgnoreDemotion: true})
	var rej contract.Attempt
	for _, a := range s.Attempts {
		if a.Result == contract.ResultRejectStale {
			rej = a
		}
	}
	for i := range s.FinalRecords {
		if s.FinalRecords[i].Key == rej.Key {
			s.FinalRecords[i].Value, s.FinalRecords[i].Epoch = rej.Value, rej.Epoch
		}
	}
	wantFail(t, s, RejectedNotInState, "was rejected, yet the final state holds it")
}

func TestUnattributedCommit(t *testing.T) {
	s := synth.Scenario("unattributed", synth.Defect{})
	ghost := s.Witness.Operations[len(s.Witness.Operations)-1]
	ghost.ID++
	ghost.Source = "10.244.9.9:40000" // an address no pod held
	s.Witness.Operations = append(s.Witness.Operations, ghost)
	wantInconclusive(t, s, EpochHeldByWriter, "cannot be attributed: no pod held 10.244.9.9")
}

func TestUnfencedTermWithEpochs(t *testing.T) {
	// Epochs are stamped but the new leader never fences.
	s := synth.Scenario("no-fence", synth.Defect{})
	var kept []contract.Attempt
	for _, a := range s.Attempts {
		if !(a.Op == contract.OpFence && a.Epoch == 2) {
			kept = append(kept, a)
		}
	}
	s.Attempts = kept
	wantFail(t, s, UnfencedWrites, "no fence for term 2 reached the sink")
}

func TestBridgeJoinLate(t *testing.T) {
	s := synth.Scenario("late-join", synth.Defect{})
	for i, ev := range s.Events["pod-a"] {
		if ev.Kind == eventlog.KindBridgeJoined {
			no := false
			s.Events["pod-a"][i].JoinedInTime = &no
			s.Events["pod-a"][i].DurationMs = 2100
		}
	}
	wantFail(t, s, BridgeJoin, "was not joined within drain_timeout 2s")

	s = synth.Scenario("never-joined", synth.Defect{})
	var kept []eventlog.Event
	for _, ev := range s.Events["pod-a"] {
		if ev.Kind != eventlog.KindBridgeJoined {
			kept = append(kept, ev)
		}
	}
	s.Events["pod-a"] = kept
	wantFail(t, s, BridgeJoin, "was never joined")
}

func TestWriteAfterAbort(t *testing.T) {
	s := synth.Scenario("write-after-abort", synth.Defect{Shutdown: true})
	wantPass(t, s, BridgeAbort)
	evs := s.Events["pod-c"]
	last := evs[len(evs)-1]
	evs = append(evs, eventlog.Event{Time: last.Time.Add(time.Millisecond), Pod: "pod-c", Identity: last.Identity, Kind: eventlog.KindWrite, Key: "row-1", Value: "late", Epoch: 2, Result: contract.ResultOK, Status: 200})
	s.Events["pod-c"] = evs
	wantFail(t, s, BridgeAbort, "after its bridge aborted")
}

// A write already in flight when the abort began is answered after it; the
// event's round trip places its sending before the abort, so it passes. The
// same answer with a short round trip was sent after the abort: caught.
func TestWriteInFlightAtAbort(t *testing.T) {
	s := synth.Scenario("write-in-flight", synth.Defect{Shutdown: true})
	evs := s.Events["pod-c"]
	var ab eventlog.Event
	for _, ev := range evs {
		if ev.Kind == eventlog.KindBridgeAborted {
			ab = ev
		}
	}
	if ab.Kind == "" {
		t.Fatal("synthetic shutdown has no bridge_aborted event")
	}
	abortAt := ab.Time.Add(-time.Duration(ab.DurationMs * float64(time.Millisecond)))
	answered := abortAt.Add(time.Millisecond)
	inFlight := eventlog.Event{Time: answered, Pod: "pod-c", Identity: ab.Identity, Kind: eventlog.KindWrite, Key: "row-1", Value: "in-flight",
		Epoch: ab.Epoch, Result: contract.ResultOK, Status: 200, DurationMs: 5}
	// The write goes before the log's final stopped event.
	with := func(ev eventlog.Event) []eventlog.Event {
		return append(append(append([]eventlog.Event(nil), evs[:len(evs)-1]...), ev), evs[len(evs)-1])
	}
	s.Events["pod-c"] = with(inFlight)
	wantPass(t, s, BridgeAbort)

	late := inFlight
	late.DurationMs = 0.5
	s.Events["pod-c"] = with(late)
	wantFail(t, s, BridgeAbort, "after its bridge aborted")
}

func TestEvaluateExpectations(t *testing.T) {
	s := synth.Scenario("no-drain", synth.Defect{NoDrain: true})
	s.Expect[BridgeDrain] = history.MustFail
	s.Expect["no-such-check"] = history.MustPass
	rs := EvaluateScenario(s)
	var sawDrain, sawUnknown bool
	for _, r := range rs {
		switch r.Check {
		case BridgeDrain:
			sawDrain = true
			if r.Status == StatusPass || !r.OK {
				t.Errorf("caught negative control must be OK: %+v", r)
			}
		case "no-such-check":
			sawUnknown = true
			if r.OK {
				t.Errorf("unknown check must not be OK")
			}
		}
	}
	if !sawDrain || !sawUnknown || AllOK(rs) {
		t.Errorf("drain %v unknown %v allOK %v", sawDrain, sawUnknown, AllOK(rs))
	}
	// A control that fails only for lack of evidence is not caught.
	s = synth.Scenario("no-evidence", synth.Defect{NoDrain: true})
	s.Expect = map[string]history.Expectation{BridgeDrain: history.MustFail}
	var kept []eventlog.Event
	for _, ev := range s.Events["pod-a"] {
		if ev.Kind != eventlog.KindBridgeDrained {
			kept = append(kept, ev)
		}
	}
	s.Events["pod-a"] = kept
	if rs := EvaluateScenario(s); rs[0].Status == StatusPass || rs[0].Status != StatusInconclusive || rs[0].OK {
		t.Errorf("an inconclusive failure must not count as a caught control: %+v", rs[0])
	}
	// A broken variant that passes is not OK.
	s = synth.Scenario("escaped", synth.Defect{})
	s.Expect = map[string]history.Expectation{BridgeDrain: history.MustFail}
	if rs := EvaluateScenario(s); AllOK(rs) {
		t.Errorf("a negative control that passes must fail the suite: %+v", rs)
	}
}

func TestOutcome(t *testing.T) {
	pass, fail, unknown := Verdict{Status: StatusPass}, Verdict{Status: StatusViolation}, Verdict{Status: StatusInconclusive}
	for _, c := range []struct {
		exp  history.Expectation
		v    Verdict
		want Outcome
		ok   bool
	}{
		{history.MustPass, pass, Pass, true},
		{history.MustPass, unknown, Inconclusive, false},
		{history.MustPass, fail, Fail, false},
		{history.MustFail, fail, Caught, true},
		{history.MustFail, pass, Escaped, false},
		{history.MustFail, unknown, Inconclusive, false}, // never caught
		{history.Any, pass, Informative, true},
		{history.Any, fail, Informative, true},
		{history.Any, unknown, Informative, true},
		{"later", pass, Inconclusive, false}, // an expectation this build does not know
	} {
		r := Result{Expected: c.exp, Verdict: c.v}
		if got := r.Outcome(); got != c.want || got.OK() != c.ok {
			t.Errorf("expected %s, verdict %+v: got %s (ok %v), want %s (ok %v)", c.exp, c.v, got, got.OK(), c.want, c.ok)
		}
	}
}
