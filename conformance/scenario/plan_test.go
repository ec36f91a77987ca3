package scenario

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// The mixed-faults-all schedule of every seed has every kind, replays from
// the JSON the report records (same seed, same schedule, the new kinds
// included), makes every kind's checks must-pass and fits its budget.
func TestMixedEveryKindSchedule(t *testing.T) {
	def, ok := ByName("mixed-faults-all")
	if !ok {
		t.Fatal("no mixed-faults-all scenario")
	}
	timing := DefaultTiming()
	for seed := int64(0); seed < 200; seed++ {
		p, err := def.Plan(seed, timing, 3)
		if err != nil {
			t.Fatal(err)
		}
		sch := *p.Schedule
		b, _ := sch.Marshal()
		back, err := fault.Unmarshal(b)
		if err != nil || !reflect.DeepEqual(back, sch) {
			t.Fatalf("seed %d: the recorded schedule does not replay: %v", seed, err)
		}
		again, _ := def.Plan(seed, timing, 3)
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("seed %d: two plans", seed)
		}
		drawn := map[fault.Kind]bool{}
		for _, st := range p.Steps {
			drawn[st.KindOf()] = true
		}
		if len(drawn) != len(fault.Mixed()) {
			t.Fatalf("seed %d: kinds %v, want all %d", seed, drawn, len(fault.Mixed()))
		}
		// Gaps and faults that last: the schedule's own time, a budget of
		// 2 minutes leaves room for the takeovers, deploy and collect.
		if total := sch.Total(); total > 2*time.Minute {
			t.Fatalf("seed %d: the schedule alone lasts %v", seed, total)
		}
		exp := expectAfter(def, p)
		for _, w := range fault.Mixed() {
			f, _ := fault.Of(w.Kind)
			for _, c := range f.Checks {
				if exp[c] != history.MustPass {
					t.Fatalf("seed %d: %s is %q, want must-pass (its kind was drawn)", seed, c, exp[c])
				}
			}
		}
		// The sink crash took the killed instance's history: the checks
		// that read it are informative, the witness's must pass.
		if exp[check.NoStaleCommit] != history.Any || exp[check.Linearizable] != history.MustPass {
			t.Fatalf("seed %d: after a sink crash no-stale-commit %q, linearizable %q", seed, exp[check.NoStaleCommit], exp[check.Linearizable])
		}
	}
}

// expectAfter is what a run of d expects once p is drawn.
func expectAfter(d Def, p Plan) map[string]history.Expectation {
	h := &history.Scenario{Name: d.Name, Expect: maps.Clone(d.Expect)}
	Expect(h, d, p)
	return h.Expect
}

// planOf is a plan of the kinds given, as a mixed schedule draws them.
func planOf(kinds ...fault.Kind) Plan {
	p := Plan{Schedule: &fault.Schedule{Config: fault.Config{Kinds: fault.Mixed()}}}
	for i, k := range kinds {
		p.Steps = append(p.Steps, Step{Step: fault.Step{Index: i, Kind: k}})
	}
	return p
}

// A mixed run that did not draw a kind does not expect its checks to pass:
// they are informative, never a pass for lack of evidence; a control keeps
// its must-fail check and gains no must-pass one. Every change is
// recorded with its reason.
func TestMixedExpectFollowsTheDraw(t *testing.T) {
	def, _ := ByName("mixed-faults")
	p := planOf(fault.Partition, fault.Pause, fault.LostAnswers)
	h := &history.Scenario{Name: def.Name, Expect: maps.Clone(def.Expect)}
	Expect(h, def, p)
	want := map[string]history.Expectation{check.StaleLeaderActed: history.MustPass, check.LostAnswersDeduplicated: history.MustPass,
		check.HeldWritesRejected: history.Any, check.FloorSurvivesRestart: history.Any, check.AckedWritesDurable: history.Any,
		check.NoStaleCommit: history.MustPass, check.OldLeaderStepsDown: history.MustPass}
	for c, w := range want {
		if h.Expect[c] != w {
			t.Errorf("%s: %q, want %q", c, h.Expect[c], w)
		}
	}
	if len(h.ExpectChanges) != 2 {
		t.Errorf("changes %+v, want the two drawn kinds' checks", h.ExpectChanges)
	}
	for _, ch := range h.ExpectChanges {
		if ch.From != history.Any || ch.To != history.MustPass || ch.Reason == "" {
			t.Errorf("change %+v", ch)
		}
	}
	if def.Expect[check.StaleLeaderActed] != history.Any {
		t.Error("Expect changed the scenario's own map")
	}
	neg, _ := ByName("neg-mixed-forget-floor-sink")
	exp := expectAfter(neg, planOf(fault.Partition, fault.Pause, fault.LostAnswers, fault.SinkCrash))
	for c, o := range exp {
		if (o == history.MustFail) != (c == check.FloorSurvivesRestart) || o == history.MustPass {
			t.Errorf("control: %s is %q", c, o)
		}
	}
}

// One fault is one step, named after its fault and as long as the run's
// partition; the repeated schedule ends with a pod deletion and a rolling
// restart after its partitions.
func TestPlans(t *testing.T) {
	timing := DefaultTiming()
	heal, _ := ByName("partition-heal")
	p, err := heal.Plan(7, timing, 3)
	if err != nil || p.Schedule != nil || len(p.Steps) != 1 || p.Steps[0].Phase != "partition" || p.Steps[0].Length != timing.Partition ||
		p.Steps[0].Role != fault.Leader {
		t.Errorf("partition-heal: %+v, %v", p, err)
	}
	rep, _ := ByName("repeated-takeovers")
	p, err = rep.Plan(7, timing, 3)
	if err != nil || p.Schedule == nil || len(p.Steps) != 5 {
		t.Fatalf("repeated-takeovers: %+v, %v", p, err)
	}
	var phases []string
	for _, st := range p.Steps {
		phases = append(phases, st.Phase)
	}
	if phases[3] != "pod-delete-3" || phases[4] != "rolling-restart-4" || phases[0][:len("partition-0-")] != "partition-0-" {
		t.Errorf("phases %v", phases)
	}
	if _, err := (Def{Name: "x", Fault: "no-such-fault"}).Plan(7, timing, 3); err == nil {
		t.Error("a fault that is not registered must not plan")
	}
}
