package scenario

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
)

func TestDefinitions(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		if seen[d.Name] || d.Name == "" || len(d.Name) > 40 {
			t.Errorf("scenario name %q duplicate, empty or too long for a namespace", d.Name)
		}
		seen[d.Name] = true
		fails := 0
		for c, o := range d.Expect {
			if _, ok := check.ByName(c); !ok {
				t.Errorf("%s expects unknown check %q", d.Name, c)
			}
			if o == history.MustFail {
				fails++
			}
		}
		if d.NegativeControl != (fails > 0) {
			t.Errorf("%s: negative control %v but %d must-fail checks", d.Name, d.NegativeControl, fails)
		}
		if d.NegativeControl != strings.HasPrefix(d.Name, "neg-") {
			t.Errorf("%s: negative controls are named neg-*", d.Name)
		}
	}
	for _, want := range []string{"--fencing=off", "--ignore-demotion", "--live-epoch", "--no-drain", "--term-on-renew", "--no-term-bump"} {
		found := false
		for _, d := range All() {
			for _, a := range d.ReconcilerArgs {
				found = found || (a == want && d.NegativeControl)
			}
		}
		if !found {
			t.Errorf("no negative control runs %s", want)
		}
	}
}

func TestTiming(t *testing.T) {
	if err := DefaultTiming().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultTiming()
	bad.Partition = bad.LeaseDuration
	if bad.Validate() == nil {
		t.Error("a partition shorter than 2x TTL must be rejected")
	}
	bad = DefaultTiming()
	bad.RenewDeadline = bad.LeaseDuration
	if bad.Validate() == nil {
		t.Error("renew deadline >= lease must be rejected")
	}
}

// The expectations fit what the synthetic model shows for the same defect:
// the correct scenario passes, each control fails on its named check.
func TestExpectationsAgainstSyntheticModel(t *testing.T) {
	defects := map[string]synth.Defect{
		"partition-heal":                    {},
		"stale-leader-keeps-writing":        {IgnoreDemotion: true},
		"neg-fencing-off":                   {FencingOff: true, UnfencedSink: true},
		"neg-ignore-demotion-unfenced-sink": {IgnoreDemotion: true, UnfencedSink: true},
		"neg-live-epoch":                    {IgnoreDemotion: true, LiveEpoch: true},
		"neg-no-drain":                      {NoDrain: true},
		"neg-term-on-renew":                 {TermOnRenew: true},
		"neg-no-term-bump":                  {NoTermBump: true},
	}
	for _, d := range All() {
		defect, ok := defects[d.Name]
		if !ok {
			continue
		}
		s := synth.Scenario(d.Name, defect)
		s.Expect = d.Expect
		for _, r := range check.EvaluateScenario(s) {
			if !r.OK {
				t.Errorf("%s/%s: expected %s, got pass=%v: %v", d.Name, r.Check, r.Expected, r.Pass, r.Evidence)
			}
		}
	}
}

func TestConfigTakesScenarioWriteInterval(t *testing.T) {
	for _, d := range All() {
		c := DefaultTiming().Config(d)
		if d.Name == "neg-no-drain" && c.WriteInterval.D().Milliseconds() != 5 {
			t.Errorf("neg-no-drain write interval %v", c.WriteInterval.D())
		}
		if d.Name == "partition-heal" && c.WriteInterval.D() != DefaultTiming().WriteInterval {
			t.Errorf("partition-heal write interval %v", c.WriteInterval.D())
		}
	}
}
