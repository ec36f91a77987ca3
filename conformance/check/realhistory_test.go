package check

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// realPartitionHeal is a history the local target recorded for
// partition-heal (trimmed to the Lease watch, the witness, the pod
// addresses, the phases and the reconcilers' bridge events; see
// testdata/README.md).
func realPartitionHeal(t *testing.T) *history.Scenario {
	t.Helper()
	r, err := history.Load("testdata/partition-heal-local.json")
	if err != nil {
		t.Fatal(err)
	}
	return r.Scenarios[0]
}

// The proof of issue 10 for old-leader-steps-down: a real correct run
// passes, and the same run edited so that the old leader keeps sending
// after it lost the Lease fails, although its own log still says it
// stepped down (the edit touches only the witness's record).
func TestStepsDownOnARealHistory(t *testing.T) {
	s := realPartitionHeal(t)
	for _, c := range []string{OldLeaderStepsDown, EpochHeldByWriter, BridgeDrain, BridgeCapacity, TermStep} {
		wantPass(t, s, c)
	}
	var to Takeover
	for _, tk := range Takeovers(s) {
		if tk.From != "" {
			to = tk
		}
	}
	if to.From == "" {
		t.Fatal("the saved history has no takeover")
	}
	stopped, ok := writersStopped(s)
	if !ok {
		t.Fatal("the saved history has no collect phase")
	}
	ops := s.Witness.Operations
	last := -1
	for i, o := range ops {
		if o.Method == "PUT" && o.Epoch == to.FromTerm {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("no write of term %d in the witness's history", to.FromTerm)
	}
	// The old leader keeps writing every write interval until the harness
	// stops it.
	late, id := ops[last], ops[len(ops)-1].ID
	n := 0
	for at := to.Observed.Add(s.Config.DrainTimeout.D() + s.Config.WriteInterval.D()); at.Before(stopped); at = at.Add(s.Config.WriteInterval.D()) {
		id++
		late.ID, late.Invoked, late.Completed = id, at, at.Add(2*time.Millisecond)
		s.Witness.Operations = append(s.Witness.Operations, late)
		n++
	}
	if n == 0 {
		t.Fatalf("the saved run stopped its writers at %s, inside the step-down window", ts(stopped))
	}
	wantFail(t, s, OldLeaderStepsDown, "kept sending after losing the Lease")
	t.Logf("%d late writes added after %s + drain_timeout", n, ts(to.Observed))
}
