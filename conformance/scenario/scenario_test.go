package scenario

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/fixtures/sink/broken"
)

func TestDefinitions(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		if seen[d.Name] || d.Name == "" || len(d.Name) > 40 {
			t.Errorf("scenario name %q duplicate, empty or too long for a namespace", d.Name)
		}
		seen[d.Name] = true
		for c := range d.Expect {
			if _, ok := check.ByName(c); !ok {
				t.Errorf("%s expects unknown check %q", d.Name, c)
			}
		}
		if (d.Fault == "") == (d.Schedule == "") {
			t.Errorf("%s: one fault or one schedule, not %q and %q", d.Name, d.Fault, d.Schedule)
		}
		if _, err := d.Plan(1, DefaultTiming(), 3); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
		if d.NegativeControl() != strings.HasPrefix(d.Name, "neg-") {
			t.Errorf("%s: negative controls are named neg-*", d.Name)
		}
	}
	for _, want := range []string{"--fencing=off", "--ignore-demotion", "--live-epoch", "--no-drain", "--term-on-renew", "--no-term-bump"} {
		found := false
		for _, d := range All() {
			for _, a := range d.Reconciler.Args() {
				found = found || (a == want && d.NegativeControl())
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
		"neg-lying-sink":                    {HideCommit: true},
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
				t.Errorf("%s/%s: expected %s, got pass=%v: %v", d.Name, r.Check, r.Expected, r.Status == check.StatusPass, r.Evidence)
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

// The typed knobs render as the flags the fixtures take, and only those.
func TestKnobsRenderFlags(t *testing.T) {
	if got := (Reconciler{}).Args(); len(got) != 0 {
		t.Errorf("the correct reconciler takes no mode flags, got %v", got)
	}
	all := Reconciler{FencingOff: true, IgnoreDemotion: true, LiveEpoch: true, NoDrain: true, TermOnRenew: true, NoTermBump: true, WriteInterval: 5 * time.Millisecond}
	want := "--fencing=off --ignore-demotion --live-epoch --no-drain --term-on-renew --no-term-bump --write-interval=5ms"
	if got := strings.Join(all.Args(), " "); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (Sink{}).Args(); len(got) != 0 {
		t.Errorf("the correct sink takes no flags, got %v", got)
	}
	if got := (Sink{Broken: UnfencedSink}).Args(); len(got) != 1 || got[0] != "--broken=unfenced" {
		t.Errorf("got %v", got)
	}
	// The scenario's write interval comes after the timing's: the last flag wins.
	d, _ := ByName("neg-no-drain")
	args := DefaultTiming().ReconcilerArgs(d)
	if args[len(args)-1] != "--write-interval=5ms" {
		t.Errorf("args %v", args)
	}
}

// The sink modes the scenarios name exist in the reference sink.
func TestSinkModesExist(t *testing.T) {
	for _, d := range All() {
		if d.Sink.Broken == CorrectSink {
			continue
		}
		if _, err := broken.Lookup(string(d.Sink.Broken)); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
}

func TestMatchingKeepsRunOrder(t *testing.T) {
	all := All()
	if got := Matching(regexp.MustCompile("")); len(got) != len(all) {
		t.Fatalf("the empty pattern matched %d of %d scenarios", len(got), len(all))
	}
	got := Matching(regexp.MustCompile("^(" + all[2].Name + "|" + all[0].Name + ")$"))
	if len(got) != 2 || got[0].Name != all[0].Name || got[1].Name != all[2].Name {
		t.Fatalf("Matching gave %v, want %s then %s", got, all[0].Name, all[2].Name)
	}
	if got := Matching(regexp.MustCompile("^no-such-scenario$")); len(got) != 0 {
		t.Fatalf("an unmatched pattern gave %d scenarios", len(got))
	}
}

// A slow-clock leader must still act after the latest takeover a correct
// follower may make, or its scenario shows nothing: stale-leader-acted
// (must-pass) is INCONCLUSIVE and its unfenced-sink control escapes. The
// fault lands up to one retry period after the leader's last renew; the
// successor is granted at most FailoverBound (less the first write) after
// that; the leader gives up a stretched renew deadline after its last
// renew. It must also stop, with a retry to notice, within drain_timeout
// of the earliest grant (a lease duration after its last renew), or
// old-leader-steps-down fails it for obeying its own slow clock.
func TestSlowClockLeaderOutlastsEveryCorrectTakeover(t *testing.T) {
	tm := DefaultTiming()
	n := 0
	for _, d := range All() {
		if d.Reconciler.ClockRate == 0 || d.Reconciler.ClockRate == 1 {
			continue
		}
		n++
		c := tm.Config(d)
		givesUp := time.Duration(float64(tm.RenewDeadline) / d.Reconciler.ClockRate)
		latestGrant := tm.RetryPeriod + check.FailoverBound(c, false, 0) - c.WriteInterval.D()
		if window := givesUp - latestGrant; window < 2*time.Second {
			t.Errorf("%s: the leader gives up %v after its last renew, the latest correct grant is %v after it: a stale window of %v, want at least 2s",
				d.Name, givesUp, latestGrant, window)
		}
		if after := givesUp + tm.RetryPeriod - tm.LeaseDuration; after > tm.DrainTimeout-3*time.Second {
			t.Errorf("%s: the leader may act %v after the earliest grant, want drain_timeout %v less 3s for its drain", d.Name, after, tm.DrainTimeout)
		}
	}
	if n == 0 {
		t.Fatal("no slow-clock scenario")
	}
}
