package report

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// Markdown renders summary.md.
func Markdown(run *history.Run, results []check.Result) []byte {
	var b bytes.Buffer
	c := Count(results)
	status := "PASSED"
	if c.Failed > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(&b, "# fencecheck conformance %s: %s\n\n", run.Meta.RunID, status)
	fmt.Fprintf(&b, "%d results: %d as expected, %d not; %d negative controls caught; %d informative.\n\n", c.Total, c.OK, c.Failed, c.CaughtControls, c.Informative)
	fmt.Fprintf(&b, "Seed %d, %s to %s.\n", run.Meta.Seed, run.Meta.Started.UTC().Format(time.RFC3339), run.Meta.Ended.UTC().Format(time.RFC3339))
	if v := Versions(run.Meta.Versions); v != "" {
		fmt.Fprintf(&b, "Ran on: %s.\n", v)
	}
	if f := SuiteFlags(run.Meta.Flags); len(f) > 0 {
		fmt.Fprintf(&b, "Suite flags: `%s`\n", strings.Join(f, " "))
	}
	b.WriteString("\n")
	if ts := scenario.MeasureWaits(run); len(ts) > 0 {
		b.WriteString("Wall time against the waits a scenario cannot avoid (partitions, a lease TTL per leader deletion or restart, schedule gaps, settling commits); wall includes deploy and collect:\n\n")
		b.WriteString(TimingTable(ts))
		b.WriteString("\nThe run: scenarios run concurrently can finish no sooner than the longest scenario's unavoidable waits.\n\n")
		b.WriteString(RunTable(MeasureRun(run)))
		b.WriteString("\n")
	}
	for _, s := range run.Scenarios {
		fmt.Fprintf(&b, "## %s\n\n", s.Name)
		if s.Description != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Description)
		}
		cfg := s.Config
		fmt.Fprintf(&b, "Lease %v, renew %v, retry %v, drain_timeout %v, abort limit %v. Reconciler args `%s`, sink args `%s`.\n\n",
			cfg.LeaseDuration.D(), cfg.RenewDeadline.D(), cfg.RetryPeriod.D(), cfg.DrainTimeout.D(), cfg.AbortLimit.D(),
			strings.Join(cfg.ReconcilerArgs, " "), strings.Join(cfg.SinkArgs, " "))
		if u := s.UnderTest; u != nil {
			fmt.Fprintf(&b, "Controller under test: %s (Deployment %s; images %s).", u.Controller, u.Deployment, strings.Join(u.Images, ", "))
			if u.Note != "" {
				fmt.Fprintf(&b, " %s.", u.Note)
			}
			b.WriteString("\n\n")
		}
		if len(s.Phases) > 0 {
			b.WriteString("| phase | duration |\n|---|---|\n")
			for _, p := range s.Phases {
				fmt.Fprintf(&b, "| %s | %v |\n", p.Name, p.End.Sub(p.Start).Round(time.Millisecond))
			}
			b.WriteString("\n")
		}
		b.WriteString("| check | expected | verdict | evidence |\n|---|---|---|---|\n")
		for _, r := range results {
			if r.Scenario != s.Name {
				continue
			}
			ev := ""
			if len(r.Evidence) > 0 {
				ev = r.Evidence[0]
				if len(r.Evidence) > 1 {
					ev += fmt.Sprintf(" (+%d more)", len(r.Evidence)-1)
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Check, r.Expected, r.Outcome(), mdEscape(ev))
		}
		b.WriteString("\n")
		if len(s.ExpectChanges) > 0 {
			for _, ch := range s.ExpectChanges {
				fmt.Fprintf(&b, "- %s\n", changeText(ch))
			}
			b.WriteString("\n")
		}
		for _, r := range results {
			if r.Scenario == s.Name && linearizabilityViolated(r) {
				f := check.LinearizabilityFile(s.Name)
				fmt.Fprintf(&b, "Not linearizable: porcupine's visualization of the history is [%s](%s).\n\n", f, f)
			}
		}
		if ts, _, _ := check.TakeoverTimes(s); len(ts) > 0 {
			b.WriteString("| takeover | cause | terms | from | to first commit | bound | within |\n|---|---|---|---|---|---|---|\n")
			for _, t := range ts {
				fmt.Fprintf(&b, "| %s → %s | %s of %s | %d → %d | %s | %s | %v | %s |\n", t.From, t.To, t.Cause, t.CausePod, t.FromTerm, t.ToTerm,
					t.StartedBy(), tookText(t), t.Bound.Round(time.Millisecond), withinText(t))
			}
			b.WriteString("\n")
		}
		if len(s.Errors) > 0 {
			b.WriteString("Collection problems:\n\n")
			for _, e := range s.Errors {
				fmt.Fprintf(&b, "- %s\n", e)
			}
			b.WriteString("\n")
		}
		for _, r := range results {
			if r.Scenario == s.Name && !r.OK {
				fmt.Fprintf(&b, "### %s / %s: %s\n\n```\n%s\n```\n\n", s.Name, r.Check, r.Outcome(), strings.Join(r.Evidence, "\n"))
			}
		}
	}
	b.WriteString(notRunnable(run.NotRunnable))
	return b.Bytes()
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// SuiteFlags is the suite's command line without the go test runtime's
// own flags (-test.v=test2json, -test.timeout 40m, ...), which say how
// the binary ran, not what the suite was asked. A -test. flag without "="
// takes the next argument as its value unless that is a flag itself: the
// suite has no positional arguments.
func SuiteFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-test.") {
			out = append(out, a)
			continue
		}
		if !strings.Contains(a, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
		}
	}
	return out
}

// Versions is the run's versions (Kubernetes, kubelets, Go, images) as
// one line, "name value" in name order ("" when there are none).
func Versions(vs map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		parts = append(parts, k+" "+vs[k])
	}
	return strings.Join(parts, "; ")
}

// notRunnable is the summary's section on the scenarios the run could not
// run ("" when none).
func notRunnable(ns []history.NotRunnable) string {
	if len(ns) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Not runnable on this target (%d scenarios, no verdict)\n\n", len(ns))
	for _, n := range ns {
		fmt.Fprintf(&b, "- %s: %s\n", n.Scenario, n.Reason)
	}
	return b.String()
}

// NothingRan is the summary of a run that judged no scenario: why, and
// the scenarios its target could not run.
func NothingRan(runID, why string, ns []history.NotRunnable) []byte {
	return []byte(fmt.Sprintf("# fencecheck conformance %s: NO SCENARIO RAN\n\n%s.\n", runID, why) + notRunnable(ns))
}

// changeText says what an expectation change did and why.
func changeText(ch history.ExpectChange) string {
	from := string(ch.From)
	if from == "" {
		from = "none"
	}
	return fmt.Sprintf("expectation of %s changed at run time from %s to %s: %s", ch.Check, from, ch.To, ch.Reason)
}
