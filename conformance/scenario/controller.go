package scenario

import (
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// FixtureModes are the fixture flags the scenario needs besides its
// timing (a broken mode such as --ignore-demotion): a user's controller
// has no such mode, so in a CONTROLLER= run the scenario runs on our
// fixture and says so. None: it runs on the controller under test.
func (d Def) FixtureModes() []string {
	var out []string
	for _, a := range d.Reconciler.Args() {
		if !strings.HasPrefix(a, "--write-interval=") {
			out = append(out, a)
		}
	}
	return out
}

// NoEventLog is the evidence note of a controller that logs no FCEVENT line.
const NoEventLog = "not applicable: the controller under test logs no FCEVENT lines (a MAY of docs/controller-contract.md); the checks that read them judge nothing"

// EventChecksNotApplicable marks, for a controller under test that logged
// no event at all, the event log as missing (so the checks that need it
// are INCONCLUSIVE, never passed) and expects nothing of those checks (so
// their lack of evidence is not counted against the controller). It
// reports whether it did.
func EventChecksNotApplicable(h *history.Scenario) bool {
	for _, evs := range h.Events {
		if len(evs) > 0 {
			return false
		}
	}
	h.MissingEvidence(history.EvidenceEvents, NoEventLog)
	for _, c := range check.All {
		if slices.Contains(c.Needs, history.EvidenceEvents) && h.Expect[c.Name] == history.MustPass {
			h.ChangeExpect(c.Name, history.Any, "the controller under test logs no FCEVENT lines: this check reads them")
		}
	}
	return true
}

// StaleActNotRequired expects nothing of stale-leader-acted on a
// controller under test: that check shows a fault took effect by the
// replaced leader sending with its old term, which the contract never
// asks for; a controller that checks its lease before every send is
// safer and sends nothing stale. Our fixture keeps it must-pass. It
// reports whether it changed the expectation.
func StaleActNotRequired(h *history.Scenario) bool {
	if h.Expect[check.StaleLeaderActed] != history.MustPass {
		return false
	}
	h.ChangeExpect(check.StaleLeaderActed, history.Any, "a controller under test need not act stale (docs/controller-contract.md, MUST 7): the check says whether the fault made it, and is not counted against it")
	return true
}

// StaleControlNotApplicable: on a controller under test, a negative
// control whose broken sink shows only through a stale write
// (no-stale-commit must fail: an unfenced sink commits it) proves nothing
// when the controller sent nothing stale, which the contract never asks
// it to do. Its must-fail becomes informative, with the reason recorded;
// with any stale write it stays must-fail. It reports whether it changed.
func StaleControlNotApplicable(h *history.Scenario) bool {
	if h.Expect[check.NoStaleCommit] != history.MustFail || !check.NothingStaleSent(h) {
		return false
	}
	h.ChangeExpect(check.NoStaleCommit, history.Any, "the controller under test sent nothing stale after its successor's grant (stale-leader-acted): a sink that does not fence has nothing stale to commit, so this control cannot show its defect with this controller")
	return true
}
