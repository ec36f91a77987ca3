package certify_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/certify/modelseq"
)

var replayLine = regexp.MustCompile(`fencecheck certify --sink-url (\S+) --profile (\S+) --seed (\d+) --steps (\S+)( --disposable)?`)

// A model check's failure shrinks to a few steps, printed as a line that
// replays them: `fencecheck certify ... --seed S --steps LIST` fails on
// the broken sink (a fresh one for the walk) and passes on the reference
// sink. One control per model check.
func TestFailuresShrinkToReplayableReproducers(t *testing.T) {
	for _, c := range []struct {
		variant, profile, check string
		most                    int // steps in the reproducer, at most
	}{
		{"stale-echoes-epoch", certify.ProfileCore, "core/model-sequences", 2},
		{"dup-retry-epoch", certify.ProfileIdempotency, "idempotency/model-retries", 3},
		{"epoch-float64", certify.ProfileDomain, "domain/whole-range-walk", 2},
	} {
		t.Run(c.variant, func(t *testing.T) {
			s, reset, _ := disposableBolt(t, c.variant)
			cfg := certify.Config{SinkURL: s.URL, Profiles: []string{c.profile}, Seed: 7}
			if c.profile == certify.ProfileDomain {
				cfg.Reset = reset
			}
			rep, err := certify.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var res certify.Result
			for _, r := range rep.Results {
				if r.Name == c.check {
					res = r
				}
			}
			m := replayLine.FindStringSubmatch(res.Message)
			if res.Verdict != certify.Fail || m == nil {
				t.Fatalf("%s: %s %s", c.check, res.Verdict, res.Message)
			}
			steps, err := modelseq.ParseSteps(m[4])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s\nshrunk to %d steps: %s", c.variant, res.Message, len(steps), m[0])
			for _, e := range res.Exchanges {
				t.Logf("  %s", strings.ReplaceAll(e.String(), "\n", "\n  "))
			}
			if len(steps) > c.most || !strings.Contains(res.Message, "minimal") {
				t.Errorf("the reproducer has %d steps, want at most %d, shrunk to a minimum", len(steps), c.most)
			}
			replay := func(url string) (int, string) {
				args := strings.Fields(strings.Replace(m[0], m[1], url, 1))[1:]
				return runCLI(t, args...)
			}
			if c.profile == certify.ProfileDomain {
				if err := reset(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if code, out := replay(s.URL); code != 1 || !strings.Contains(out, "= the model: ") {
				t.Errorf("the replay on %s exited %d, want 1:\n%s", c.variant, code, out)
			}
			ref, _, _ := disposableBolt(t, "")
			if code, out := replay(ref.URL); code != 0 {
				t.Errorf("the replay on the reference sink exited %d, want 0:\n%s", code, out)
			}
		})
	}
}
