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
	fs, _ := check.Failovers(h)
	for _, f := range fs {
		logf("failover %s of %s: term %d -> %d in %v (bound %v)", f.Kind, f.Pod, f.FromTerm, f.ToTerm, f.Failover.Round(time.Millisecond), f.Bound)
	}
	return rs
}
