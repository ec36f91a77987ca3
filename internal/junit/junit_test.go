package junit

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	doc := Suites{Suites: []Suite{{Name: "s", Tests: 2, Failures: 1, Time: "1.000", Cases: []Case{
		{Name: "ok", ClassName: "c", Time: "0.500"},
		{Name: "bad", ClassName: "c", Failure: &Failure{Message: "m<", Type: "t", Text: "x&y"}, SystemOut: "out"},
	}}}}
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	want := xml.Header + `<testsuites>
  <testsuite name="s" tests="2" failures="1" time="1.000">
    <testcase name="ok" classname="c" time="0.500"></testcase>
    <testcase name="bad" classname="c">
      <failure message="m&lt;" type="t">x&amp;y</failure>
      <system-out>out</system-out>
    </testcase>
  </testsuite>
</testsuites>
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	doc.Name, doc.Totals, doc.Tests, doc.Failures = "run", true, 2, 0
	b.Reset()
	if err := Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<testsuites name="run" tests="2" failures="0">`) {
		t.Errorf("totals missing:\n%s", b.String())
	}
	var back Suites
	if err := xml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != "run" || back.Tests != 2 || len(back.Suites) != 1 || len(back.Suites[0].Cases) != 2 || back.Suites[0].Cases[1].Failure.Text != "x&y" {
		t.Errorf("round trip: %+v", back)
	}
}
