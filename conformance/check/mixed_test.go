package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
)

// In a mixed run the witness's faults on the leader (held writes, lost
// answers) and a sink crash are windows no takeover must follow: the
// held-writes step's takeover is its partition's, and a pause on the
// leader still must end in one.
func TestMixedWindowsNeedNoTakeover(t *testing.T) {
	s := synth.Scenario("mixed", synth.Defect{})
	cut := s.Chaos[0]
	before := cut.Injected.Add(-10 * time.Millisecond)
	after := cut.Recovered.Add(time.Second)
	s.Chaos = append(s.Chaos,
		history.ChaosWindow{Kind: string(fault.HeldWrites), Pod: cut.Pod, Injected: before, Recovered: cut.Recovered},
		history.ChaosWindow{Kind: string(fault.LostAnswers), Pod: "pod-b", Injected: after, Recovered: after.Add(time.Second)},
		history.ChaosWindow{Kind: string(fault.SinkCrash), Pod: "sink-0", Injected: after, Recovered: after.Add(time.Second)})
	tos, problems, notes := TakeoverTimes(s)
	if len(problems) != 0 || len(tos) != 1 || tos[0].Cause != string(fault.Partition) {
		t.Fatalf("takeovers %+v problems %v", tos, problems)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "sink-crash of sink-0 at "+ts(after)+": a fault of the sink") || strings.Contains(all, "sink-0 at "+ts(after)+" hit a follower") {
		t.Fatalf("the sink crash's note: %v", notes)
	}
	wantPass(t, s, FailoverLiveness)
	// A pause of the leader with no takeover after it is a violation.
	p := synth.Scenario("pause-no-takeover", synth.Defect{})
	held := lastHeld(p) // the last record with a holder: none after it takes over
	p.Chaos = append(p.Chaos, history.ChaosWindow{Kind: string(fault.Pause), Pod: PodOf(p, held.Holder), Injected: held.Observed, Recovered: held.Observed.Add(time.Second)})
	if _, problems, _ := TakeoverTimes(p); len(problems) == 0 {
		t.Fatalf("a pause of the leader with no takeover after it passed")
	}
}

// After a sink restart the final state holds rows the surviving history
// never wrote: the evidence names them in key order, the same on every
// re-check (fencecheck check compares it with the run's).
func TestRejectedNotInStateEvidenceIsStable(t *testing.T) {
	s := synth.Scenario("restarted", synth.Defect{})
	for i := range 30 {
		s.FinalRecords = append(s.FinalRecords, contract.Record{Key: fmt.Sprintf("lost-%02d", i), Value: "v", Epoch: 2})
	}
	first := judge(t, RejectedNotInState, s)
	for range 20 {
		if again := judge(t, RejectedNotInState, s); !slices.Equal(again.Evidence, first.Evidence) {
			t.Fatalf("evidence differs between two judgements:\n%v\n%v", first.Evidence, again.Evidence)
		}
	}
	if !strings.Contains(strings.Join(first.Evidence, "\n"), "row lost-00=") {
		t.Fatalf("evidence %v", first.Evidence)
	}
}
