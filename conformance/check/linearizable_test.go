package check

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

func TestLinearizable(t *testing.T) {
	wantPass(t, synth.Scenario("correct", synth.Defect{}), Linearizable)
	wantPass(t, synth.Scenario("shutdown", synth.Defect{Shutdown: true}), Linearizable)
	// A stale leader's writes commit after the new term's fence: no order
	// of a fenced register explains them.
	wantFail(t, synth.Scenario("unfenced", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}), Linearizable, "left out, first to finish: #22 put row-1")
	// Rejected stale writes are what a fenced register does.
	wantPass(t, synth.Scenario("ignore-demotion", synth.Defect{IgnoreDemotion: true}), Linearizable)
}

// lastFence is the witness's last acknowledged fence.
func lastFence(t *testing.T, s *history.Scenario) record.Operation {
	t.Helper()
	for i := len(s.Witness.Operations) - 1; i >= 0; i-- {
		if o := s.Witness.Operations[i]; o.Path == contract.PathFence && o.Type == record.OK {
			return o
		}
	}
	t.Fatal("no fence in the synthetic witness")
	return record.Operation{}
}

func appendOp(s *history.Scenario, o record.Operation) {
	o.ID = uint64(len(s.Witness.Operations) + 1)
	s.Witness.Operations = append(s.Witness.Operations, o)
	s.Witness.Read = o.Completed.Add(time.Millisecond)
}

// An OK at an epoch below a floor the sink acknowledged earlier.
func TestLinearizableOKBelowTheFloor(t *testing.T) {
	s := synth.Scenario("ok-below-floor", synth.Defect{})
	f := lastFence(t, s)
	at := s.Witness.Read.Add(time.Second)
	appendOp(s, record.Operation{Source: "10.244.1.5:40001", Invoked: at, Completed: at.Add(time.Millisecond), Method: "PUT", Path: contract.RecordPath("row-x"), Key: "row-x",
		Epoch: f.Epoch - 1, EpochHeader: fmt.Sprint(f.Epoch - 1), IdempotencyKey: "late-1", ValueSHA256: "abcd",
		Type: record.OK, Status: 200, Result: contract.ResultOK, ResultEpoch: f.Epoch - 1})
	wantFail(t, s, Linearizable, fmt.Sprintf(`#%d put row-x="abcd" epoch %d`, len(s.Witness.Operations), f.Epoch-1))
	// The same write rejected is what the register says.
	o := &s.Witness.Operations[len(s.Witness.Operations)-1]
	o.Type, o.Status, o.Result, o.ResultEpoch, o.HighestEpoch = record.Fail, 409, contract.ResultRejectStale, 0, f.Epoch
	wantPass(t, s, Linearizable)
	// A 409 that names another floor is not.
	o.HighestEpoch = f.Epoch + 5
	wantFail(t, s, Linearizable, "REJECT_STALE_EPOCH highest_epoch")
}

// A final record whose value no client ever wrote.
func TestLinearizableFinalValueNeverWritten(t *testing.T) {
	s := synth.Scenario("ghost-value", synth.Defect{})
	s.FinalRecords[0].Value = "nobody wrote this"
	wantFail(t, s, Linearizable, "final read get "+s.FinalRecords[0].Key)
	// A record of a key nobody wrote.
	s = synth.Scenario("ghost-key", synth.Defect{})
	s.FinalRecords = append(s.FinalRecords, contract.Record{Key: "ghost", Value: "boo", Epoch: 1})
	wantFail(t, s, Linearizable, "final read get ghost")
	// A committed key missing from the final state.
	s = synth.Scenario("lost-key", synth.Defect{})
	s.FinalRecords = s.FinalRecords[1:]
	wantFail(t, s, Linearizable, "final read get")
}

// A write whose answer was lost may or may not have applied: both final
// states pass.
func TestLinearizableLostAnswer(t *testing.T) {
	for _, applied := range []bool{true, false} {
		s := synth.Scenario("lost-answer", synth.Defect{})
		at := s.Witness.Read.Add(time.Second)
		f := lastFence(t, s)
		appendOp(s, record.Operation{Source: "10.244.1.5:40002", Invoked: at, Completed: at.Add(time.Second), Method: "PUT", Path: contract.RecordPath("row-new"), Key: "row-new",
			Epoch: f.Epoch, EpochHeader: fmt.Sprint(f.Epoch), IdempotencyKey: "new-1", ValueSHA256: sha("v-new"),
			Type: record.Info, Error: "upstream timeout"})
		if applied {
			s.FinalRecords = append(s.FinalRecords, contract.Record{Key: "row-new", Value: "v-new", Epoch: f.Epoch})
		}
		wantPass(t, s, Linearizable)
		// Still in flight when the witness was read: the same.
		s.Witness.Operations[len(s.Witness.Operations)-1].Type = record.Invoke
		wantPass(t, s, Linearizable)
	}
	// A dial that failed sent nothing; the final state cannot hold it.
	s := synth.Scenario("dial-failed", synth.Defect{})
	appendOp(s, record.Operation{Source: "10.244.1.5:40003", Invoked: s.Witness.Read, Completed: s.Witness.Read, Method: "PUT", Key: "row-9", EpochHeader: "1", Epoch: 1, ValueSHA256: sha("x"), Type: record.Fail})
	wantPass(t, s, Linearizable)
}

func TestLinearizableUndecidedIsInconclusive(t *testing.T) {
	defer func(d time.Duration) { linearizeTimeout = d }(linearizeTimeout)
	linearizeTimeout = time.Nanosecond
	wantInconclusive(t, synth.Scenario("timeout", synth.Defect{IgnoreDemotion: true}), Linearizable, "porcupine could not decide")
	s := synth.Scenario("no-witness", synth.Defect{})
	s.Witness = nil
	wantInconclusive(t, s, Linearizable, "no witness history")
	s = synth.Scenario("dropped", synth.Defect{})
	s.Witness.Dropped = 1
	wantInconclusive(t, s, Linearizable, "the witness dropped 1 operations")
}

func TestLinearizabilityHTML(t *testing.T) {
	html, ok, err := LinearizabilityHTML(synth.Scenario("unfenced", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}))
	if err != nil || !ok || !strings.Contains(string(html), "<html") {
		t.Fatalf("want porcupine's page for a violation: ok=%v err=%v, %d bytes", ok, err, len(html))
	}
	if !strings.Contains(string(html), "left out") {
		t.Error("the page does not mark the operations that witness the violation")
	}
	// Judged again, the same evidence: reports are re-checked offline.
	a := verdict(t, synth.Scenario("unfenced", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}), Linearizable)
	b := verdict(t, synth.Scenario("unfenced", synth.Defect{IgnoreDemotion: true, UnfencedSink: true}), Linearizable)
	if strings.Join(a.Evidence, "\n") != strings.Join(b.Evidence, "\n") {
		t.Errorf("evidence differs between two runs:\n%v\n%v", a.Evidence, b.Evidence)
	}
	if _, ok, err := LinearizabilityHTML(synth.Scenario("correct", synth.Defect{})); ok || err != nil {
		t.Errorf("a linearizable history has nothing to draw: ok=%v err=%v", ok, err)
	}
}

func sha(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

// Refusals before the fencing rule say nothing of the register; a 2xx
// whose body did not parse took effect somehow.
func TestLinearizableOtherAnswers(t *testing.T) {
	s := synth.Scenario("refused", synth.Defect{})
	at := s.Witness.Read
	for _, st := range []int{400, 401, 413} {
		appendOp(s, record.Operation{Source: "10.244.1.5:40004", Invoked: at, Completed: at, Method: "PUT", Path: contract.RecordPath("row-big"), Key: "row-big",
			EpochHeader: "1", Epoch: 1, ValueSHA256: sha("big"), Type: record.Fail, Status: st, Result: contract.ResultBadRequest})
	}
	wantPass(t, s, Linearizable)
	f := lastFence(t, s)
	appendOp(s, record.Operation{Source: "10.244.1.5:40004", Invoked: at, Completed: at, Method: "PUT", Path: contract.RecordPath("row-new"), Key: "row-new",
		EpochHeader: fmt.Sprint(f.Epoch), Epoch: f.Epoch, ValueSHA256: sha("v"), Type: record.OK, Status: 200})
	wantPass(t, s, Linearizable)
	s.FinalRecords = append(s.FinalRecords, contract.Record{Key: "row-new", Value: "v", Epoch: f.Epoch})
	wantPass(t, s, Linearizable)
}
