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
			h.Expect[c.Name] = history.Any
		}
	}
	return true
}
