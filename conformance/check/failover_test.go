package check

import (
	"testing"

	"github.com/fencecheck/fencecheck/conformance/synth"
)

// A failover is timed to the new leader's own first commit: not to a
// write of the same epoch by the old leader, whose term did not move
// (no term bump) or who stamps the live term (live epoch). Timed by the
// epoch alone, both came out negative or too short.
func TestFailoverTimedToTheNewLeadersOwnCommit(t *testing.T) {
	for name, d := range map[string]synth.Defect{
		"correct":    {},
		"no-bump":    {NoTermBump: true},
		"live-epoch": {IgnoreDemotion: true, LiveEpoch: true},
	} {
		t.Run(name, func(t *testing.T) {
			s := synth.Scenario(name, d)
			times, _, _ := TakeoverTimes(s)
			judged := 0
			for _, tt := range times {
				if !tt.Judged() {
					continue
				}
				judged++
				if tt.Took <= 0 || tt.FirstCommit.Before(tt.Start) {
					t.Errorf("%s -> %s timed %v: a first commit before the fault", tt.From, tt.To, tt.Took)
				}
				put, _ := firstCommitOf(s, tt.ToTerm, PodOf(s, tt.To), tt.Start)
				if sender, why := SenderOf(s, *put); sender != PodOf(s, tt.To) {
					t.Errorf("first commit #%d sent by %q (%s), want the new leader %s", put.ID, sender, why, PodOf(s, tt.To))
				}
			}
			if judged == 0 {
				t.Fatalf("no takeover timed: %+v", times)
			}
		})
	}
}
