package driver

import (
	"reflect"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/chaos/schedule"
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/witness/record"
)

// The mixed-faults-all schedule of every seed has every kind, replays from
// the JSON the report records (same seed, same schedule, the new kinds
// included), makes every kind's checks must-pass and fits its budget.
func TestMixedEveryKindSchedule(t *testing.T) {
	def, ok := scenario.ByName("mixed-faults-all")
	if !ok {
		t.Fatal("no mixed-faults-all scenario")
	}
	timing := scenario.DefaultTiming()
	for seed := int64(0); seed < 200; seed++ {
		sch, err := schedule.Generate(MixedConfig(seed, timing, true))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := sch.Marshal()
		back, err := schedule.Unmarshal(b)
		if err != nil || !reflect.DeepEqual(back, sch) {
			t.Fatalf("seed %d: the recorded schedule does not replay: %v", seed, err)
		}
		again, _ := schedule.Generate(MixedConfig(seed, timing, true))
		if !reflect.DeepEqual(again, sch) {
			t.Fatalf("seed %d: two schedules", seed)
		}
		drawn := map[schedule.Kind]bool{}
		for _, st := range sch.Steps {
			drawn[st.KindOf()] = true
		}
		if len(drawn) != len(scenario.MixedKinds) {
			t.Fatalf("seed %d: kinds %v, want all %d", seed, drawn, len(scenario.MixedKinds))
		}
		// Gaps and faults that last: the schedule's own time, a budget of
		// 2 minutes leaves room for the takeovers, deploy and collect.
		if total := sch.Total(); total > 2*time.Minute {
			t.Fatalf("seed %d: the schedule alone lasts %v", seed, total)
		}
		exp := scenario.MixedExpect(def.Expect, sch)
		for _, checks := range scenario.KindChecks {
			for _, c := range checks {
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

// A mixed run that did not draw a kind does not expect its checks to pass:
// they are informative, never a pass for lack of evidence; a control keeps
// its must-fail check and gains no must-pass one.
func TestMixedExpectFollowsTheDraw(t *testing.T) {
	def, _ := scenario.ByName("mixed-faults")
	sch := schedule.Schedule{Steps: []schedule.Step{{Kind: schedule.Partition}, {Kind: schedule.Pause}, {Kind: schedule.LostAnswers}}}
	exp := scenario.MixedExpect(def.Expect, sch)
	want := map[string]history.Expectation{check.StaleLeaderActed: history.MustPass, check.LostAnswersDeduplicated: history.MustPass,
		check.HeldWritesRejected: history.Any, check.FloorSurvivesRestart: history.Any, check.AckedWritesDurable: history.Any,
		check.NoStaleCommit: history.MustPass, check.OldLeaderStepsDown: history.MustPass}
	for c, w := range want {
		if exp[c] != w {
			t.Errorf("%s: %q, want %q", c, exp[c], w)
		}
	}
	if def.Expect[check.StaleLeaderActed] != history.Any {
		t.Error("MixedExpect changed the scenario's own map")
	}
	neg, _ := scenario.ByName("neg-mixed-forget-floor-sink")
	sch.Steps = append(sch.Steps, schedule.Step{Kind: schedule.SinkCrash})
	exp = scenario.MixedExpect(neg.Expect, sch)
	for c, o := range exp {
		if (o == history.MustFail) != (c == check.FloorSurvivesRestart) || o == history.MustPass {
			t.Errorf("control: %s is %q", c, o)
		}
	}
}

// The lost-answers step counts a lost answer once a later request with its
// Idempotency-Key was answered, and only those lost after it began.
func TestRetriedLost(t *testing.T) {
	t0 := time.Unix(100, 0)
	lost := func(id uint64, key string, at time.Time) record.Operation {
		return record.Operation{ID: id, Method: "PUT", IdempotencyKey: key, Type: record.OK, Status: 200, Invoked: at,
			Nemesis: &record.Fault{LostAnswer: true}}
	}
	ops := []record.Operation{
		lost(1, "old", t0.Add(-time.Second)),
		{ID: 2, Method: "PUT", IdempotencyKey: "old", Type: record.OK, Status: 200, Invoked: t0},
		lost(3, "a", t0.Add(time.Second)),
		{ID: 4, Method: "PUT", IdempotencyKey: "a", Type: record.Info, Invoked: t0.Add(2 * time.Second)}, // no answer yet
		lost(5, "b", t0.Add(3*time.Second)),
		{ID: 6, Method: "PUT", IdempotencyKey: "b", Type: record.OK, Status: 200, Invoked: t0.Add(4 * time.Second)},
	}
	if n := retriedLost(ops, t0); n != 1 {
		t.Fatalf("retried lost answers: %d, want 1 (b)", n)
	}
	ops = append(ops, record.Operation{ID: 7, Method: "PUT", IdempotencyKey: "a", Type: record.OK, Status: 200, Invoked: t0.Add(5 * time.Second)})
	if n := retriedLost(ops, t0); n != 2 {
		t.Fatalf("retried lost answers: %d, want 2", n)
	}
}
