package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/eventlog"
)

func TestTimings(t *testing.T) {
	s := synth.Scenario("p", synth.Defect{})
	// synthetic phases: deploy 1s, steady 4s, partition 9s, heal 6s; one 9s
	// partition; write interval 500ms, so settle = 2.5s per leader.
	ts := scenario.MeasureWaits(synth.Run("r", s))
	if len(ts) != 1 {
		t.Fatal(ts)
	}
	got := ts[0]
	if got.Wall != 20*time.Second || got.Setup != time.Second || got.Active != 19*time.Second {
		t.Errorf("wall/setup/active %+v", got)
	}
	if want := 9*time.Second + 2*2500*time.Millisecond; got.Unavoidable != want {
		t.Errorf("unavoidable %v, want %v", got.Unavoidable, want)
	}
	if got.Ratio < 1.35 || got.Ratio > 1.36 {
		t.Errorf("ratio %.3f", got.Ratio)
	}
	if tab := TimingTable(ts); !strings.Contains(tab, "| p | 20s | 1s | 19s | 14s | 1.43x | 1.36x |") {
		t.Errorf("table:\n%s", tab)
	}
}

func TestRunTiming(t *testing.T) {
	a, b := synth.Scenario("a", synth.Defect{}), synth.Scenario("b", synth.Defect{})
	// b runs 5s after a, beside it.
	for i := range b.Phases {
		b.Phases[i].Start = b.Phases[i].Start.Add(5 * time.Second)
		b.Phases[i].End = b.Phases[i].End.Add(5 * time.Second)
	}
	r := synth.Run("r", a, b)
	r.Meta.Flags = []string{"--kubeconfig", "k", "--parallel", "2"}
	rt := MeasureRun(r)
	if rt.Wall != 25*time.Second || rt.Longest != 14*time.Second || rt.SumUnavoidable != 28*time.Second || rt.Parallel != "2" || rt.Scenarios != 2 {
		t.Errorf("%+v", rt)
	}
	if len(rt.Failovers) != 2 || rt.Percentile(50) != rt.Failovers[0] || rt.Percentile(100) != rt.Failovers[1] {
		t.Errorf("failovers %v", rt.Failovers)
	}
	// b deploys (5-6 s) while a's failover runs; nothing deploys during b's.
	if len(rt.BesideDeploy) != 1 {
		t.Errorf("failovers beside another scenario's deploy: %v, want a's alone", rt.BesideDeploy)
	}
	own := synth.Scenario("own", synth.Defect{})
	own.Phases[0].End = own.Phases[len(own.Phases)-1].End // its deploy spans its failover
	if own.Phases[0].Name != scenario.PhaseDeploy {
		t.Fatalf("synthetic phase 0 is %q, want the deploy", own.Phases[0].Name)
	}
	if lone := MeasureRun(synth.Run("s", own)); len(lone.BesideDeploy) != 0 {
		t.Errorf("one scenario alone: %v beside a deploy, want none (its own deploy does not count)", lone.BesideDeploy)
	}
	tab := RunTable(rt, MeasureRun(synth.Run("s", a)))
	for _, want := range []string{"| run | r | s |", "| --parallel | 2 | (default) |", "| **wall / longest unavoidable** | **1.79x** | **1.43x** |", "| failover p50 |"} {
		if !strings.Contains(tab, want) {
			t.Errorf("no %q in\n%s", want, tab)
		}
	}
	// A control whose failover must be slow stays out of the distribution.
	slow := synth.Scenario("slow", synth.Defect{})
	slow.Expect = map[string]history.Expectation{check.FailoverLiveness: history.MustFail}
	if rt := MeasureRun(synth.Run("c", a, slow)); len(rt.Failovers) != 1 || rt.ControlFailovers != 1 {
		t.Errorf("with a slow-failover control: %d failovers, %d left out; want 1 and 1", len(rt.Failovers), rt.ControlFailovers)
	}
	if RunTiming.Percentile(RunTiming{}, 50) != 0 {
		t.Error("no failovers: percentile 0")
	}
}

// The write path's load: the witness's round trips and the bridges' join
// waits, a late one counted.
func TestRunTimingWritePath(t *testing.T) {
	s := synth.Scenario("w", synth.Defect{})
	rt := MeasureRun(synth.Run("r", s))
	if len(rt.SinkRoundTrips) == 0 || len(rt.Drains) == 0 || rt.LateJoins != 0 {
		t.Fatalf("round trips %d, drains %d, late %d", len(rt.SinkRoundTrips), len(rt.Drains), rt.LateJoins)
	}
	no := false
	for pod, evs := range s.Events {
		for i, ev := range evs {
			if ev.Kind == eventlog.KindBridgeJoined {
				s.Events[pod][i].JoinedInTime, s.Events[pod][i].DurationMs = &no, 16000
			}
		}
	}
	rt = MeasureRun(synth.Run("r", s))
	if rt.LateJoins == 0 || rt.Drains[len(rt.Drains)-1] != 16*time.Second {
		t.Errorf("a late join: %d late, drains %v", rt.LateJoins, rt.Drains)
	}
	tab := RunTable(rt)
	for _, want := range []string{"| sink round trip at the witness, p50 / p90 / max (client writes answered) | ", "16s; " + fmt.Sprint(rt.LateJoins) + " late |"} {
		if !strings.Contains(tab, want) {
			t.Errorf("no %q in\n%s", want, tab)
		}
	}
	if tab := RunTable(RunTiming{}); !strings.Contains(tab, "none recorded") || !strings.Contains(tab, "none logged") {
		t.Errorf("an empty run:\n%s", tab)
	}
}

// A failover splits at the new holder's acquireTime into the lease
// mechanics and the write path; without one it is not split.
func TestRunTimingSplit(t *testing.T) {
	s := synth.Scenario("split", synth.Defect{})
	if rt := MeasureRun(synth.Run("r", s)); len(rt.Failovers) == 0 || len(rt.ToAcquire) != 0 {
		t.Fatalf("no acquireTime: %d failovers, %d split; want some and none", len(rt.Failovers), len(rt.ToAcquire))
	}
	tos := check.Takeovers(s)
	var to check.Takeover
	for _, x := range tos {
		if x.From != "" {
			to = x
		}
	}
	times, _, _ := check.TakeoverTimes(s)
	var took check.TakeoverTime
	for _, x := range times {
		if x.ToTerm == to.ToTerm {
			took = x
		}
	}
	if !took.Judged() {
		t.Fatalf("the synthetic takeover to term %d is not timed: %+v", to.ToTerm, times)
	}
	acq := took.Start.Add(4 * time.Second)
	s.Lease.Records[to.Index].AcquireTime = &acq
	rt := MeasureRun(synth.Run("r", s))
	if len(rt.ToAcquire) != 1 || rt.ToAcquire[0] != 4*time.Second || rt.ToAcquire[0]+rt.ToCommit[0] != took.Took {
		t.Errorf("split %v + %v, want 4s + the rest of %v", rt.ToAcquire, rt.ToCommit, took.Took)
	}
	if tab := RunTable(rt); !strings.Contains(tab, "| failover to the winning attempt (Lease acquireTime), p50 / p90 / max | 4s / 4s / 4s (1) |") {
		t.Errorf("table:\n%s", tab)
	}
}

// Slower tells a shifted distribution from the same one: the rank test
// finds failovers 1 s slower, and not ones that only differ by order.
func TestSlower(t *testing.T) {
	var base, same, late []time.Duration
	for i := range 40 {
		d := 4*time.Second + time.Duration(i)*50*time.Millisecond // 4 s to 5.95 s
		base = append(base, d)
		same = append(same, 4*time.Second+time.Duration(39-i)*50*time.Millisecond)
		late = append(late, d+time.Second)
	}
	// A 1 s shift over a 2 s spread: 1 - (1/2)²/2 of the pairs.
	if got := Slower(late, base); got != "0.88, p = 0.00" {
		t.Errorf("1 s later: %s, want 0.88, p = 0.00", got)
	}
	if got := Slower(same, base); got != "0.50, p = 0.50" {
		t.Errorf("the same failovers: %s, want 0.50, p = 0.50", got)
	}
	if got := Slower(nil, base); !strings.HasPrefix(got, "cannot tell") {
		t.Errorf("no failovers: %s", got)
	}
	tab := RunTable(RunTiming{RunID: "p3", Failovers: late}, RunTiming{RunID: "p1", Failovers: base})
	if !strings.Contains(tab, "| failovers slower than the last column's? P(slower), one-sided Mann-Whitney p | 0.88, p = 0.00 |") || !strings.Contains(tab, "(the baseline) |") {
		t.Errorf("table:\n%s", tab)
	}
}
