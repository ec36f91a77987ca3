package scenario

import (
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
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
	if !ok || neg.Sink.Broken != ForgetFloorSink || neg.Chaos != SinkCrash {
		t.Fatalf("control %+v", neg)
	}
	for _, name := range []string{check.FloorSurvivesRestart, check.Linearizable} {
		if neg.Expect[name] != history.MustFail {
			t.Errorf("control: %s is %q, want fail", name, neg.Expect[name])
		}
	}
}
