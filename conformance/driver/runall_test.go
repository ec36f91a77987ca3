package driver

import (
	"fmt"
	"sync"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"

	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// RunAll keeps at most parallel scenarios running, runs each once, and
// runs an exclusive scenario with nothing else running.
func TestRunAllBoundsAndIsolates(t *testing.T) {
	defs := []scenario.Def{{Name: "a"}, {Name: "b"}, {Name: "whole", Exclusive: true}, {Name: "c"}, {Name: "d"}, {Name: "e"}}
	for _, parallel := range []int{0, 1, 2, 4, 10} {
		var mu sync.Mutex
		running, peak := 0, 0
		ran := map[string]int{}
		var order []string
		release := make(chan struct{})
		started := make(chan struct{}, len(defs))
		go func() {
			// Let the workers pile up before any finishes, so the bound is
			// what stops them.
			for range min(max(parallel, 1), len(defs)-1) {
				<-started
			}
			close(release)
		}()
		RunAll(parallel, defs, func(d scenario.Def) {
			mu.Lock()
			running++
			peak = max(peak, running)
			ran[d.Name]++
			order = append(order, d.Name)
			if d.Exclusive && running != 1 {
				t.Errorf("parallel %d: %s ran beside %d others", parallel, d.Name, running-1)
			}
			mu.Unlock()
			started <- struct{}{}
			<-release
			mu.Lock()
			running--
			mu.Unlock()
		})
		want := min(max(parallel, 1), len(defs)-1)
		if peak != want {
			t.Errorf("parallel %d: at most %d ran at once, want %d", parallel, peak, want)
		}
		for _, d := range defs {
			if ran[d.Name] != 1 {
				t.Errorf("parallel %d: %s ran %d times", parallel, d.Name, ran[d.Name])
			}
		}
		if order[len(order)-1] != "whole" {
			t.Errorf("parallel %d: the exclusive scenario must run last, order %v", parallel, order)
		}
	}
}

// In parallel the longest are handed out first, so none is left running
// alone at the end: the seeded schedules, then the waits on
// drain_timeout; each rank keeps its order.
func TestLongestFirst(t *testing.T) {
	stepsDown := map[string]history.Expectation{check.OldLeaderStepsDown: history.MustPass}
	defs := []scenario.Def{{Name: "a"}, {Name: "stale", Reconciler: scenario.Reconciler{IgnoreDemotion: true}}, {Name: "b"},
		{Name: "rep", Schedule: scenario.Repeated}, {Name: "heal", Expect: stepsDown}, {Name: "c"}, {Name: "mix", Schedule: scenario.Mixed}}
	var got []string
	for _, d := range longestFirst(defs) {
		got = append(got, d.Name)
	}
	if want := "[rep mix stale heal a b c]"; fmt.Sprint(got) != want {
		t.Errorf("hand-out order %v, want %s", got, want)
	}
}

// One at a time, RunAll keeps the given order.
func TestRunAllSerialKeepsOrder(t *testing.T) {
	defs := []scenario.Def{{Name: "a"}, {Name: "rep", Schedule: scenario.Repeated}, {Name: "b"}}
	var got []string
	RunAll(1, defs, func(d scenario.Def) { got = append(got, d.Name) })
	if want := "[a rep b]"; fmt.Sprint(got) != want {
		t.Errorf("serial order %v, want %s", got, want)
	}
}
