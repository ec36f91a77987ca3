package scenario

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/eventlog"
)

func TestFixtureModes(t *testing.T) {
	for name, want := range map[string]string{"partition-heal": "", "shutdown-under-load": "", "stale-leader-keeps-writing": "--ignore-demotion",
		"neg-no-drain": "--no-drain", "neg-lying-sink": "", "neg-fencing-off": "--fencing=off"} {
		d, ok := ByName(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		if got := strings.Join(d.FixtureModes(), " "); got != want {
			t.Errorf("%s: FixtureModes = %q, want %q", name, got, want)
		}
	}
}

func TestEventChecksNotApplicable(t *testing.T) {
	d, _ := ByName("partition-heal")
	h := &history.Scenario{Expect: d.Expect, Events: map[string][]eventlog.Event{"p": nil}}
	// epoch-held-by-writer is judged from the witness, the pod addresses
	// and the Lease watch: it stays a must-pass check without events.
	if !EventChecksNotApplicable(h) {
		t.Fatal("a controller with no event must be marked")
	}
	if h.Expect[check.BridgeDrain] != history.Any || h.Expect[check.EpochHeldByWriter] != history.MustPass || h.Expect[check.TermStep] != history.MustPass {
		t.Errorf("expectations: %v", h.Expect)
	}
	if len(h.Missing[history.EvidenceEvents]) != 1 {
		t.Errorf("missing: %v", h.Missing)
	}
	for _, r := range check.EvaluateScenario(h) {
		if r.Check == check.BridgeDrain && (r.Pass || !r.Inconclusive) {
			t.Errorf("bridge-drain without events must be INCONCLUSIVE, never passed: %+v", r)
		}
	}
	h2 := &history.Scenario{Expect: map[string]history.Expectation{check.BridgeDrain: history.MustPass},
		Events: map[string][]eventlog.Event{"p": {{Kind: eventlog.KindStarted}}}}
	if EventChecksNotApplicable(h2) || h2.Expect[check.BridgeDrain] != history.MustPass {
		t.Error("a controller that logs events keeps its expectations")
	}
}
