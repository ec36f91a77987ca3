package driver

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// Assess judges a collected scenario and says so, one line a result:
// failf for a result that is not what the scenario expects, logf for the
// rest, then the failover times. It returns the results.
func Assess(h *history.Scenario, failf, logf func(format string, args ...any)) []check.Result {
	rs := check.EvaluateScenario(h)
	for _, r := range rs {
		line := fmt.Sprintf("%s %s/%s (expected %s): %s", r.Outcome(), r.Scenario, r.Check, r.Expected, strings.Join(r.Evidence, " | "))
		if r.Outcome().OK() {
			logf("%s", line)
		} else {
			failf("%s", line)
		}
	}
	ts, _, _ := check.TakeoverTimes(h)
	for _, t := range ts {
		logf("takeover after %s of %s: term %d -> %d in %v from %s (bound %v, within %v)", t.Cause, t.CausePod, t.FromTerm, t.ToTerm,
			t.Took.Round(time.Millisecond), t.StartedBy(), t.Bound.Round(time.Millisecond), t.Within())
	}
	return rs
}
