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
	for _, st := range staleSends(s) {
		t, stale := st.Takeover, st.Ops
		takeovers++
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
		// Not a violation: the contract never asks a leader to send stale
		// writes, and one that checks its lease before every send is safer.
		e.unknownf("the fault did not make the leader act stale: no request carried an old term after its successor's grant")
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

// staleSend is what a replaced leader sent with its old term after its
// successor's term was granted.
type staleSend struct {
	Takeover Takeover
	Ops      []record.Operation
}

// staleSends lists, for every takeover to a new term, the requests sent
// with the old term after the grant (none when the witness is missing).
func staleSends(s *history.Scenario) []staleSend {
	var out []staleSend
	for _, t := range Takeovers(s) {
		if t.From == "" || t.FromTerm == t.ToTerm {
			continue
		}
		st := staleSend{Takeover: t}
		if s.Witness != nil {
			for _, o := range s.Witness.Operations {
				if o.EpochValid() && o.Epoch == t.FromTerm && o.Invoked.After(t.Observed) {
					st.Ops = append(st.Ops, o)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// NothingStaleSent reports that the witness saw at least one takeover to
// a new term and no request sent with an old term after its successor's
// grant: the leader never acted stale, so a negative control that needs a
// stale write (an unfenced sink committing it) could not show its defect.
func NothingStaleSent(s *history.Scenario) bool {
	if s.Witness == nil {
		return false
	}
	sends := staleSends(s)
	for _, st := range sends {
		if len(st.Ops) > 0 {
			return false
		}
	}
	return len(sends) > 0
}
