package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/internal/junit"
)

// JUnit renders one testcase per scenario×check. A testcase passes when
// the verdict met its expectation: a caught negative control passes, a
// broken variant that passed fails.
func JUnit(run *history.Run, results []check.Result) []byte {
	doc := junit.Suites{Name: "fencecheck conformance " + run.Meta.RunID, Totals: true}
	for _, s := range run.Scenarios {
		js := junit.Suite{Name: s.Name}
		if len(s.Phases) > 0 {
			js.Time = fmt.Sprintf("%.3f", s.Phases[len(s.Phases)-1].End.Sub(s.Phases[0].Start).Seconds())
		}
		for _, r := range results {
			if r.Scenario != s.Name {
				continue
			}
			c := junit.Case{ClassName: "fencecheck." + s.Name, Name: r.Check,
				SystemOut: fmt.Sprintf("expected: %s; verdict: %s\n%s", r.Expected, r.Outcome(), strings.Join(r.Evidence, "\n"))}
			if !r.OK {
				msg := fmt.Sprintf("%s %s (expected %s)", r.Check, r.Outcome(), r.Expected)
				c.Failure = &junit.Failure{Message: msg, Type: string(r.Outcome()), Text: strings.Join(r.Evidence, "\n")}
				js.Failures++
			}
			js.Tests++
			js.Cases = append(js.Cases, c)
		}
		doc.Tests += js.Tests
		doc.Failures += js.Failures
		doc.Suites = append(doc.Suites, js)
	}
	var buf bytes.Buffer
	_ = junit.Write(&buf, doc) // a bytes.Buffer does not fail
	return buf.Bytes()
}
