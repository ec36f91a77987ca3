package fault

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/witness/record"
)

// HeldWrites has the witness hold the leader's writes while the leader is
// cut off for the step's length, and deliver them once the sink answered
// the successor's fence.
const HeldWrites Kind = "held-writes"

var heldWrites = Fault{
	Kind:   HeldWrites,
	Doc:    "the witness holds the leader's writes, the leader is cut off; they reach the sink after its successor's fence",
	Inject: injectHeldWrites,
	Gate:   GateFault,
	Lasts:  true,
	Hits:   HitsPod,
	// Its takeover is its partition's (a window of its own).
	Takeover:       false,
	Waits:          WaitNone,
	Style:          Style{Fill: "#f9a825", Opacity: "0.85", Color: "#e65100", Label: "writes held", Legend: "held writes (witness)", Band: true},
	Checks:         []string{"held-writes-rejected"},
	WitnessRuntime: true,
	Mix:            1,
}

// injectHeldWrites arms the witness's hold of the leader's term, then cuts
// the leader off for the step's length: its writes from before the
// takeover are held until the successor's fence was answered, then
// delivered (held-writes-rejected judges them). The window lasts from the
// arming to the release.
func injectHeldWrites(ctx context.Context, e Env, st Step) error {
	h, pod, err := leaderPod(ctx, e, "whose writes to hold")
	if err != nil {
		return err
	}
	w := history.ChaosWindow{Pod: pod, Injected: time.Now()}
	ns, err := setNemesis(ctx, e, record.NemesisRequest{Hold: true})
	if err != nil {
		return err
	}
	defer func() {
		if w.Recovered.IsZero() {
			w.Recovered = time.Now()
		}
		stamp(e, HeldWrites, w)
	}()
	e.Logf("the witness holds writes of epochs <= %d (leader %s, term %d)", ns.HoldEpoch, h.Holder, h.Term)
	if ns.HoldEpoch != h.Term {
		return fmt.Errorf("the hold is of epochs <= %d, not the leader's term %d: its writes would not be held", ns.HoldEpoch, h.Term)
	}
	if err := injectPartition(ctx, e, Step{Index: st.Index, Role: Leader, Length: st.Length}); err != nil {
		return err
	}
	// The takeover settled, so the successor's fence was answered: the hold is over.
	if ns, err = setNemesis(ctx, e, record.NemesisRequest{}); err != nil {
		return err
	}
	w.Recovered = time.Now()
	if ns.Holding {
		return fmt.Errorf("the witness still holds writes of epochs <= %d after the takeover settled", ns.HoldEpoch)
	}
	return nil
}
