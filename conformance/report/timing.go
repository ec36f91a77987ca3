package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aclements/go-moremath/stats"
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/eventlog"
)

// TimingTable renders the timings as a Markdown table with totals: each
// scenario's whole wall time (deploy and collect included) and its active
// time (without them) against the waits it cannot avoid.
func TimingTable(ts []scenario.Waits) string {
	var b strings.Builder
	b.WriteString("| scenario | wall | deploy+collect | active | unavoidable waits | wall/unavoidable | active/unavoidable |\n|---|---|---|---|---|---|---|\n")
	var wall, setup, active, unav time.Duration
	for _, t := range ts {
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %v | %.2fx | %.2fx |\n", t.Scenario, t.Wall.Round(100*time.Millisecond), t.Setup.Round(100*time.Millisecond),
			t.Active.Round(100*time.Millisecond), t.Unavoidable.Round(100*time.Millisecond), ratio(t.Wall, t.Unavoidable), t.Ratio)
		wall, setup, active, unav = wall+t.Wall, setup+t.Setup, active+t.Active, unav+t.Unavoidable
	}
	fmt.Fprintf(&b, "| **total** | %v | %v | %v | %v | %.2fx | %.2fx |\n", wall.Round(time.Second), setup.Round(time.Second), active.Round(time.Second),
		unav.Round(time.Second), ratio(wall, unav), ratio(active, unav))
	return b.String()
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// RunTiming is a whole run's wall time against the waits no schedule can
// avoid, and its failover times: what running scenarios concurrently
// must shorten without making the failovers slower.
type RunTiming struct {
	RunID     string
	Parallel  string        // the suite's --parallel as run ("" if not given)
	Scenarios int           // with phases
	Wall      time.Duration // first scenario phase's start to the last one's end
	// Longest is the longest scenario's unavoidable waits: no schedule
	// can finish sooner. SumUnavoidable is a one-at-a-time run's floor.
	Longest         time.Duration
	LongestScenario string
	SumUnavoidable  time.Duration
	// DeployCollect is the mean per scenario.
	DeployCollect time.Duration
	// Failovers are every failover that reached a first commit, sorted
	// (injected to the new term's first commit); NoCommit counts those
	// that never did.
	Failovers []time.Duration
	NoCommit  int
	// ToAcquire and ToCommit split each timed failover that has the new
	// holder's acquireTime, both sorted: the lease mechanics (start to the
	// winning attempt) and the write path (that attempt to the first
	// commit). Which one grows under load says where parallel runs cost.
	ToAcquire, ToCommit []time.Duration
	// BesideDeploy are the failovers (in Failovers) timed while another
	// scenario deployed, the load the quiet gate keeps out: none with the
	// gate, and what it costs without.
	BesideDeploy []time.Duration
	// ControlFailovers counts the scenarios left out of Failovers: negative
	// controls whose failover-liveness must fail (slow on purpose).
	ControlFailovers int
	// SinkRoundTrips are the witness's clients' writes that got an answer
	// from the sink, invocation to completion, sorted (none the witness
	// held or cut on purpose): the load on the write path as the
	// harness's own proxy saw it. A drain of a full bridge takes about its
	// depth times this.
	SinkRoundTrips []time.Duration
	// Drains are the bridges' join waits as the reconcilers logged them
	// (their testimony), sorted; LateJoins counts those past drain_timeout.
	Drains    []time.Duration
	LateJoins int
}

// MeasureRun computes the run's timing from its history.
func MeasureRun(run *history.Run) RunTiming {
	rt := RunTiming{RunID: run.Meta.RunID, Parallel: flagValue(run.Meta.Flags, "parallel")}
	var first, last time.Time
	for _, s := range run.Scenarios {
		for _, p := range s.Phases {
			if first.IsZero() || p.Start.Before(first) {
				first = p.Start
			}
			if p.End.After(last) {
				last = p.End
			}
		}
		if s.Expect[check.FailoverLiveness] == history.MustFail {
			rt.ControlFailovers++ // a control whose failover must be slow: not the distribution
			continue
		}
		rt.addWrites(s)
		ts, _, _ := check.TakeoverTimes(s)
		for _, t := range ts {
			if !t.Judged() {
				rt.NoCommit++
				continue
			}
			rt.Failovers = append(rt.Failovers, t.Took)
			if deployingBeside(run, s, t.Start, t.FirstCommit) {
				rt.BesideDeploy = append(rt.BesideDeploy, t.Took)
			}
			if !t.Acquired.IsZero() {
				rt.ToAcquire = append(rt.ToAcquire, t.Acquired.Sub(t.Start))
				rt.ToCommit = append(rt.ToCommit, t.FirstCommit.Sub(t.Acquired))
			}
		}
	}
	slices.Sort(rt.Failovers)
	slices.Sort(rt.ToAcquire)
	slices.Sort(rt.ToCommit)
	slices.Sort(rt.SinkRoundTrips)
	slices.Sort(rt.Drains)
	var setup time.Duration
	for _, w := range scenario.MeasureWaits(run) {
		rt.Scenarios++
		rt.SumUnavoidable += w.Unavoidable
		setup += w.Setup
		if w.Unavoidable > rt.Longest {
			rt.Longest, rt.LongestScenario = w.Unavoidable, w.Scenario
		}
	}
	if rt.Scenarios > 0 {
		rt.DeployCollect = setup / time.Duration(rt.Scenarios)
	}
	rt.Wall = last.Sub(first)
	return rt
}

// deployingBeside: another scenario than s deployed between from and to.
func deployingBeside(run *history.Run, s *history.Scenario, from, to time.Time) bool {
	for _, o := range run.Scenarios {
		if o == s {
			continue
		}
		for _, p := range o.Phases {
			if p.Name == scenario.PhaseDeploy && p.Start.Before(to) && p.End.After(from) {
				return true
			}
		}
	}
	return false
}

// addWrites adds s's answered client writes at the witness and its bridge
// joins.
func (rt *RunTiming) addWrites(s *history.Scenario) {
	if s.Witness != nil {
		for _, o := range s.Witness.Operations {
			if o.Method == "PUT" && o.Harness == "" && o.Nemesis == nil && o.Status != 0 && !o.Completed.IsZero() {
				rt.SinkRoundTrips = append(rt.SinkRoundTrips, o.Completed.Sub(o.Invoked))
			}
		}
	}
	for _, evs := range s.Events {
		for _, ev := range evs {
			if ev.Kind != eventlog.KindBridgeJoined {
				continue
			}
			rt.Drains = append(rt.Drains, time.Duration(ev.DurationMs*float64(time.Millisecond)))
			if ev.JoinedInTime != nil && !*ev.JoinedInTime {
				rt.LateJoins++
			}
		}
	}
}

// flagValue is the value of -name or --name in a run's recorded flags.
func flagValue(flags []string, name string) string {
	for i, f := range flags {
		f = strings.TrimLeft(f, "-")
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
		if f == name && i+1 < len(flags) {
			return flags[i+1]
		}
	}
	return ""
}

// Percentile is the nearest-rank percentile p (0 to 100) of the
// failovers, 0 when there are none.
func (rt RunTiming) Percentile(p float64) time.Duration { return percentile(rt.Failovers, p) }

// percentile is the nearest-rank percentile p (0 to 100) of sorted, 0
// when it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(n))) - 1
	return sorted[min(max(i, 0), n-1)]
}

// Slower says whether the failovers in a are slower than those in base:
// the chance that one from a is the slower of a pair (0.5: no
// difference) and the one-sided Mann-Whitney U test's p (small: a is
// slower, not by chance).
func Slower(a, base []time.Duration) string {
	r, err := stats.MannWhitneyUTest(seconds(a), seconds(base), stats.LocationGreater)
	if err != nil {
		return "cannot tell: " + err.Error()
	}
	return fmt.Sprintf("%.2f, p = %.2f", r.U/float64(r.N1*r.N2), r.P)
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// RunTable renders runs side by side (one column each), so a serial and
// a parallel run of the same scenarios compare in one table.
func RunTable(rts ...RunTiming) string {
	var b strings.Builder
	rowAt := func(name string, cell func(i int, rt RunTiming) string) {
		b.WriteString("| " + name)
		for i, rt := range rts {
			b.WriteString(" | " + cell(i, rt))
		}
		b.WriteString(" |\n")
	}
	row := func(name string, cell func(RunTiming) string) {
		rowAt(name, func(_ int, rt RunTiming) string { return cell(rt) })
	}
	row("run", func(rt RunTiming) string { return rt.RunID })
	b.WriteString("|---" + strings.Repeat("|---", len(rts)) + "|\n")
	row("--parallel", func(rt RunTiming) string {
		if rt.Parallel == "" {
			return "(default)"
		}
		return rt.Parallel
	})
	row("scenarios", func(rt RunTiming) string { return fmt.Sprint(rt.Scenarios) })
	row("wall, all scenarios", func(rt RunTiming) string { return rt.Wall.Round(time.Second).String() })
	row("longest scenario's unavoidable waits", func(rt RunTiming) string {
		return fmt.Sprintf("%v (%s)", rt.Longest.Round(100*time.Millisecond), rt.LongestScenario)
	})
	row("**wall / longest unavoidable**", func(rt RunTiming) string { return fmt.Sprintf("**%.2fx**", ratio(rt.Wall, rt.Longest)) })
	row("sum of unavoidable waits", func(rt RunTiming) string { return rt.SumUnavoidable.Round(time.Second).String() })
	row("wall / sum of unavoidable", func(rt RunTiming) string { return fmt.Sprintf("%.2fx", ratio(rt.Wall, rt.SumUnavoidable)) })
	row("deploy+collect per scenario (mean)", func(rt RunTiming) string { return rt.DeployCollect.Round(100 * time.Millisecond).String() })
	row("failovers (with a first commit / none; slow-on-purpose control scenarios left out)", func(rt RunTiming) string {
		return fmt.Sprintf("%d / %d; %d left out", len(rt.Failovers), rt.NoCommit, rt.ControlFailovers)
	})
	for _, p := range []float64{50, 90, 99, 100} {
		name := fmt.Sprintf("failover p%g", p)
		if p == 100 {
			name = "failover max"
		}
		row(name, func(rt RunTiming) string { return rt.Percentile(p).Round(time.Millisecond).String() })
	}
	// Percentiles of 40-odd failovers move 0.3 s run to run (client-go's
	// retry jitter): whether one setting's failovers are slower is a
	// question for a rank test against the baseline, the last column.
	if len(rts) > 1 {
		vsBase := func(name string, of func(RunTiming) []time.Duration) {
			base := of(rts[len(rts)-1])
			rowAt(name, func(i int, rt RunTiming) string {
				if i == len(rts)-1 {
					return "(the baseline)"
				}
				return Slower(of(rt), base)
			})
		}
		vsBase("failovers slower than the last column's? P(slower), one-sided Mann-Whitney p", func(rt RunTiming) []time.Duration { return rt.Failovers })
		vsBase("its write path (winning attempt to first commit) slower? P(slower), p", func(rt RunTiming) []time.Duration { return rt.ToCommit })
	}
	row("failovers timed beside another scenario's deploy: n, mean (the others' mean)", func(rt RunTiming) string {
		if len(rt.BesideDeploy) == 0 {
			return "none"
		}
		var beside, all time.Duration
		for _, d := range rt.BesideDeploy {
			beside += d
		}
		for _, d := range rt.Failovers {
			all += d
		}
		n, rest := len(rt.BesideDeploy), len(rt.Failovers)-len(rt.BesideDeploy)
		others := "none"
		if rest > 0 {
			others = ((all - beside) / time.Duration(rest)).Round(time.Millisecond).String()
		}
		return fmt.Sprintf("%d, %v (%s)", n, (beside / time.Duration(n)).Round(time.Millisecond), others)
	})
	split := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "no acquireTime recorded"
		}
		return fmt.Sprintf("%v / %v / %v (%d)", percentile(ds, 50).Round(time.Millisecond), percentile(ds, 90).Round(time.Millisecond),
			percentile(ds, 100).Round(time.Millisecond), len(ds))
	}
	row("failover to the winning attempt (Lease acquireTime), p50 / p90 / max", func(rt RunTiming) string { return split(rt.ToAcquire) })
	row("failover from it to the first commit, p50 / p90 / max", func(rt RunTiming) string { return split(rt.ToCommit) })
	// Why a drain can overrun drain_timeout under load: its depth times
	// the round trip.
	row("sink round trip at the witness, p50 / p90 / max (client writes answered)", func(rt RunTiming) string {
		if len(rt.SinkRoundTrips) == 0 {
			return "none recorded"
		}
		return fmt.Sprintf("%v / %v / %v (%d)", percentile(rt.SinkRoundTrips, 50).Round(100*time.Microsecond),
			percentile(rt.SinkRoundTrips, 90).Round(100*time.Microsecond), percentile(rt.SinkRoundTrips, 100).Round(100*time.Microsecond), len(rt.SinkRoundTrips))
	})
	row("bridge join waits, p50 / max; late (reconcilers' own events)", func(rt RunTiming) string {
		if len(rt.Drains) == 0 {
			return "none logged"
		}
		return fmt.Sprintf("%v / %v; %d late", percentile(rt.Drains, 50).Round(time.Millisecond), percentile(rt.Drains, 100).Round(time.Millisecond), rt.LateJoins)
	})
	return b.String()
}
