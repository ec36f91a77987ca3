package check

import "github.com/fencecheck/fencecheck/conformance/history"

// StaleLeaderActed proves a fault took effect: the old holder sent with
// its old term after the Lease watch saw the new term granted. A scenario
// whose old leader never tried shows nothing about fencing.
const StaleLeaderActed = "stale-leader-acted"

func init() {
	All = append(All, Checker{StaleLeaderActed,
		"after a takeover, the old leader sent with its old term once the new term was granted (the fault made it stale; the Lease watch and the witness)",
		[]string{lease, wit}, checkStaleLeaderActed})
}

func checkStaleLeaderActed(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history: what the old leader sent is unknown")
		return e.verdict()
	}
	n := 0
	for _, t := range Takeovers(s) {
		if t.From == "" || t.FromTerm == t.ToTerm {
			continue
		}
		n++
		sent := 0
		results := map[string]int{}
		var first string
		for _, o := range s.Witness.Operations {
			if !o.EpochValid() || o.Epoch != t.FromTerm || !o.Invoked.After(t.Observed) {
				continue
			}
			if sent == 0 {
				first = ts(o.Invoked) + " " + o.Method + " " + o.Key
			}
			sent++
			results[string(o.Result)]++
		}
		if sent == 0 {
			e.failf("%s (term %d) sent nothing with its old term after term %d was granted to %s at %s: it never went stale", t.From, t.FromTerm, t.ToTerm, t.To, ts(t.Observed))
			continue
		}
		e.addf("%s sent %d requests of term %d after term %d was granted to %s at %s (first: %s; results %v)", t.From, sent, t.FromTerm, t.ToTerm, t.To, ts(t.Observed), first, results)
	}
	if n == 0 {
		e.unknownf("no takeover from a previous holder observed: nothing to judge")
	}
	return e.verdict()
}
