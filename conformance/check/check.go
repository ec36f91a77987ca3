// Package check holds the conformance checkers: pure functions from a
// recorded scenario history to a verdict with evidence. They import only
// the history types (and the contract/eventlog types inside them), so any
// saved history.json is judged offline exactly as it was judged live.
package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Verdict is one check's judgement of one scenario.
type Verdict struct {
	Check    string   `json:"check"`
	Status   Status   `json:"status"`
	Evidence []string `json:"evidence,omitempty"`
}

// Status is what a check found, before it is set against what the
// scenario expected (that is the Outcome; docs/glossary.md).
type Status string

const (
	// StatusPass: the evidence it needs is there and shows no violation.
	StatusPass Status = "pass"
	// StatusViolation: the evidence shows a violation.
	StatusViolation Status = "violation"
	// StatusInconclusive: no violation shown, but not the evidence to pass
	// (nothing to judge, a watch gap, an unattributed commit). It fails a
	// must-pass check and never counts as catching a negative control.
	StatusInconclusive Status = "inconclusive"
)

// Checker is a named check.
type Checker struct {
	Name        string
	Description string
	// Needs are the evidence sources the check judges from: when one is
	// missing from the history the verdict is INCONCLUSIVE (unless what
	// was there already shows a violation).
	Needs []string
	Fn    func(*history.Scenario) Verdict
}

// Evidence sources, shorter to write in the table below.
const (
	lease  = history.EvidenceLease
	sink   = history.EvidenceSink
	state  = history.EvidenceFinalState
	events = history.EvidenceEvents
	wit    = history.EvidenceWitness
)

// maxEvidence bounds the lines a verdict keeps; the count of the rest is kept.
const maxEvidence = 20

// Check names.
const (
	TermMonotonic      = "term-monotonic"
	TermStep           = "term-step"
	NoStaleCommit      = "no-stale-commit"
	EpochHeldByWriter  = "epoch-held-by-writer"
	RowEpochMonotonic  = "row-epoch-monotonic"
	RejectedNotInState = "rejected-not-in-final-state"
	FloorMonotonic     = "floor-monotonic"
	Idempotency        = "idempotency"
	IdempotencyMisuse  = "idempotency-misuse"
	UnfencedWrites     = "unfenced-writes"
	OldLeaderStepsDown = "old-leader-steps-down"
	BridgeDrain        = "bridge-drain"
	BridgeAbort        = "bridge-abort"
	BridgeJoin         = "bridge-join"
	BridgeCapacity     = "bridge-capacity"
	RejectStaleSeen    = "reject-stale-seen"
	FailoverLiveness   = "failover-liveness"
	WitnessAgrees      = "witness-agrees"
	Linearizable       = "linearizable"
	// The witness nemesis's checks (nemesis.go).
	HeldWritesRejected      = "held-writes-rejected"
	LostAnswersDeduplicated = "lost-answers-deduplicated"
	StaleLeaderActed        = "stale-leader-acted"
)

// All is every checker, in report order.
var All = []Checker{
	{TermMonotonic, "the Lease term never goes back or repeats, over a watch with no gaps", []string{lease}, checkTermMonotonic},
	{TermStep, "the term goes +1 on every holder change and is unchanged on renew", []string{lease}, checkTermStep},
	{NoStaleCommit, "no commit with epoch < T after the sink saw T (or after T was acquired, for a term never fenced)", []string{lease, sink}, checkNoStaleCommit},
	{EpochHeldByWriter, "every write and fence carries a term the Lease watch shows its sender (the pod at its source address) holding", []string{lease, wit, history.EvidencePodIPs}, checkEpochHeld},
	{RowEpochMonotonic, "per row, committed epochs never return to an older epoch", []string{sink}, checkRowEpoch},
	{RejectedNotInState, "rejected writes never appear in the sink's final state", []string{sink, state}, checkRejectedNotInState},
	{FloorMonotonic, "the sink's floor and highest committed epoch never decrease; its history has no holes", []string{sink}, checkFloorMonotonic},
	{Idempotency, "no Idempotency-Key is applied twice", []string{sink}, checkIdempotency},
	{IdempotencyMisuse, "every write carries an Idempotency-Key, one key is one logical write (never another record key or value, no 422), and a write is retried until it gets a definite answer while its sender may send (the witness)", []string{wit, lease}, checkIdempotencyMisuse},
	{UnfencedWrites, "every commit carries an epoch, and its term's fence reached the sink first; every PUT the witness saw carries one", []string{sink}, checkUnfenced},
	{OldLeaderStepsDown, "after every takeover no write of the previous term is sent later than drain_timeout (the witness's record)", []string{lease, wit}, checkStepsDown},
	{BridgeDrain, "a bridge stopped by its producer forwards everything it buffered: the witness saw seqs 0..enqueued-1 of its term", []string{events, wit, history.EvidencePodIPs}, checkBridgeDrain},
	{BridgeCapacity, "at a bridge's stop its producer was at most capacity (128) + 1 seqs ahead of what the witness saw", []string{events, wit, history.EvidencePodIPs}, checkBridgeCapacity},
	{BridgeAbort, "a bridge aborts within its limit on shutdown and writes nothing after", []string{events}, checkBridgeAbort},
	{BridgeJoin, "every bridge is joined within drain_timeout", []string{events}, checkBridgeJoin},
	{RejectStaleSeen, "the sink answered REJECT_STALE_EPOCH at least once", []string{sink}, checkRejectStaleSeen},
	{WitnessAgrees, "the sink's history agrees with the witness: every answer a client saw is recorded with the same request and result, and nothing no client sent", []string{sink, wit}, checkWitnessAgrees},
	{Linearizable, "the witness's history and the final records are linearizable against the contract's fenced register (porcupine)", []string{wit, state}, checkLinearizable},
	{FloorSurvivesRestart, "after a sink SIGKILL and restart, the harness's probe below the floor acknowledged before the crash is refused 409 (witness)", []string{wit}, checkFloorSurvivesRestart},
	{AckedWritesDurable, "every write a client saw acknowledged is in the final state with its value or a later write's (witness + final reads)", []string{wit, state}, checkAckedWritesDurable},
	{HeldWritesRejected, "every write the witness held until the sink answered a higher fence is answered 409 (none committed)", []string{wit}, checkHeldWrites},
	{LostAnswersDeduplicated, "every write whose answer the witness lost is retried with its Idempotency-Key and answered OK_DUP (committed once)", []string{wit}, checkLostAnswers},
	{StaleLeaderActed, "the fault took effect: a replaced leader sent with its old term after its successor's term was granted (the Lease watch and the witness)", []string{lease, wit}, checkStaleLeaderActed},
	{FailoverLiveness, "every takeover after a fault commits within client-go's bound (lease + 2 × jittered retry + write interval + round trips; a release: one jittered retry + ...)", []string{lease, wit}, checkTakeoverBound},
}

// ByName finds a checker.
func ByName(name string) (Checker, bool) {
	for _, c := range All {
		if c.Name == name {
			return c, true
		}
	}
	return Checker{}, false
}

// Names lists all check names.
func Names() []string {
	out := make([]string, len(All))
	for i, c := range All {
		out[i] = c.Name
	}
	return out
}

// Result is a verdict set against what the scenario expected of it.
type Result struct {
	Scenario string              `json:"scenario"`
	Expected history.Expectation `json:"expected"`
	Verdict
	// OK: the verdict is what was expected (a caught negative control is OK).
	OK bool `json:"ok"`
}

// UnmarshalJSON reads a result as this build writes it, or as builds
// before check.Status wrote it ({"pass": bool, "inconclusive": bool}), so
// the verdicts.json of an older run still compares.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result // without this method
	var w struct {
		plain
		Pass         *bool `json:"pass"`
		Inconclusive bool  `json:"inconclusive"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result(w.plain)
	switch {
	case r.Status != "":
	case w.Pass == nil:
		return fmt.Errorf("result %s/%s: no status", r.Scenario, r.Check)
	case *w.Pass:
		r.Status = StatusPass
	case w.Inconclusive:
		r.Status = StatusInconclusive
	default:
		r.Status = StatusViolation
	}
	return nil
}

// Outcome is what a result means for a reader: the one word every printer
// uses for it.
type Outcome string

const (
	Pass         Outcome = "PASS"         // must pass, passed
	Fail         Outcome = "FAIL"         // must pass, a violation
	Caught       Outcome = "CAUGHT"       // a negative control, caught by a violation
	Escaped      Outcome = "ESCAPED"      // a negative control that passed
	Inconclusive Outcome = "INCONCLUSIVE" // failed for lack of evidence: neither passed nor caught
	Informative  Outcome = "INFO"         // expected nothing in particular
)

// Outcome decides from the expectation and the verdict. A verdict that
// failed for lack of evidence is Inconclusive whatever was expected of it:
// it neither passes a check nor catches a negative control.
func (r Result) Outcome() Outcome {
	switch {
	case r.Expected == history.Any:
		return Informative
	case r.Expected != history.MustPass && r.Expected != history.MustFail:
		return Inconclusive // an expectation this build does not know
	case r.Status == StatusPass && r.Expected == history.MustPass:
		return Pass
	case r.Status == StatusPass:
		return Escaped
	case r.Status == StatusInconclusive:
		return Inconclusive
	case r.Expected == history.MustPass:
		return Fail
	}
	return Caught
}

// OK reports whether the outcome is what the scenario wanted.
func (o Outcome) OK() bool { return o == Pass || o == Caught || o == Informative }

// Evaluate runs, for every scenario, the checks it names in Expect, in
// the order of All (unknown names become failing results).
func Evaluate(r *history.Run) []Result {
	var out []Result
	for _, s := range r.Scenarios {
		out = append(out, EvaluateScenario(s)...)
	}
	return out
}

// EvaluateScenario judges one scenario.
func EvaluateScenario(s *history.Scenario) []Result {
	var out []Result
	for _, c := range All {
		exp, ok := s.Expect[c.Name]
		if !ok {
			continue
		}
		v := c.Judge(s)
		r := Result{Scenario: s.Name, Expected: exp, Verdict: v}
		r.OK = r.Outcome().OK()
		out = append(out, r)
	}
	var unknown []string
	for name := range s.Expect {
		if _, ok := ByName(name); !ok {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		// Not OK whatever it expected: a check this build lacks judged nothing.
		out = append(out, Result{Scenario: s.Name, Expected: s.Expect[name],
			Verdict: Verdict{Check: name, Status: StatusInconclusive, Evidence: []string{"no such check in this build"}}})
	}
	return out
}

// Judge runs the check on s, INCONCLUSIVE where evidence it needs is missing.
func (c Checker) Judge(s *history.Scenario) Verdict {
	v := withMissing(s, c.Needs, c.Fn(s))
	v.Check = c.Name
	return v
}

// withMissing makes v INCONCLUSIVE when evidence it needs was not
// collected, saying which: a pass on partial evidence is no pass, and a
// failure for lack of evidence catches nothing. A violation already shown
// by what was collected stands.
func withMissing(s *history.Scenario, needs []string, v Verdict) Verdict {
	var why []string
	for _, src := range needs {
		for _, reason := range Missing(s, src) {
			why = append(why, fmt.Sprintf("INCONCLUSIVE: %s evidence incomplete: %s", src, reason))
		}
	}
	if len(why) == 0 {
		return v
	}
	if v.Status != StatusViolation {
		v.Status = StatusInconclusive
	}
	v.Evidence = append(why, v.Evidence...)
	return v
}

// Missing says why evidence from src is incomplete in s: what the harness
// recorded it could not collect, and, for event logs, every pod whose log
// does not end with its stopped event (the last thing a reconciler logs; the
// driver stops every pod before collecting, so a log without it was cut).
func Missing(s *history.Scenario, src string) []string {
	out := append([]string(nil), s.Missing[src]...)
	if src == history.EvidenceWitness && s.Witness != nil && s.Witness.Dropped > 0 {
		out = append(out, fmt.Sprintf("the witness dropped %d operations past its limit", s.Witness.Dropped))
	}
	if src == history.EvidenceSink && s.Witness != nil {
		if ids := sinkInstances(s.Witness); len(ids) > 1 {
			out = append(out, fmt.Sprintf("the sink restarted during the run (the witness saw %d instance ids: %v): its history covers the last one only", len(ids), ids))
		}
	}
	if src == history.EvidenceEvents {
		for _, pod := range s.Pods() {
			evs := s.Events[pod]
			if len(evs) == 0 || evs[len(evs)-1].Kind != eventlog.KindStopped {
				out = append(out, pod+": its log does not end with the stopped event")
			}
		}
	}
	return out
}

// sinkInstances are the distinct instance ids the sink answered with, in
// the order the witness first saw them.
func sinkInstances(h *record.History) []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range h.Operations {
		if o.SinkInstance != "" && !seen[o.SinkInstance] {
			seen[o.SinkInstance] = true
			out = append(out, o.SinkInstance)
		}
	}
	return out
}

// AllOK reports whether every result met its expectation.
func AllOK(rs []Result) bool {
	for _, r := range rs {
		if !r.OK {
			return false
		}
	}
	return true
}

// evidence collects lines for a verdict, bounded.
type evidence struct {
	lines     []string
	dropped   int
	fail      bool
	violation bool // at least one failure is a violation, not missing evidence
}

// failf records a violation.
func (e *evidence) failf(format string, a ...any) {
	e.fail, e.violation = true, true
	e.addf(format, a...)
}

// unknownf records a failure for lack of evidence.
func (e *evidence) unknownf(format string, a ...any) {
	e.fail = true
	e.addf("INCONCLUSIVE: "+format, a...)
}

func (e *evidence) addf(format string, a ...any) {
	if len(e.lines) >= maxEvidence {
		e.dropped++
		return
	}
	e.lines = append(e.lines, fmt.Sprintf(format, a...))
}

func (e *evidence) verdict() Verdict {
	lines := e.lines
	if e.dropped > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more", e.dropped))
	}
	st := StatusPass
	switch {
	case e.violation:
		st = StatusViolation
	case e.fail:
		st = StatusInconclusive
	}
	return Verdict{Status: st, Evidence: lines}
}

func shortID(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func joinU(xs []uint64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
