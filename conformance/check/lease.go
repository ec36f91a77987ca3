package check

import (
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/leader"
)

// Takeover is a holder change seen in the Lease watch, or a Lease
// re-created by its own holder under a new term (From == To).
type Takeover struct {
	From, To         string // holder identities ("" = released/none)
	FromTerm, ToTerm uint64
	Observed         time.Time
	Index            int // record index of the new holder's first version
}

// Takeovers lists every change to a new non-empty holder, in watch order.
// The first holder ever observed counts as a takeover from "". A Lease
// deleted and re-created by the same holder under another term counts
// too: the old term is over for its writers as much as after a holder
// change (docs/controller-contract.md, MUST 2), so old-leader-steps-down
// judges its writes of the old term the same way.
func Takeovers(s *history.Scenario) []Takeover {
	var out []Takeover
	var prev *history.LeaseRecord
	recreated := false // a DELETED since prev
	for i := range s.Lease.Records {
		r := &s.Lease.Records[i]
		if r.Event == "DELETED" {
			recreated = prev != nil
			continue
		}
		// A new incarnation: after a DELETED, or a new UID (a relist after a
		// gap that hid the deletion).
		recreated = recreated || (prev != nil && prev.UID != "" && r.UID != "" && r.UID != prev.UID)
		newTerm := recreated && prev.Holder == r.Holder && r.TermOK && prev.TermOK && r.Term != prev.Term
		recreated = false
		if r.Holder != "" && (prev == nil || r.Holder != prev.Holder || newTerm) {
			t := Takeover{To: r.Holder, ToTerm: r.Term, Observed: r.Observed, Index: i}
			if prev != nil {
				t.From, t.FromTerm = prev.Holder, prev.Term
				if prev.Holder == "" {
					t.From = lastHolderBefore(s, i)
				}
			}
			out = append(out, t)
		}
		prev = r
	}
	return out
}

func lastHolderBefore(s *history.Scenario, i int) string {
	for j := i - 1; j >= 0; j-- {
		if h := s.Lease.Records[j].Holder; h != "" {
			return h
		}
	}
	return ""
}

// watchCoverage fails e for every gap and for a watch that does not span
// the scenario's phases: a check cannot vouch for what it did not see.
func watchCoverage(s *history.Scenario, e *evidence) {
	w := s.Lease
	if len(w.Records) == 0 {
		e.unknownf("the Lease watch recorded no versions of the Lease")
		return
	}
	for _, g := range w.Gaps {
		e.unknownf("watch gap %s .. %s (%s): term changes inside it are unknown", ts(g.From), ts(g.To), g.Reason)
	}
	if w.Start.IsZero() || w.End.IsZero() {
		e.unknownf("the Lease watch has no start/end time: coverage unknown")
		return
	}
	if len(s.Phases) > 0 {
		first, last := s.Phases[0].Start, s.Phases[len(s.Phases)-1].End
		for _, p := range s.Phases {
			if p.Start.Before(first) {
				first = p.Start
			}
			if p.End.After(last) {
				last = p.End
			}
		}
		if w.Start.After(first) {
			e.unknownf("the watch started at %s, after the scenario began at %s", ts(w.Start), ts(first))
		}
		if w.End.Before(last) {
			e.unknownf("the watch ended at %s, before the scenario ended at %s", ts(w.End), ts(last))
		}
	}
}

// incarnations follows the Lease across deletions: a record starts a new
// incarnation when the Lease was deleted before it or its UID changed. The
// terms of every incarnation form one sequence: a re-created Lease must
// continue above the highest term any earlier incarnation carried.
type incarnations struct {
	uid       string
	recreated bool   // a deletion or a new UID since the last record with a term
	highest   uint64 // highest term on any record so far
	seenTerm  bool   // some record carried a term
}

// next reports whether r (not a DELETED event) is the first record with a
// term of a new incarnation, and the highest term seen before it.
func (in *incarnations) next(r *history.LeaseRecord) (first bool, highest uint64) {
	if in.uid != "" && r.UID != in.uid {
		in.recreated = true
	}
	in.uid = r.UID
	if !r.TermOK {
		return false, in.highest
	}
	first, highest = in.recreated && in.seenTerm, in.highest
	in.recreated, in.seenTerm = false, true
	in.highest = max(in.highest, r.Term)
	return first, highest
}

func (in *incarnations) deleted() { in.recreated = true }

func checkTermMonotonic(s *history.Scenario) Verdict {
	var e evidence
	watchCoverage(s, &e)
	var inc incarnations
	var last *history.LeaseRecord
	seen := map[uint64]string{} // term -> first holder
	recreations := 0
	for i := range s.Lease.Records {
		r := &s.Lease.Records[i]
		if r.Event == "DELETED" {
			inc.deleted()
			e.addf("rv %s: the Lease was deleted at %s; its next incarnation must continue above term %d", r.ResourceVersion, ts(r.Observed), inc.highest)
			continue
		}
		if !r.TermOK {
			inc.next(r)
			if r.Holder != "" {
				e.failf("rv %s: holder %s but term annotation %q is missing or not a decimal uint64", r.ResourceVersion, r.Holder, r.TermRaw)
			}
			continue
		}
		first, highest := inc.next(r)
		switch {
		case first:
			recreations++
			if r.Term <= highest {
				e.failf("rv %s at %s: the re-created Lease (uid %s) starts at term %d, not above the highest term seen before it, %d (holder %s)",
					r.ResourceVersion, ts(r.Observed), r.UID, r.Term, highest, shortID(r.Holder))
			} else {
				e.addf("rv %s at %s: the re-created Lease (uid %s) continues at term %d, above %d", r.ResourceVersion, ts(r.Observed), r.UID, r.Term, highest)
			}
		case last != nil && r.Term < last.Term:
			e.failf("rv %s at %s: term went back %d -> %d (holder %s)", r.ResourceVersion, ts(r.Observed), last.Term, r.Term, shortID(r.Holder))
		case last != nil && r.Term == last.Term && r.Holder != "" && last.Holder != "" && r.Holder != last.Holder:
			e.failf("rv %s at %s: term %d repeated for a new holder %s (was %s)", r.ResourceVersion, ts(r.Observed), r.Term, r.Holder, last.Holder)
		}
		if r.Holder != "" {
			if h, ok := seen[r.Term]; ok && h != r.Holder {
				if last == nil || last.Term != r.Term || last.Holder == "" {
					e.failf("rv %s: term %d held by %s had already been held by %s", r.ResourceVersion, r.Term, r.Holder, h)
				}
			} else if !ok {
				seen[r.Term] = r.Holder
			}
		}
		last = r
	}
	if !e.fail {
		e.addf("%d Lease versions, %d incarnations, %d distinct terms, watch %s .. %s without gaps", len(s.Lease.Records), recreations+1, len(seen), ts(s.Lease.Start), ts(s.Lease.End))
	}
	return e.verdict()
}

func checkTermStep(s *history.Scenario) Verdict {
	var e evidence
	watchCoverage(s, &e)
	var inc incarnations
	var prev *history.LeaseRecord
	takeovers, renews, recreations, noTerm := 0, 0, 0, 0
	for i := range s.Lease.Records {
		r := &s.Lease.Records[i]
		if r.Event != "DELETED" && !r.TermOK && r.Holder != "" {
			noTerm++
		}
		if r.Event == "DELETED" {
			inc.deleted()
			continue
		}
		first, highest := inc.next(r)
		if !r.TermOK {
			continue
		}
		switch {
		case first:
			// A re-created Lease is a new grant, whoever holds it: one
			// above the highest term of every earlier incarnation.
			recreations++
			if r.Term != highest+1 {
				e.failf("rv %s at %s: the re-created Lease (uid %s, holder %s) has term %d, want %d (one above the highest seen)", r.ResourceVersion, ts(r.Observed), r.UID, shortID(r.Holder), r.Term, highest+1)
			} else {
				e.addf("re-created at %s: holder %s, term %d -> %d", ts(r.Observed), shortID(r.Holder), highest, r.Term)
			}
		case prev != nil && r.Holder != "":
			switch {
			case r.Holder == prev.Holder:
				renews++
				if r.Term != prev.Term {
					e.failf("rv %s at %s: renew by %s changed the term %d -> %d", r.ResourceVersion, ts(r.Observed), r.Holder, prev.Term, r.Term)
				}
			default:
				takeovers++
				if r.Term != prev.Term+1 {
					e.failf("rv %s at %s: takeover %s -> %s moved the term %d -> %d, want %d", r.ResourceVersion, ts(r.Observed), shortID(prev.Holder), r.Holder, prev.Term, r.Term, prev.Term+1)
				} else {
					e.addf("takeover at %s: %s -> %s, term %d -> %d", ts(r.Observed), shortID(prev.Holder), r.Holder, prev.Term, r.Term)
				}
			}
		case prev != nil && r.Holder == "" && r.Term != prev.Term:
			e.failf("rv %s: release by %s changed the term %d -> %d", r.ResourceVersion, shortID(prev.Holder), prev.Term, r.Term)
		}
		prev = r
	}
	if noTerm > 0 {
		e.failf("%d Lease versions with a holder carry no valid %s annotation: the holder keeps no term", noTerm, leader.TermAnnotation)
	}
	if takeovers+recreations == 0 {
		e.failf("no holder change or re-created Lease observed: nothing shows the term steps +1 on a new grant")
	}
	if renews == 0 {
		e.failf("no renew observed: nothing shows the term is kept on renew")
	}
	if !e.fail {
		e.addf("%d takeovers, %d re-creations, %d renews", takeovers, recreations, renews)
	}
	return e.verdict()
}

// heldTerms maps holder identity to the terms the Lease shows it holding.
func heldTerms(s *history.Scenario) map[string]map[uint64]bool {
	out := map[string]map[uint64]bool{}
	for _, r := range s.Lease.Records {
		if r.Holder == "" || !r.TermOK || r.Event == "DELETED" {
			continue
		}
		if out[r.Holder] == nil {
			out[r.Holder] = map[uint64]bool{}
		}
		out[r.Holder][r.Term] = true
	}
	return out
}

// termAcquired maps each term to when the watch first saw it held.
func termAcquired(s *history.Scenario) map[uint64]time.Time {
	out := map[uint64]time.Time{}
	for _, r := range s.Lease.Records {
		if r.Holder == "" || !r.TermOK || r.Event == "DELETED" {
			continue
		}
		if _, ok := out[r.Term]; !ok {
			out[r.Term] = r.Observed
		}
	}
	return out
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "<never>"
	}
	return t.UTC().Format("15:04:05.000")
}
