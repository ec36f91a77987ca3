package history

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
)

func sample() *Run {
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	yes := true
	return &Run{Meta: Meta{RunID: "r1", Seed: 7, Started: t0, Ended: t0.Add(time.Minute)}, Scenarios: []*Scenario{{
		Name:     "partition",
		Config:   Config{LeaseDuration: Duration(4 * time.Second), DrainTimeout: Duration(1500 * time.Millisecond)},
		Lease:    LeaseWatch{Start: t0, End: t0.Add(time.Minute), Records: []LeaseRecord{{Observed: t0, Event: "ADDED", ResourceVersion: "1", Holder: "p_1", Term: 1, TermRaw: "1", TermOK: true, RenewTime: &t0}}, Gaps: []Gap{{From: t0, To: t0, Reason: "410"}}},
		Attempts: []contract.Attempt{{Seq: 1, Arrived: t0, Op: "put", Key: "k", Epoch: 1, Result: "OK", Status: 200, FloorAfter: 1}},
		Events:   map[string][]eventlog.Event{"p": {{Time: t0, Pod: "p", Kind: "bridge_joined", JoinedInTime: &yes}}},
		Chaos:    []ChaosWindow{{Kind: "partition", Pod: "p", Injected: t0, Recovered: t0.Add(time.Second)}},
		Expect:   map[string]Expectation{"term-step": MustPass, "bridge-drain": MustFail},
	}}}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "history.json")
	in := sample()
	if err := Save(p, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip differs:\n in %+v\nout %+v", in.Scenarios[0], out.Scenarios[0])
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `"lease_duration": "4s"`) || !strings.Contains(string(b), `"drain_timeout": "1.5s"`) {
		t.Errorf("durations should read as strings:\n%s", b)
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":        `{`,
		"wrong format":    `{"format": 99, "scenarios": [{"name": "a", "expect": {"x": "pass"}}]}`,
		"no scenarios":    `{"format": 1, "scenarios": []}`,
		"unnamed":         `{"format": 1, "scenarios": [{"expect": {"x": "pass"}}]}`,
		"duplicate":       `{"format": 1, "scenarios": [{"name": "a", "expect": {"x": "pass"}}, {"name": "a", "expect": {"x": "pass"}}]}`,
		"expects nothing": `{"format": 1, "scenarios": [{"name": "a"}]}`,
		"bad outcome":     `{"format": 1, "scenarios": [{"name": "a", "expect": {"x": "maybe"}}]}`,
		"bad duration":    `{"format": 1, "scenarios": [{"name": "a", "config": {"lease_duration": 4}, "expect": {"x": "pass"}}]}`,
	} {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Decode([]byte(`{"format": 1, "scenarios": [{"name": "a", "expect": {"x": "any"}}]}`)); err != nil {
		t.Errorf("minimal document rejected: %v", err)
	}
}

// A recorded expectation change names its check and why; a skipped
// scenario names itself and why.
func TestRunTimeRecordsValidated(t *testing.T) {
	r := sample()
	r.Format = FormatVersion
	r.Scenarios[0].ChangeExpect("bridge-drain", Any, "a reason")
	r.Scenarios[0].ChangeExpect("bridge-drain", Any, "no change, not recorded")
	r.NotRunnable = []NotRunnable{{Scenario: "pause-leader", Reason: "no pause"}}
	if err := r.Validate(); err != nil || len(r.Scenarios[0].ExpectChanges) != 1 || r.Scenarios[0].ExpectChanges[0].From != MustFail {
		t.Fatalf("valid: %v %+v", err, r.Scenarios[0].ExpectChanges)
	}
	r.Scenarios[0].ExpectChanges[0].Reason = ""
	if r.Validate() == nil {
		t.Error("a change without a reason must be rejected")
	}
	r.Scenarios[0].ExpectChanges = nil
	r.NotRunnable[0].Reason = ""
	if r.Validate() == nil {
		t.Error("a not-runnable scenario without a reason must be rejected")
	}
}
