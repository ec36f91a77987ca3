package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Finish stops the writers and the recorders and fills the history. It
// always returns the history it has; problems are recorded in it (as
// evidence the report shows) and returned.
func (s *Session) Finish(ctx context.Context) (*history.Scenario, error) {
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
	note(s.stepDownWindow(ctx))
	// Not behind the quiet gate: collect stops three processes and reads,
	// less than the namespace deletion after it, which never was, and
	// held at the gate it waited longer than it ran (s17-ten3-p3).
	s.collect(ctx, note)
	return s.Hist, errors.Join(errs...)
}

// collect reads the pods, stops the writers, and reads the witness, the
// sink's history and its final records into the history; note keeps each
// problem.
func (s *Session) collect(ctx context.Context, note func(error)) {
	start := time.Now()
	// Where collect's time goes, for the log (issue 13).
	var steps []string
	lap := start
	step := func(name string) {
		now := time.Now()
		steps = append(steps, fmt.Sprintf("%s %v", name, now.Sub(lap).Round(time.Millisecond)))
		lap = now
	}
	logs := s.dep.Events()
	if pods, err := s.dep.Pods(ctx); err == nil {
		for _, r := range s.readPods(ctx, pods, logs) {
			if r.statusErr == nil {
				if s.Hist.Status == nil {
					s.Hist.Status = map[string]json.RawMessage{}
				}
				s.Hist.Status[r.pod] = r.status
			} else {
				s.Hist.Errors = append(s.Hist.Errors, r.statusErr.Error())
			}
			note(r.logErr)
		}
	}
	step("status+logs")
	// Stop every writer first, so the sink's history and final state are
	// read at rest and agree.
	note(s.dep.StopReconcilers(ctx))
	step("stop")
	events, problems := logs.Stop(ctx)
	step("final logs")
	s.Hist.Events = events
	s.Hist.Errors = append(s.Hist.Errors, problems...)
	if w, err := s.dep.Witness(ctx); err != nil {
		note(err)
		s.Hist.MissingEvidence(history.EvidenceWitness, err.Error())
	} else {
		s.Hist.Witness = w
	}
	step("witness")
	note(s.recordPodIPs())
	// What could not be read makes the checks that need it INCONCLUSIVE
	// (an empty history must not pass as a clean one).
	as, err := s.dep.Sink().History(ctx)
	step("sink history")
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
	} else if recs, err := s.dep.Sink().Records(ctx, putKeys(as, s.Hist.Witness)); err != nil {
		note(err)
		s.Hist.MissingEvidence(history.EvidenceFinalState, err.Error())
	} else {
		s.Hist.FinalRecords = recs
	}
	step("records")
	s.Hist.Phases = append(s.Hist.Phases, history.Phase{Name: scenario.PhaseCollect, Start: start, End: time.Now()})
	s.dr.log("%s: collected %d sink attempts, %d witness operations, %d final records, events from %d pods in %v (%s)", s.def.Name, len(s.Hist.Attempts),
		witnessOps(s.Hist), len(s.Hist.FinalRecords), len(s.Hist.Events), time.Since(start).Round(time.Millisecond), strings.Join(steps, ", "))
}

// podRead is one pod's /status and the outcome of re-reading its log.
type podRead struct {
	pod               string
	status            json.RawMessage
	statusErr, logErr error
}

// readPods reads every running pod's /status and its whole log (while it
// still runs: a stalled follow stream must not cost the evidence), all at
// once: each is a round trip through the apiserver, and at --parallel 3
// they took 5 to 8 s one after another. In the pods' order.
func (s *Session) readPods(ctx context.Context, pods []string, logs EventLog) []podRead {
	out := make([]podRead, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		out[i].pod = p
		wg.Go(func() { out[i].status, out[i].statusErr = s.dep.Status(ctx, p) })
		wg.Go(func() { out[i].logErr = logs.Refresh(ctx, p) })
	}
	wg.Wait()
	return out
}

// putKeys are the record keys the sink's history or the witness saw
// written, sorted: after a sink restart the sink's history covers its
// last instance only, and every key a client wrote must be read.
func putKeys(as []contract.Attempt, w *record.History) []string {
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if k != "" && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, a := range as {
		if a.Op == contract.OpPut {
			add(a.Key)
		}
	}
	if w != nil {
		for _, o := range w.Operations {
			if o.Method == "PUT" {
				add(o.Key)
			}
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
