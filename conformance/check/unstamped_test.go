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
	if v.Pass || v.Inconclusive || !strings.Contains(strings.Join(v.Evidence, " "), "2 of 2 PUTs sent without a valid x-camel-leader-epoch") {
		t.Errorf("verdict %+v", v)
	}
}
