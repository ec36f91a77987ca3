package scenario

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
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
		if r.Check == check.BridgeDrain && (r.Status == check.StatusPass || r.Status != check.StatusInconclusive) {
			t.Errorf("bridge-drain without events must be INCONCLUSIVE, never passed: %+v", r)
		}
	}
	h2 := &history.Scenario{Expect: map[string]history.Expectation{check.BridgeDrain: history.MustPass},
		Events: map[string][]eventlog.Event{"p": {{Kind: eventlog.KindStarted}}}}
	if EventChecksNotApplicable(h2) || h2.Expect[check.BridgeDrain] != history.MustPass {
		t.Error("a controller that logs events keeps its expectations")
	}
}

// A controller under test that never acts stale is not failed for it; our
// fixture, whose pause must make it act stale, still is.
func TestStaleActNotRequired(t *testing.T) {
	d, _ := ByName("pause-leader")
	if d.Expect[check.StaleLeaderActed] != history.MustPass {
		t.Fatalf("pause-leader expects %v of stale-leader-acted", d.Expect[check.StaleLeaderActed])
	}
	ok := func(h *history.Scenario) bool {
		for _, r := range check.EvaluateScenario(h) {
			if r.Check == check.StaleLeaderActed {
				return r.OK
			}
		}
		t.Fatal("stale-leader-acted not judged")
		return false
	}
	// A takeover, and nothing sent with the old term after it.
	safer := func() *history.Scenario {
		h := &history.Scenario{Name: "pause-leader", Expect: map[string]history.Expectation{check.StaleLeaderActed: history.MustPass}, Witness: &record.History{}}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		h.Lease.Records = []history.LeaseRecord{
			{Holder: "a_1", Term: 1, TermOK: true, Observed: t0, ResourceVersion: "1"},
			{Holder: "b_1", Term: 2, TermOK: true, Observed: t0.Add(time.Second), ResourceVersion: "2"},
		}
		return h
	}
	fixture := safer()
	if ok(fixture) {
		t.Error("our fixture, which must act stale, passed without acting stale")
	}
	under := safer()
	if !StaleActNotRequired(under) || under.Expect[check.StaleLeaderActed] != history.Any || len(under.ExpectChanges) != 1 {
		t.Fatalf("expectation %v, changes %v", under.Expect[check.StaleLeaderActed], under.ExpectChanges)
	}
	if !ok(under) {
		t.Error("a controller under test that is safer than the contract was failed")
	}
}

// A control that needs a stale write cannot show its sink's defect with a
// controller that sends none: its must-fail becomes informative, with
// the reason; one stale write keeps it must-fail.
func TestStaleControlNotApplicable(t *testing.T) {
	d, _ := ByName("neg-pause-unfenced-sink")
	if d.Expect[check.NoStaleCommit] != history.MustFail {
		t.Fatalf("neg-pause-unfenced-sink expects %v of no-stale-commit", d.Expect[check.NoStaleCommit])
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(stale bool) *history.Scenario {
		h := &history.Scenario{Name: d.Name, Expect: maps.Clone(d.Expect), Witness: &record.History{}}
		h.Lease.Records = []history.LeaseRecord{
			{Holder: "a_1", Term: 1, TermOK: true, Observed: t0, ResourceVersion: "1"},
			{Holder: "b_1", Term: 2, TermOK: true, Observed: t0.Add(time.Second), ResourceVersion: "2"},
		}
		if stale {
			h.Witness.Operations = []record.Operation{{ID: 1, Method: "PUT", EpochHeader: "1", Epoch: 1, Invoked: t0.Add(2 * time.Second)}}
		}
		return h
	}
	safer := run(false)
	if !StaleControlNotApplicable(safer) || safer.Expect[check.NoStaleCommit] != history.Any || len(safer.ExpectChanges) != 1 {
		t.Errorf("nothing stale sent: expectation %v, changes %v", safer.Expect[check.NoStaleCommit], safer.ExpectChanges)
	}
	acted := run(true)
	if StaleControlNotApplicable(acted) || acted.Expect[check.NoStaleCommit] != history.MustFail {
		t.Errorf("a stale write was sent: expectation %v", acted.Expect[check.NoStaleCommit])
	}
	blind := run(false)
	blind.Witness = nil
	if StaleControlNotApplicable(blind) {
		t.Error("without the witness nothing is known: the control must stay must-fail")
	}
}
