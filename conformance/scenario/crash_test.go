package scenario

import (
	"maps"
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// After a sink restart no check that reads the sink's own history may be
// required to pass (the killed instance's history is gone), the two
// crash checks must, and the control must fail on them.
func TestSinkCrashExpectations(t *testing.T) {
	d, ok := ByName("sink-crash")
	if !ok {
		t.Fatal("no sink-crash scenario")
	}
	d.Expect = runExpect(t, d)
	for name, o := range d.Expect {
		c, _ := check.ByName(name)
		for _, n := range c.Needs {
			if n == history.EvidenceSink && o == history.MustPass {
				t.Errorf("sink-crash requires %s, which reads the sink's history", name)
			}
		}
	}
	for _, name := range []string{check.FloorSurvivesRestart, check.AckedWritesDurable, check.Linearizable, check.TermStep} {
		if d.Expect[name] != history.MustPass {
			t.Errorf("sink-crash: %s is %q, want pass", name, d.Expect[name])
		}
	}
	if d.Expect[check.NoStaleCommit] != history.Any {
		t.Errorf("sink-crash: %s is %q, want informative", check.NoStaleCommit, d.Expect[check.NoStaleCommit])
	}
	neg, ok := ByName("neg-forget-floor-sink-crash")
	if !ok || neg.Sink.Broken != ForgetFloorSink || neg.Fault != fault.SinkCrash {
		t.Fatalf("control %+v", neg)
	}
	neg.Expect = runExpect(t, neg)
	for _, name := range []string{check.FloorSurvivesRestart, check.Linearizable} {
		if neg.Expect[name] != history.MustFail {
			t.Errorf("control: %s is %q, want fail", name, neg.Expect[name])
		}
	}
}

// runExpect is what a run of d expects once its plan (seed 1) is drawn,
// and checks each change from the definition was recorded with a reason.
func runExpect(t *testing.T, d Def) map[string]history.Expectation {
	t.Helper()
	p, err := d.Plan(1, DefaultTiming(), 3)
	if err != nil {
		t.Fatal(err)
	}
	h := &history.Scenario{Name: d.Name, Expect: maps.Clone(d.Expect)}
	Expect(h, d, p)
	for c, o := range h.Expect {
		if o == d.Expect[c] {
			continue
		}
		i := slices.IndexFunc(h.ExpectChanges, func(ch history.ExpectChange) bool { return ch.Check == c })
		if i < 0 || h.ExpectChanges[i].Reason == "" || h.ExpectChanges[i].From != d.Expect[c] || h.ExpectChanges[i].To != o {
			t.Errorf("%s: %s went from %q to %q without a recorded change and reason: %+v", d.Name, c, d.Expect[c], o, h.ExpectChanges)
		}
	}
	return h.Expect
}
