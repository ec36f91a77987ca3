package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders one testcase per scenario×check. A testcase passes when
// the verdict met its expectation: a caught negative control passes, a
// broken variant that passed fails.
func JUnit(run *history.Run, results []check.Result) []byte {
	doc := junitSuites{Name: "fencecheck conformance " + run.Meta.RunID}
	for _, s := range run.Scenarios {
		js := junitSuite{Name: s.Name}
		if len(s.Phases) > 0 {
			js.Time = fmt.Sprintf("%.3f", s.Phases[len(s.Phases)-1].End.Sub(s.Phases[0].Start).Seconds())
		}
		for _, r := range results {
			if r.Scenario != s.Name {
				continue
			}
			c := junitCase{Classname: "fencecheck." + s.Name, Name: r.Check,
				SystemOut: fmt.Sprintf("expected: %s; verdict: %s\n%s", r.Expected, outcomeWord(r), strings.Join(r.Evidence, "\n"))}
			if !r.OK {
				msg := "check failed"
				if r.Expected == history.MustFail {
					msg = "negative control escaped: the broken variant passed " + r.Check
				}
				c.Failure = &junitFailure{Message: msg, Type: string(r.Expected), Text: strings.Join(r.Evidence, "\n")}
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
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	_ = enc.Encode(doc)
	buf.WriteByte('\n')
	return buf.Bytes()
}
