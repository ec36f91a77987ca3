package fault_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// Every registered fault has every part: a name of its own, a line that
// says what it does, an injection, a gate class, a waits contribution, a
// timeline style, its checks (real checks of conformance/check), and
// capabilities with names. Adding a fault kind is its file and its line
// in fault.All; this test is what says the value is whole.
func TestEveryFaultIsComplete(t *testing.T) {
	if len(fault.All) == 0 {
		t.Fatal("no fault registered")
	}
	for _, err := range completeness(fault.All) {
		t.Error(err)
	}
}

// completeness lists what each fault lacks.
func completeness(all []fault.Fault) []error {
	var errs []error
	seen := map[fault.Kind]bool{}
	for i, f := range all {
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("fault %d (%q): %s", i, f.Kind, fmt.Sprintf(format, a...)))
		}
		switch {
		case f.Kind == "":
			bad("no kind")
		case seen[f.Kind]:
			bad("registered twice")
		}
		seen[f.Kind] = true
		if f.Doc == "" {
			bad("no Doc")
		}
		if f.Inject == nil {
			bad("no Inject")
		}
		if f.Gate != fault.GateFault && f.Gate != fault.GateNone {
			bad("gate %d is not a fault step's (GateFault, or GateNone for one that needs no quiet)", f.Gate)
		}
		if f.Hits != fault.HitsPod && f.Hits != fault.HitsEveryPod && f.Hits != fault.HitsSink {
			bad("hits %d is no Hits value", f.Hits)
		}
		if f.Waits == nil {
			bad("no Waits (fault.WaitWindow, WaitLease, WaitNone or its own)")
		} else if d := f.Waits(history.ChaosWindow{}, history.Config{}); d < 0 {
			bad("Waits of an empty window is %v", d)
		}
		if st := f.Style; st.Label == "" || st.Legend == "" || st.Color == "" || (st.Fill == "" && !st.AllLanes) {
			bad("incomplete timeline style %+v (a label, a legend, a colour, and a fill unless it marks every lane)", st)
		}
		if f.Checks == nil {
			bad("no Checks (an empty list when the safety set judges it all)")
		}
		for _, c := range f.Checks {
			if _, ok := check.ByName(c); !ok {
				bad("check %q is not in check.All", c)
			}
		}
		for _, c := range f.Needs {
			if c == "" {
				bad("a capability with no name")
			}
		}
		if f.Mix < 0 {
			bad("negative mix weight %d", f.Mix)
		}
	}
	return errs
}

// The test above fails on a fault that lacks a part.
func TestCompletenessCatchesAMissingPart(t *testing.T) {
	whole := fault.All[0]
	for name, mutate := range map[string]func(*fault.Fault){
		"no kind":                     func(f *fault.Fault) { f.Kind = "" },
		"no doc":                      func(f *fault.Fault) { f.Doc = "" },
		"no inject":                   func(f *fault.Fault) { f.Inject = nil },
		"heavy gate":                  func(f *fault.Fault) { f.Gate = fault.GateHeavy },
		"no waits":                    func(f *fault.Fault) { f.Waits = nil },
		"no style":                    func(f *fault.Fault) { f.Style = fault.Style{} },
		"no checks":                   func(f *fault.Fault) { f.Checks = nil },
		"a check that does not exist": func(f *fault.Fault) { f.Checks = []string{"no-such-check"} },
		"an unnamed capability":       func(f *fault.Fault) { f.Needs = []fault.Capability{""} },
	} {
		f := whole
		mutate(&f)
		if len(completeness([]fault.Fault{f})) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
	if errs := completeness([]fault.Fault{whole, whole}); len(errs) == 0 {
		t.Error("a fault registered twice: not caught")
	}
}

// The mixed schedules draw these kinds with these weights, in this order:
// a change changes the schedule every seed draws, so the verdicts of a
// run can no longer be compared with an earlier run of the same seed.
func TestMixedDrawIsStable(t *testing.T) {
	want := []fault.Weight{{Kind: fault.Partition, Weight: 3}, {Kind: fault.PodDelete, Weight: 1}, {Kind: fault.LeaseDelete, Weight: 1},
		{Kind: fault.RollingRestart, Weight: 1}, {Kind: fault.Pause, Weight: 1}, {Kind: fault.HeldWrites, Weight: 1},
		{Kind: fault.LostAnswers, Weight: 1}, {Kind: fault.SinkCrash, Weight: 1}}
	if got := fault.Mixed(); !reflect.DeepEqual(got, want) {
		t.Errorf("mixed draw %v, want %v", got, want)
	}
}
