package driver

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/contract"
)

// Finish stops the writers and the recorders and fills the history. It
// always returns the history it has; problems are recorded in it (as
// evidence the report shows) and returned. A second call returns the
// same history.
func (s *Session) Finish(ctx context.Context) (*history.Scenario, error) {
	if s.finished {
		return s.Hist, nil
	}
	s.finished = true
	defer func() {
		if s.lease != nil {
			s.Hist.Lease = s.lease.Stop()
		}
	}()
	if s.dep == nil {
		return s.Hist, nil
	}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
			s.Hist.Errors = append(s.Hist.Errors, err.Error())
		}
	}
	start := time.Now()
	logs := s.dep.Events()
	if pods, err := s.dep.Pods(ctx); err == nil {
		for _, p := range pods {
			if st, err := s.dep.Status(ctx, p); err == nil {
				if s.Hist.Status == nil {
					s.Hist.Status = map[string]json.RawMessage{}
				}
				s.Hist.Status[p] = st
			} else {
				s.Hist.Errors = append(s.Hist.Errors, err.Error())
			}
			// Read every pod's whole log while it still runs: a stalled
			// follow stream must not cost the evidence.
			note(logs.Refresh(ctx, p))
		}
	}
	// Stop every writer first, so the sink's history and final state are
	// read at rest and agree.
	note(s.dep.StopReconcilers(ctx))
	events, problems := logs.Stop(ctx)
	s.Hist.Events = events
	s.Hist.Errors = append(s.Hist.Errors, problems...)
	if w, err := s.dep.Witness(ctx); err != nil {
		note(err)
		s.Hist.MissingEvidence(history.EvidenceWitness, err.Error())
	} else {
		s.Hist.Witness = w
	}
	// What could not be read makes the checks that need it INCONCLUSIVE
	// (an empty history must not pass as a clean one).
	as, err := s.dep.Sink().History(ctx)
	if isDropped(err) {
		// Incomplete, not missing: the checks that need the whole history
		// are INCONCLUSIVE and say why; the final records are still read.
		s.Hist.MissingEvidence(history.EvidenceSink, err.Error())
		err = nil
	}
	note(err)
	s.Hist.Attempts = as
	if err != nil {
		s.Hist.MissingEvidence(history.EvidenceSink, err.Error())
		s.Hist.MissingEvidence(history.EvidenceFinalState, "no sink history to read the records of")
	} else if recs, err := s.dep.Sink().Records(ctx, putKeys(as)); err != nil {
		note(err)
		s.Hist.MissingEvidence(history.EvidenceFinalState, err.Error())
	} else {
		s.Hist.FinalRecords = recs
	}
	s.Hist.Phases = append(s.Hist.Phases, history.Phase{Name: scenario.PhaseCollect, Start: start, End: time.Now()})
	s.dr.log("%s: collected %d sink attempts, %d witness operations, events from %d pods", s.def.Name, len(s.Hist.Attempts), witnessOps(s.Hist), len(s.Hist.Events))
	return s.Hist, errors.Join(errs...)
}

// putKeys are the record keys the history wrote, sorted.
func putKeys(as []contract.Attempt) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range as {
		if a.Op == contract.OpPut && a.Key != "" && !seen[a.Key] {
			seen[a.Key] = true
			out = append(out, a.Key)
		}
	}
	sort.Strings(out)
	return out
}

func witnessOps(h *history.Scenario) int {
	if h.Witness == nil {
		return 0
	}
	return len(h.Witness.Operations)
}
