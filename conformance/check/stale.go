package check

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/witness/record"
)

// checkStaleLeaderActed shows that a scenario's fault took effect: from the
// Lease watch (who held which term, when a successor's term was granted)
// and the witness (what was sent, when), some request still carried a
// previous holder's term after its successor's term was granted. Only that
// holder ever held the term (term-monotonic), so no attribution by source
// is needed. Without the witness it is INCONCLUSIVE.
func checkStaleLeaderActed(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history: what the old leader sent after the takeover is unknown")
		return e.verdict()
	}
	total, takeovers := 0, 0
	for _, t := range Takeovers(s) {
		if t.From == "" || t.FromTerm == t.ToTerm {
			continue
		}
		takeovers++
		var stale []record.Operation
		for _, o := range s.Witness.Operations {
			if o.EpochValid() && o.Epoch == t.FromTerm && o.Invoked.After(t.Observed) {
				stale = append(stale, o)
			}
		}
		if len(stale) == 0 {
			e.addf("term %d (%s): nothing sent with it after term %d was granted at %s", t.FromTerm, t.From, t.ToTerm, ts(t.Observed))
			continue
		}
		total += len(stale)
		e.addf("term %d (%s): %d requests sent with it after term %d was granted to %s at %s, from %s to %s; answers: %s",
			t.FromTerm, t.From, len(stale), t.ToTerm, t.To, ts(t.Observed), ts(stale[0].Invoked), ts(stale[len(stale)-1].Invoked), answers(stale))
	}
	switch {
	case takeovers == 0:
		e.unknownf("no takeover in the Lease watch: no leader was replaced, none could go stale")
	case total == 0:
		e.failf("no request carried an old term after its successor's grant: no leader acted stale, the fault did not take effect")
	}
	return e.verdict()
}

// answers counts operations by outcome ("409 REJECT_STALE_EPOCH×3, 200 OK×1").
func answers(ops []record.Operation) string {
	n := map[string]int{}
	for _, o := range ops {
		k := fmt.Sprintf("%d %s", o.Status, o.Result)
		if o.Type == record.Info || o.Type == record.Invoke {
			k = string(o.Type)
		}
		n[strings.TrimSpace(k)]++
	}
	return joinCounts(n, "%s×%d", ", ")
}
