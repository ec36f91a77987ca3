package check

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/witness/record"
)

// A writer that never stamps has every PUT refused by a correct sink: no
// commit shows it, the witness does (the default-lock controller example).
func TestUnfencedWritesSeenByTheWitness(t *testing.T) {
	h := &history.Scenario{Witness: &record.History{Operations: []record.Operation{
		{ID: 1, Method: "PUT", Key: "row-000", Type: record.Fail, Status: 400, EpochError: "missing"},
		{ID: 2, Method: "PUT", Key: "row-001", Type: record.Fail, Status: 400},
	}}}
	v := checkUnfenced(h)
	if v.Status == StatusPass || v.Status == StatusInconclusive || !strings.Contains(strings.Join(v.Evidence, " "), "2 of 2 PUTs sent without a valid x-camel-leader-epoch") {
		t.Errorf("verdict %+v", v)
	}
}

// A Lease held without the term annotation (controller-runtime's default
// lock) fails term-step saying so.
func TestTermStepWithoutTerm(t *testing.T) {
	h := &history.Scenario{Lease: history.LeaseWatch{Records: []history.LeaseRecord{
		{ResourceVersion: "1", Holder: "p_3f2b1c9e-8d7a-4b6c-9e5f-0a1b2c3d4e5f"}, {ResourceVersion: "2", Holder: "p_3f2b1c9e-8d7a-4b6c-9e5f-0a1b2c3d4e5f"}}}}
	v := checkTermStep(h)
	if v.Status == StatusPass || !strings.Contains(strings.Join(v.Evidence, " "), "2 Lease versions with a holder carry no valid camel.io/leader-term annotation") {
		t.Errorf("verdict %+v", v)
	}
}
