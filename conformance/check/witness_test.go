package check

import (
	"testing"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

func TestWitnessAgrees(t *testing.T) {
	wantPass(t, synth.Scenario("correct", synth.Defect{}), WitnessAgrees)
	// A lying sink: its history hides a commit a client saw acknowledged.
	wantFail(t, synth.Scenario("hide-commit", synth.Defect{HideCommit: true}), WitnessAgrees, "the sink's history records it 0 time(s)")

	// Its answers differ from its records: it answered OK, recorded a reject.
	s := synth.Scenario("answers-differ", synth.Defect{})
	for i, a := range s.Attempts {
		if a.Committed() && a.Op == contract.OpPut {
			s.Attempts[i].Result, s.Attempts[i].Status = contract.ResultRejectStale, 409
			break
		}
	}
	wantFail(t, s, WitnessAgrees, "a client was answered OK")

	// It records an attempt no client sent.
	s = synth.Scenario("invented", synth.Defect{})
	last := s.Attempts[len(s.Attempts)-1]
	last.Seq++
	last.Key, last.Value, last.IdempotencyKey = "ghost", "boo", "ghost-1"
	s.Attempts = append(s.Attempts, last)
	wantFail(t, s, WitnessAgrees, "the witness saw 0 sent")

	// A client whose answer was lost (info) may still have committed.
	s = synth.Scenario("lost-answer", synth.Defect{})
	for i, o := range s.Witness.Operations {
		if o.Type == record.OK {
			s.Witness.Operations[i].Type, s.Witness.Operations[i].Status, s.Witness.Operations[i].Result = record.Info, 0, ""
			break
		}
	}
	wantPass(t, s, WitnessAgrees)
	// A forward cut mid-body when its client went away: the sink read part
	// of it and refused it; the witness, which read it all, got no answer.
	s = synth.Scenario("cut-forward", synth.Defect{})
	cutOp := record.Operation{ID: 998, Method: "PUT", Key: "row-8", Epoch: 1, IdempotencyKey: "cut-1", ValueLen: 12, ValueSHA256: "5d6a0b776ca3", Type: record.Info,
		Error: "client went away before the answer: no answer: context canceled"}
	s.Witness.Operations = append(s.Witness.Operations, cutOp)
	refused := contract.Attempt{Seq: 999, Op: contract.OpPut, Key: "row-8", Epoch: 1, IdempotencyKey: "cut-1", Status: 400, Result: contract.ResultBadRequest}
	s.Attempts = append(s.Attempts, refused)
	wantPass(t, s, WitnessAgrees)
	// Not for a commit: a sink that commits a body no client sent is caught.
	committed := refused
	committed.Status, committed.Result = 200, contract.ResultOK
	s.Attempts[len(s.Attempts)-1] = committed
	wantFail(t, s, WitnessAgrees, "the witness saw 0 sent")
	// Nor for a refusal no unanswered forward explains.
	s.Attempts[len(s.Attempts)-1] = refused
	s.Witness.Operations[len(s.Witness.Operations)-1].Type, s.Witness.Operations[len(s.Witness.Operations)-1].Status = record.Fail, 409
	wantFail(t, s, WitnessAgrees, "the witness saw 0 sent")
	// A request that never reached the sink (dial failed) is not counted.
	s = synth.Scenario("dial-failed", synth.Defect{})
	s.Witness.Operations = append(s.Witness.Operations, record.Operation{ID: 999, Method: "PUT", Key: "row-9", Type: record.Fail})
	wantPass(t, s, WitnessAgrees)
}

func TestWitnessEvidenceMissing(t *testing.T) {
	s := synth.Scenario("no-witness", synth.Defect{})
	s.Witness = nil
	wantInconclusive(t, s, WitnessAgrees, "no witness history")
	s = synth.Scenario("dropped", synth.Defect{})
	s.Witness.Dropped = 3
	wantInconclusive(t, s, WitnessAgrees, "the witness dropped 3 operations")
	// A sink restart mid-run: its in-memory history lost the attempts
	// before it, so every sink-side check is INCONCLUSIVE.
	s = synth.Scenario("sink-restarted", synth.Defect{})
	for i := range s.Witness.Operations {
		s.Witness.Operations[i].SinkInstance = "boot-1"
		if i >= len(s.Witness.Operations)/2 {
			s.Witness.Operations[i].SinkInstance = "boot-2"
		}
	}
	for _, c := range []string{NoStaleCommit, Idempotency, WitnessAgrees} {
		wantInconclusive(t, s, c, "the sink restarted during the run")
	}
	s = synth.Scenario("no-witness-read", synth.Defect{})
	s.MissingEvidence(history.EvidenceWitness, "witness history: connection refused")
	wantInconclusive(t, s, WitnessAgrees, "witness evidence incomplete")
}
