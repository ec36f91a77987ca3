package check

import (
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// misuseBase is a correct run with no collect phase (so the harness never
// stopped the writers) and the index of its last write of the first term.
func misuseBase(t *testing.T) (*history.Scenario, int) {
	t.Helper()
	s := synth.Scenario("misuse", synth.Defect{})
	wantPass(t, s, IdempotencyMisuse)
	s.Phases = slices.DeleteFunc(s.Phases, func(p history.Phase) bool { return p.Name == PhaseCollect })
	for i := len(s.Witness.Operations) - 1; i >= 0; i-- {
		if o := s.Witness.Operations[i]; o.Method == "PUT" && o.Type == record.OK && o.Harness == "" {
			return s, i
		}
	}
	t.Fatal("no committed write in the synthetic run")
	return nil, 0
}

// appendOpAt adds o to the witness's history as a new operation, sent at at.
func appendOpAt(s *history.Scenario, o record.Operation, at time.Time) {
	o.ID = s.Witness.Operations[len(s.Witness.Operations)-1].ID + 1
	o.Invoked, o.Completed = at, at.Add(5*time.Millisecond)
	s.Witness.Operations = append(s.Witness.Operations, o)
}

func TestIdempotencyMisuse(t *testing.T) {
	// One key for another value, or another record key: two logical writes.
	for name, change := range map[string]func(*record.Operation){
		"another value":      func(o *record.Operation) { o.ValueSHA256 = "00" + o.ValueSHA256[2:] },
		"another record key": func(o *record.Operation) { o.Key = o.Key + "-other" },
	} {
		s, i := misuseBase(t)
		s.Name = name
		o := s.Witness.Operations[i]
		change(&o)
		o.Result, o.Status = contract.ResultOKDup, 200 // even when a lax sink accepted it
		appendOpAt(s, o, o.Completed.Add(time.Millisecond))
		wantFail(t, s, IdempotencyMisuse, "names two logical writes")
	}
	// The sink's 422 is the same finding from its side.
	s, i := misuseBase(t)
	o := s.Witness.Operations[i]
	o.Type, o.Status, o.Result = record.Fail, 422, contract.ResultConflict
	s.Witness.Operations[i] = o
	wantFail(t, s, IdempotencyMisuse, "was answered 422 IDEMPOTENCY_CONFLICT")

	// A write without a key.
	s, i = misuseBase(t)
	s.Witness.Operations[i].IdempotencyKey = ""
	wantFail(t, s, IdempotencyMisuse, "has no Idempotency-Key")
}

func TestAbandonedWrites(t *testing.T) {
	lost := func(s *history.Scenario, i int) record.Operation {
		o := s.Witness.Operations[i]
		o.Type, o.Status, o.Result, o.Error = record.Info, 0, "", "upstream: connection reset"
		s.Witness.Operations[i] = o
		return o
	}
	// The last write of the run lost its answer and its sender, which
	// still led (no takeover ended its term, nobody stopped it), never
	// sent it again.
	s, i := misuseBase(t)
	o := lost(s, i)
	s.Lease.End = o.Completed.Add(time.Minute)
	wantFail(t, s, IdempotencyMisuse, "was never retried")

	// Retried with its key and answered OK_DUP: settled.
	retry := o
	retry.Type, retry.Status, retry.Result, retry.Error = record.OK, 200, contract.ResultOKDup, ""
	appendOpAt(s, retry, o.Completed.Add(300*time.Millisecond))
	wantPass(t, s, IdempotencyMisuse)

	// A 5xx is no definite answer either.
	s, i = misuseBase(t)
	s.Witness.Operations[i].Type, s.Witness.Operations[i].Status = record.Info, 500
	wantFail(t, s, IdempotencyMisuse, "got 500")

	// Its sender could no longer send before the retry was due: the
	// harness stopped the writers, or its pod was deleted.
	s, i = misuseBase(t)
	o = lost(s, i)
	s.Phases = append(s.Phases, history.Phase{Name: PhaseCollect, Start: o.Completed.Add(100 * time.Millisecond), End: o.Completed.Add(time.Minute)})
	wantPass(t, s, IdempotencyMisuse)
	s, i = misuseBase(t)
	o = lost(s, i)
	pod, _ := SenderOf(s, o)
	s.Chaos = append(s.Chaos, history.ChaosWindow{Kind: string(fault.PodDelete), Pod: pod, Injected: o.Completed.Add(100 * time.Millisecond), Recovered: o.Completed.Add(time.Second)})
	wantPass(t, s, IdempotencyMisuse)
	// Another pod's deletion does not excuse it.
	s.Chaos[len(s.Chaos)-1].Pod = "pod-zz"
	wantFail(t, s, IdempotencyMisuse, "was never retried")

	// A pause of its sender: the wait for the retry starts again at the
	// thaw, so a retry right after the thaw is in time, and none at all
	// is still abandonment.
	s, i = misuseBase(t)
	o = lost(s, i)
	pod, _ = SenderOf(s, o)
	thaw := o.Completed.Add(time.Minute)
	s.Chaos = append(s.Chaos, history.ChaosWindow{Kind: string(fault.Pause), Pod: pod, Injected: o.Completed.Add(10 * time.Millisecond), Recovered: thaw})
	s.Lease.End = thaw.Add(time.Minute)
	wantFail(t, s, IdempotencyMisuse, "was never retried")
	retry = o
	retry.Type, retry.Status, retry.Result, retry.Error = record.OK, 200, contract.ResultOKDup, ""
	appendOpAt(s, retry, thaw.Add(200*time.Millisecond))
	wantPass(t, s, IdempotencyMisuse)
}

// A write of a term that ended (a takeover, then drain_timeout) need not
// be retried past the end; one abandoned while the term still ran must.
func TestAbandonedWriteOfAnEndedTerm(t *testing.T) {
	s := synth.Scenario("ended", synth.Defect{})
	tos := Takeovers(s)
	var to Takeover
	for _, x := range tos {
		if x.From != "" {
			to = x
		}
	}
	if to.From == "" {
		t.Fatal("no takeover in the synthetic run")
	}
	// The old term's last write before the takeover, its answer lost just
	// before drain_timeout ran out.
	i := -1
	for j, o := range s.Witness.Operations {
		if o.Method == "PUT" && o.EpochValid() && o.Epoch == to.FromTerm && o.Harness == "" {
			i = j
		}
	}
	if i < 0 {
		t.Fatal("no write of the old term")
	}
	end := to.Observed.Add(s.Config.DrainTimeout.D())
	o := s.Witness.Operations[i]
	o.Type, o.Status, o.Result = record.Info, 0, ""
	o.Invoked, o.Completed = end.Add(-200*time.Millisecond), end.Add(-100*time.Millisecond)
	s.Witness.Operations[i] = o
	wantPass(t, s, IdempotencyMisuse)
	// The same write lost long before the takeover: its sender led on.
	o.Invoked, o.Completed = to.Observed.Add(-time.Minute), to.Observed.Add(-time.Minute+time.Millisecond)
	s.Witness.Operations[i] = o
	wantFail(t, s, IdempotencyMisuse, "was never retried")
}

// A write sent after the harness began stopping the writers (the
// collect phase) got no answer: its sender was stopping, not abandoning
// it (seen on the local target, neg-racy-sink).
func TestWriteSentWhileStopping(t *testing.T) {
	s, i := misuseBase(t)
	o := s.Witness.Operations[i]
	o.Type, o.Status, o.Result, o.Error = record.Info, 0, "", "client went away before the answer"
	s.Witness.Operations[i] = o
	s.Lease.End = o.Completed.Add(time.Minute)
	s.Phases = append(s.Phases, history.Phase{Name: PhaseCollect, Start: o.Invoked.Add(-50 * time.Millisecond), End: o.Completed.Add(time.Minute)})
	wantPass(t, s, IdempotencyMisuse)
}
