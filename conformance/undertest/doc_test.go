package undertest

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

var update = flag.Bool("update", false, "rewrite the generated section of docs/controller-contract.md")

const (
	contractDoc = "../../docs/controller-contract.md"
	beginMark   = "<!-- BEGIN GENERATED: scenarios (go test ./conformance/undertest -run TestDocListsTheScenarios -update) -->"
	endMark     = "<!-- END GENERATED: scenarios -->"
)

// The doc's list of which scenarios run on a user's controller, which on
// our fixture, and what each must pass is generated from
// conformance/scenario, so it cannot drift from what the suite does.
func TestDocListsTheScenarios(t *testing.T) {
	b, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, beginMark), strings.Index(doc, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s: no section between %q and %q", contractDoc, beginMark, endMark)
	}
	want := "\n" + scenarioSection() + "\n"
	if doc[i+len(beginMark):j] == want {
		return
	}
	if *update {
		if err := os.WriteFile(contractDoc, []byte(doc[:i+len(beginMark)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the scenario list differs from conformance/scenario; regenerate it with\n  go test ./conformance/undertest -run TestDocListsTheScenarios -update\nwant:\n%s", contractDoc, want)
}

func code(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
		if c, _ := check.ByName(n); slices.Contains(c.Needs, history.EvidenceEvents) {
			out[i] += "†"
		}
	}
	return strings.Join(out, ", ")
}

// with returns the checks of d expected o, in report order. A one-fault
// scenario's are those after its plan (scenario.Expect: a sink crash makes
// the checks that read the sink's own history informative); a schedule's
// depend on its seed and the doc says so in words.
func with(d scenario.Def, o history.Expectation) []string {
	h := &history.Scenario{Expect: maps.Clone(d.Expect)}
	if !d.Multistep() {
		p, err := d.Plan(1, scenario.Timing{}, 0)
		if err != nil {
			panic(err)
		}
		scenario.Expect(h, d, p)
	}
	if len(d.FixtureModes()) == 0 {
		scenario.StaleActNotRequired(h) // as the suite does on a controller under test
	}
	var out []string
	for _, c := range check.Names() {
		if h.Expect[c] == o {
			out = append(out, c)
		}
	}
	return out
}

// safetySet is what every scenario on a user's controller that is not a
// control, and that keeps the sink's history, must pass.
func safetySet(defs []scenario.Def) []string {
	var set []string
	first := true
	for _, d := range defs {
		if d.NegativeControl() || d.Fault == fault.SinkCrash {
			continue // its row says which safety checks it cannot judge
		}
		must := with(d, history.MustPass)
		if first {
			set, first = must, false
			continue
		}
		set = slices.DeleteFunc(set, func(c string) bool { return !slices.Contains(must, c) })
	}
	return set
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// scenarioSection renders the generated part of the doc.
func scenarioSection() string {
	var yours, ours []scenario.Def
	for _, d := range scenario.All() {
		if len(d.FixtureModes()) == 0 {
			yours = append(yours, d)
		} else {
			ours = append(ours, d)
		}
	}
	safety := safetySet(yours)
	var b strings.Builder
	fmt.Fprintf(&b, "**On your controller: %d scenarios.** Each scenario that is not a negative control must pass the safety checks, %s, and the checks in its row.\n\n", len(yours), code(safety))
	b.WriteString("| scenario | what the suite does | must also pass |\n|---|---|---|\n")
	for _, d := range yours {
		if d.NegativeControl() {
			continue
		}
		must := with(d, history.MustPass)
		extra := slices.DeleteFunc(slices.Clone(must), func(c string) bool { return slices.Contains(safety, c) })
		missing := slices.DeleteFunc(slices.Clone(safety), func(c string) bool { return slices.Contains(must, c) })
		s := code(extra)
		if len(missing) > 0 {
			s = fmt.Sprintf("%s; not %s (they read the sink's own history, which the SIGKILL takes with it)", s, code(missing))
		}
		if s == "" {
			s = "(the safety checks only)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, cell(d.Description), s)
	}
	var kinds []string
	for _, f := range fault.All {
		must := slices.DeleteFunc(slices.Clone(f.Checks), func(c string) bool { return c == check.StaleLeaderActed })
		if f.Mix > 0 && len(must) > 0 {
			kinds = append(kinds, fmt.Sprintf("%s: %s", f.Kind, code(must)))
		}
	}
	sort.Strings(kinds)
	var mixed, every []string
	for _, d := range yours {
		switch {
		case d.NegativeControl():
		case d.Schedule == scenario.Mixed:
			mixed = append(mixed, d.Name)
		case d.Schedule == scenario.MixedEveryKind:
			mixed, every = append(mixed, d.Name), append(every, d.Name)
		}
	}
	fmt.Fprintf(&b, "\nThe seeded schedules (%s) also must pass the checks of each kind of fault their seed draws (%s); %s draws every kind.\n",
		code(mixed), strings.Join(kinds, "; "), code(every))
	b.WriteString("\nNegative controls on your controller: our sink is broken, your controller runs as always, and these checks must FAIL (every other check is informative):\n\n")
	b.WriteString("| scenario | what the suite does | must fail |\n|---|---|---|\n")
	for _, d := range yours {
		if d.NegativeControl() {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, cell(d.Description), code(with(d, history.MustFail)))
		}
	}
	var needStale []string
	for _, d := range yours {
		if d.NegativeControl() && d.Expect[check.NoStaleCommit] == history.MustFail {
			needStale = append(needStale, d.Name)
		}
	}
	if len(needStale) > 0 {
		fmt.Fprintf(&b, "\n%s can show its sink's defect only through a stale write: when your controller sent nothing stale after its successor's grant, `%s` is informative there (the run records why), not an escape.\n", code(needStale), check.NoStaleCommit)
	}
	b.WriteString("\n† judged only when your controller prints FCEVENT lines (the MAY below); without any, INCONCLUSIVE \"not applicable\" and not counted against you.\n")
	fmt.Fprintf(&b, "\n`%s` is judged wherever a pause runs (`pause-leader`, and a schedule that draws one) but expects nothing of your controller: the contract never asks a leader to act stale (MUST 7).\n", check.StaleLeaderActed)
	fmt.Fprintf(&b, "\n**On our fixture: %d scenarios.** Each needs a mode your controller has no reason to have; the test log and `under_test.note` say so.\n\n", len(ours))
	b.WriteString("| scenario | the fixture's flags it needs |\n|---|---|\n")
	for _, d := range ours {
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", d.Name, strings.Join(d.FixtureModes(), " "))
	}
	return strings.TrimRight(b.String(), "\n")
}

// The rules the doctor names are the doc's: "MUST N" a heading
// "### MUST N. ...", "SHOULD N" item N of the SHOULD list.
func TestRulesAreTheDocs(t *testing.T) {
	b, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	should := doc[strings.Index(doc, "\n## SHOULD\n"):]
	should = should[:strings.Index(should[1:], "\n## ")+1]
	for _, rule := range []string{MustLease, MustSink, MustDirectory, MustRestricted, ShouldTiming, ShouldReady, ShouldFollow} {
		var kind string
		var n int
		if _, err := fmt.Sscanf(rule, "%s %d", &kind, &n); err != nil {
			t.Fatalf("%q: %v", rule, err)
		}
		switch kind {
		case "MUST":
			if !strings.Contains(doc, fmt.Sprintf("\n### MUST %d. ", n)) {
				t.Errorf("%q: the doc has no heading \"### MUST %d.\"", rule, n)
			}
		case "SHOULD":
			if !strings.Contains(should, fmt.Sprintf("\n%d. **", n)) {
				t.Errorf("%q: the doc's SHOULD list has no item %d", rule, n)
			}
		}
	}
}
