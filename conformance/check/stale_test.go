package check

import (
	"testing"

	"github.com/fencecheck/fencecheck/conformance/synth"
)

// stale-leader-acted passes only when the old leader really sent with its
// old term after the new grant: a leader that ignores its demotion does, a
// correct one that stepped down before the grant does not (the fault never
// made it stale), and without the witness nothing is known.
func TestStaleLeaderActed(t *testing.T) {
	wantPass(t, synth.Scenario("ignore-demotion", synth.Defect{IgnoreDemotion: true}), StaleLeaderActed)
	s := synth.Scenario("correct", synth.Defect{})
	wantFail(t, s, StaleLeaderActed, "it never went stale")
	s.Witness = nil
	wantInconclusive(t, s, StaleLeaderActed, "no witness history")
}
