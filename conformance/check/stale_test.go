package check

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/witness/record"
)

// recreate appends to s's watch: the Lease deleted, then re-created with a
// new UID for holder at term, then renewed once.
func recreate(s *history.Scenario, holder string, term uint64) {
	recs := s.Lease.Records
	last := recs[len(recs)-1]
	del := last
	del.Event, del.ResourceVersion, del.Observed = "DELETED", "9000", last.Observed.Add(100*time.Millisecond)
	add := history.LeaseRecord{Observed: del.Observed.Add(900 * time.Millisecond), Event: "ADDED", ResourceVersion: "9001", UID: "second-incarnation",
		Holder: holder, TermRaw: strconv.FormatUint(term, 10), Term: term, TermOK: true}
	renew := add
	renew.Event, renew.ResourceVersion, renew.Observed = "MODIFIED", "9002", add.Observed.Add(time.Second)
	s.Lease.Records = append(recs, del, add, renew)
	s.Lease.End = renew.Observed.Add(time.Second)
}

// lastHeld is the last record of the watch with a holder.
func lastHeld(s *history.Scenario) history.LeaseRecord {
	for i := len(s.Lease.Records) - 1; ; i-- {
		if s.Lease.Records[i].Holder != "" {
			return s.Lease.Records[i]
		}
	}
}

func TestRecreatedLeaseContinuesAboveHighestTerm(t *testing.T) {
	s := synth.Scenario("recreated-by-holder", synth.Defect{})
	last := lastHeld(s)
	recreate(s, last.Holder, last.Term+1)
	wantPass(t, s, TermMonotonic)
	wantPass(t, s, TermStep)

	s = synth.Scenario("recreated-by-other", synth.Defect{})
	recreate(s, "pod-b_000000a1", last.Term+1)
	wantPass(t, s, TermMonotonic)
	wantPass(t, s, TermStep)
	if tos := Takeovers(s); tos[len(tos)-1].From != last.Holder || tos[len(tos)-1].To != "pod-b_000000a1" {
		t.Errorf("a re-creation by another replica is a takeover from the old holder: %+v", tos[len(tos)-1])
	}
}

// The broken mode: the re-created Lease restarts at term 1.
func TestRecreatedLeaseAtTermOneFails(t *testing.T) {
	for _, holder := range []string{"", "pod-b_000000a1"} {
		s := synth.Scenario("restart-at-1", synth.Defect{})
		last := lastHeld(s)
		if holder == "" {
			holder = last.Holder
		}
		recreate(s, holder, 1)
		wantFail(t, s, TermMonotonic, "starts at term 1, not above the highest term seen before it, 2")
		wantFail(t, s, TermStep, "has term 1, want 3")
	}
	// Even from term 1: a re-created Lease at term 1 repeats it.
	s := synth.Scenario("restart-from-1", synth.Defect{})
	s.Lease.Records = s.Lease.Records[:3] // pod-a at term 1 only
	recreate(s, s.Lease.Records[0].Holder, 1)
	wantFail(t, s, TermMonotonic, "starts at term 1, not above the highest term seen before it, 1")
}

func TestFailoverBoundArithmetic(t *testing.T) {
	c := history.Config{LeaseDuration: history.Duration(4 * time.Second), RetryPeriod: history.Duration(time.Second),
		WriteInterval: history.Duration(200 * time.Millisecond)}
	rtt := 14 * time.Millisecond
	// 4s + 2 × 1s × 2.2 + 200ms + 14ms
	if got, want := FailoverBound(c, false, rtt), 8614*time.Millisecond; got != want {
		t.Errorf("lease-expiry bound %v, want %v", got, want)
	}
	// 1s × 2.2 + 200ms + 14ms
	if got, want := FailoverBound(c, true, rtt), 2414*time.Millisecond; got != want {
		t.Errorf("release bound %v, want %v", got, want)
	}
}

func TestTakeoverTimes(t *testing.T) {
	s := synth.Scenario("timed", synth.Defect{})
	ts, problems, _ := TakeoverTimes(s)
	if len(problems) != 0 || len(ts) != 1 {
		t.Fatalf("takeovers %+v problems %v", ts, problems)
	}
	tt := ts[0]
	// Cut at 5s, after the last renew (4s, seen at 4.02s): the clock starts
	// at the cut. The new term's fence and first write each take 2ms at the
	// witness.
	if tt.Cause != string(fault.Partition) || tt.FromTerm != 1 || tt.ToTerm != 2 || tt.Released || tt.StartedBy() != "the injection" || tt.Took != 4006*time.Millisecond {
		t.Errorf("unexpected takeover %+v", tt)
	}
	if tt.RoundTrips != 4*time.Millisecond || tt.Bound != FailoverBound(s.Config, false, 4*time.Millisecond) || !tt.Within() {
		t.Errorf("round trips %v bound %v within %v", tt.RoundTrips, tt.Bound, tt.Within())
	}
	wantPass(t, s, FailoverLiveness)
	// A cut that starts before the last renew the watch saw: the clock
	// starts at that renew (no follower could start counting earlier).
	early := synth.Scenario("early", synth.Defect{})
	early.Chaos[0].Injected = early.Chaos[0].Injected.Add(-2 * time.Second)
	if ts, _, _ := TakeoverTimes(early); len(ts) != 1 || ts[0].StartedBy() != "the last renew" || ts[0].Took != 4986*time.Millisecond {
		t.Errorf("clock from the last renew: %+v", ts)
	}

	// The defect: the new leader's first acknowledged write comes 9s late.
	late := synth.Scenario("late", synth.Defect{})
	for i := range late.Witness.Operations {
		if o := &late.Witness.Operations[i]; o.Epoch == 2 {
			o.Invoked, o.Completed = o.Invoked.Add(9*time.Second), o.Completed.Add(9*time.Second)
		}
	}
	wantFail(t, late, FailoverLiveness, "OVER: partition of pod-a: term 1 -> 2")

	// No new-term write acknowledged at all.
	never := synth.Scenario("never", synth.Defect{})
	var kept = never.Witness.Operations[:0]
	for _, o := range never.Witness.Operations {
		if o.Epoch != 2 {
			kept = append(kept, o)
		}
	}
	never.Witness.Operations = kept
	wantFail(t, never, FailoverLiveness, "never committed a write the witness saw acknowledged")

	// No evidence: no witness, no chaos.
	blind := synth.Scenario("blind", synth.Defect{})
	blind.Witness = nil
	wantInconclusive(t, blind, FailoverLiveness, "no witness history")
	calm := synth.Scenario("calm", synth.Defect{})
	calm.Chaos = nil
	wantInconclusive(t, calm, FailoverLiveness, "no chaos window")
}

// A release before the takeover: the tighter bound, timed from the release.
func TestTakeoverAfterReleaseUsesReleaseBound(t *testing.T) {
	s := synth.Scenario("release", synth.Defect{})
	tos := Takeovers(s)
	i := tos[len(tos)-1].Index
	rel := s.Lease.Records[i-1]
	rel.Holder, rel.ResourceVersion, rel.Observed = "", "1499", s.Lease.Records[i].Observed.Add(-300*time.Millisecond)
	s.Lease.Records = append(append(append([]history.LeaseRecord{}, s.Lease.Records[:i]...), rel), s.Lease.Records[i:]...)
	s.Chaos[0].Kind, s.Chaos[0].Injected = string(fault.RollingRestart), rel.Observed.Add(-time.Second)
	ts, _, _ := TakeoverTimes(s)
	if len(ts) != 1 || !ts[0].Released || !ts[0].Start.Equal(rel.Observed) || ts[0].StartedBy() != "the release" {
		t.Fatalf("takeover after a release: %+v", ts)
	}
	if ts[0].Bound != FailoverBound(s.Config, true, ts[0].RoundTrips) || !ts[0].Within() {
		t.Errorf("release bound %v took %v", ts[0].Bound, ts[0].Took)
	}
	// The same takeover while the driver stops everyone to collect is not timed.
	s.Phases = slices.DeleteFunc(s.Phases, func(p history.Phase) bool { return p.Name == "collect" }) // synth's own, at the end
	s.Phases = append(s.Phases, history.Phase{Name: "collect", Start: rel.Observed.Add(-time.Millisecond), End: rel.Observed.Add(time.Minute)})
	if ts, _, notes := TakeoverTimes(s); len(ts) != 0 || !strings.Contains(strings.Join(notes, "\n"), "to collect: not timed") {
		t.Errorf("a takeover during collection was timed: %+v %v", ts, notes)
	}
}

func TestStaleLeaderActed(t *testing.T) {
	// The old leader ignores its demotion: it sends term 1 after term 2's grant.
	s := synth.Scenario("stale", synth.Defect{IgnoreDemotion: true})
	wantPass(t, s, StaleLeaderActed)
	v := verdict(t, s, StaleLeaderActed)
	if !strings.Contains(strings.Join(v.Evidence, "\n"), "409 REJECT_STALE_EPOCH") {
		t.Errorf("evidence lacks the answers: %v", v.Evidence)
	}
	// A leader that stepped down before the grant: the fault never took
	// effect. That is unknown, not a violation: a leader that sends
	// nothing stale is safer than the contract asks (must-pass still
	// counts it against our fixture, whose pause must make it act stale).
	wantInconclusive(t, synth.Scenario("prompt", synth.Defect{}), StaleLeaderActed, "the fault did not make the leader act stale")
	blind := synth.Scenario("blind", synth.Defect{IgnoreDemotion: true})
	blind.Witness = nil
	wantInconclusive(t, blind, StaleLeaderActed, "no witness history")
	calm := synth.Scenario("calm", synth.Defect{})
	calm.Lease.Records = calm.Lease.Records[:3]
	wantInconclusive(t, calm, StaleLeaderActed, "no takeover")
}

// A Lease re-created by its own holder under a new term ends the old
// term for its writers as a takeover does: a write of the old term sent
// past drain_timeout after the re-creation fails old-leader-steps-down.
func TestRecreatedByHolderIsATermChange(t *testing.T) {
	s := synth.Scenario("recreated-by-holder", synth.Defect{})
	last := lastHeld(s)
	recreate(s, last.Holder, last.Term+1)
	tos := Takeovers(s)
	if to := tos[len(tos)-1]; to.From != last.Holder || to.To != last.Holder || to.FromTerm != last.Term || to.ToTerm != last.Term+1 {
		t.Fatalf("the re-creation by its holder: %+v, want %s term %d -> %d", to, last.Holder, last.Term, last.Term+1)
	}
	self := 0 // the renew after it is not another one
	for _, to := range tos {
		if to.From == to.To {
			self++
		}
	}
	if self != 1 {
		t.Fatalf("%d takeovers by the same holder, want the one re-creation: %+v", self, tos)
	}
	var put record.Operation
	for _, o := range s.Witness.Operations {
		if o.Method == "PUT" && o.EpochValid() && o.Epoch == last.Term {
			put = o
		}
	}
	if put.ID == 0 {
		t.Fatal("no write of the old term in the synthetic history")
	}
	late := put
	late.ID = s.Witness.Operations[len(s.Witness.Operations)-1].ID + 1
	late.Invoked = tos[len(tos)-1].Observed.Add(s.Config.DrainTimeout.D() + time.Second)
	late.Completed = late.Invoked.Add(time.Millisecond)
	s.Witness.Operations = append(s.Witness.Operations, late)
	wantFail(t, s, OldLeaderStepsDown, "past drain_timeout")
}
