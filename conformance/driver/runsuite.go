package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/report"
	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// Options are how RunSuite runs a suite.
type Options struct {
	// Config is what every scenario of the run shares (its Quiet is set
	// by RunSuite from Parallel and QuietGate).
	Config
	// Parallel is how many scenarios run at once (below 1: one); a
	// scenario marked Exclusive always runs alone, after the others.
	Parallel int
	// QuietGate, with Parallel above 1, keeps every fault step, until its
	// failover is over, apart from other scenarios' deploys (Quiet).
	QuietGate bool
	// Fixture, when the target runs a user's controller, is a target with
	// our fixture: the scenarios that need its modes (Def.FixtureModes)
	// run there, and say so. Nil: the target runs our fixture.
	Fixture Target
	// Controller names the user's controller in those notes.
	Controller string
	// Meta is the run's description (run id, seed, versions, flags);
	// RunSuite sets its Started and Ended.
	Meta history.Meta
	// Judged, if set, is called once a scenario is judged, with its
	// history, its results and the error that stopped it (if any); it may
	// be called from several goroutines at once.
	Judged func(h *history.Scenario, results []check.Result, err error)
	// Reports, if set, is the directory the run's reports are written
	// to (report.Write), from the verdicts judged once.
	Reports string
}

// RunSuite runs defs on target and returns the run: every scenario's
// history, in the order of defs, and the scenarios the target could not
// run, with why. It runs at most opts.Parallel scenarios at once (RunAll),
// behind the quiet gate when asked; judges each scenario once, logs each
// result and calls opts.Judged; and writes the reports when
// opts.Reports is set. The error is about the run as a whole (no
// scenario ran, the reports could not be written); a scenario's own
// failure is in its history and its results.
func RunSuite(ctx context.Context, target Target, defs []scenario.Def, opts Options) (*history.Run, error) {
	su := &suite{opts: opts, byName: map[string][]check.Result{}}
	cfg := opts.Config
	if opts.Parallel > 1 && opts.QuietGate {
		cfg.Quiet = NewQuiet()
	}
	su.main = &Driver{Target: target, Config: cfg}
	if opts.Fixture != nil {
		su.fixture = &Driver{Target: opts.Fixture, Config: cfg}
	}
	run := &history.Run{Meta: opts.Meta}
	run.Meta.Started = time.Now()
	var runnable []scenario.Def
	for _, d := range defs {
		if why := NotRunnable(su.driverFor(d).Target, d); why != "" {
			su.logf("%s: NOT RUNNABLE on the %s target: %s", d.Name, target.Name(), why)
			run.NotRunnable = append(run.NotRunnable, history.NotRunnable{Scenario: d.Name, Reason: why})
			continue
		}
		runnable = append(runnable, d)
	}
	su.logf("running %d scenarios, %d at a time", len(runnable), max(opts.Parallel, 1))
	RunAll(opts.Parallel, runnable, func(d scenario.Def) { su.one(ctx, d) })
	run.Meta.Ended = time.Now()
	// Workers finish in any order: the run keeps the scenarios' own.
	var results []check.Result
	for _, d := range runnable {
		if h := su.hist(d.Name); h != nil {
			run.Scenarios = append(run.Scenarios, h)
			results = append(results, su.byName[d.Name]...)
		}
	}
	if len(run.Scenarios) == 0 {
		return run, errors.New("no scenario ran (none selected, or none the target can run)")
	}
	if opts.Reports != "" {
		if err := report.Write(opts.Reports, run, results); err != nil {
			return run, err
		}
		c := report.Count(results)
		su.logf("reports in %s: %d results, %d as expected, %d not, %d negative controls caught", opts.Reports, c.Total, c.OK, c.Failed, c.CaughtControls)
	}
	return run, nil
}

// NotRunnable says why target cannot run d ("" when it can): a fault d
// may inject needs something the target lacks.
func NotRunnable(target Target, d scenario.Def) string {
	var why []string
	for _, k := range d.Kinds() {
		f, ok := fault.Of(k)
		if !ok {
			return fmt.Sprintf("no fault %q in this build", k)
		}
		for _, c := range f.Needs {
			if lack := target.Lacks(c); lack != "" {
				why = append(why, fmt.Sprintf("its fault %s needs a %s: %s", k, c, lack))
			}
		}
	}
	return strings.Join(why, "; ")
}

// suite is one RunSuite in progress.
type suite struct {
	opts          Options
	main, fixture *Driver

	mu     sync.Mutex
	hists  []*history.Scenario
	byName map[string][]check.Result
	sayMu  sync.Mutex
}

func (su *suite) logf(format string, a ...any) {
	if su.opts.Logf != nil {
		su.opts.Logf(format, a...)
	}
}

// driverFor is the driver of d: the user's controller's (the target's),
// unless d needs our fixture's modes and there is a fixture target.
func (su *suite) driverFor(d scenario.Def) *Driver {
	if su.fixture != nil && len(d.FixtureModes()) > 0 {
		return su.fixture
	}
	return su.main
}

// one runs, judges and keeps one scenario.
func (su *suite) one(ctx context.Context, d scenario.Def) {
	dr := su.driverFor(d)
	h, err := dr.Run(ctx, d)
	if dr == su.fixture {
		note := fmt.Sprintf("runs on our fixture, not on %s: it needs the fixture's %s", su.opts.Controller, strings.Join(d.FixtureModes(), " "))
		if h.UnderTest == nil {
			h.UnderTest = &history.UnderTest{Controller: "built-in fixture (manifests/reconciler)"}
		}
		h.UnderTest.Note = note
		su.logf("%s: %s", d.Name, note)
	}
	if su.fixture != nil && dr == su.main {
		if h.Missing[history.EvidenceEvents] == nil && scenario.EventChecksNotApplicable(h) {
			su.logf("%s: %s", d.Name, scenario.NoEventLog)
		}
		scenario.StaleActNotRequired(h)
		if scenario.StaleControlNotApplicable(h) {
			su.logf("%s: the controller sent nothing stale: this control cannot show its sink's defect (no-stale-commit informative)", d.Name)
		}
	}
	if err != nil {
		su.logf("%s: %v", d.Name, err)
	}
	rs := check.EvaluateScenario(h)
	su.say(h, rs)
	su.mu.Lock()
	su.hists = append(su.hists, h)
	su.byName[d.Name] = rs
	su.mu.Unlock()
	if su.opts.Judged != nil {
		su.opts.Judged(h, rs, err)
	}
}

// say logs a scenario's results, one line each, then its takeovers.
func (su *suite) say(h *history.Scenario, rs []check.Result) {
	su.sayMu.Lock() // one scenario's lines together
	defer su.sayMu.Unlock()
	for _, r := range rs {
		su.logf("%s", resultLine(r))
	}
	ts, _, _ := check.TakeoverTimes(h)
	for _, t := range ts {
		su.logf("%s: takeover after %s of %s: term %d -> %d in %v from %s (bound %v, within %v)", h.Name, t.Cause, t.CausePod, t.FromTerm, t.ToTerm,
			t.Took.Round(time.Millisecond), t.StartedBy(), t.Bound.Round(time.Millisecond), t.Within())
	}
}

// hist is the recorded history of the scenario named name (nil if none).
func (su *suite) hist(name string) *history.Scenario {
	su.mu.Lock()
	defer su.mu.Unlock()
	i := slices.IndexFunc(su.hists, func(h *history.Scenario) bool { return h.Name == name })
	if i < 0 {
		return nil
	}
	return su.hists[i]
}

// Problems are the lines that say what went wrong with a judged scenario
// (a runner marks its test failed with them): the error that stopped it,
// and each result that is not what the scenario expects.
func Problems(h *history.Scenario, results []check.Result, err error) []string {
	var out []string
	if err != nil {
		out = append(out, fmt.Sprintf("%s: %v", h.Name, err))
	}
	for _, r := range results {
		if !r.OK {
			out = append(out, resultLine(r))
		}
	}
	return out
}

// resultLine is one result on one line.
func resultLine(r check.Result) string {
	return fmt.Sprintf("%s %s/%s (expected %s): %s", r.Outcome(), r.Scenario, r.Check, r.Expected, strings.Join(r.Evidence, " | "))
}
