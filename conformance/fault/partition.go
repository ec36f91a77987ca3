package fault

import (
	"context"
	"errors"
)

// Partition cuts a pod off from the apiserver for the step's length (the
// leader, or a follower when a schedule draws one), then heals.
const Partition Kind = "partition"

var partition = Fault{
	Kind:     Partition,
	Doc:      "cut a pod off from the apiserver (a NetworkChaos; locally its proxy), then heal",
	Inject:   injectPartition,
	Gate:     GateFault,
	Lasts:    true,
	Roles:    true,
	Hits:     HitsPod,
	Silences: SilenceHides,
	Takeover: true,
	Waits:    WaitWindow,
	Style:    Style{Fill: "url(#cut)", Opacity: "0.9", Color: "#b71c1c", Label: "partition", Legend: "partition: cut off from the apiserver"},
	Checks:   []string{},
	Mix:      3, // of the leader or, by FollowerPct, a follower
}

// injectPartition cuts the current leader (or a follower) off from the
// apiserver for the step's length, waits for the heal and, for a leader,
// for the takeover to settle.
func injectPartition(ctx context.Context, e Env, st Step) error {
	h, leaderPod, err := leaderPod(ctx, e, "to partition")
	if err != nil {
		return err
	}
	target := leaderPod
	if st.Role == Follower {
		pods, err := e.Act().Pods(ctx)
		if err != nil {
			return err
		}
		var followers []string
		for _, p := range pods {
			if p != leaderPod {
				followers = append(followers, p)
			}
		}
		if len(followers) == 0 {
			return errors.New("no follower to partition")
		}
		target = followers[st.FollowerIndex%len(followers)]
		// A follower's cut has no failover to time: nothing in it needs
		// quiet, so other scenarios' deploys may run beside it.
		e.ReopenGate("a follower's cut times no failover")
	}
	e.Logf("partitioning %s (%s) for %v", target, st.Role, st.Length)
	w, err := e.Act().Partition(ctx, target, st.Length, e.CutSinkToo() && st.Role == Leader)
	stamp(e, Partition, w)
	if err != nil || st.Role == Follower {
		return err
	}
	return e.AfterTakeover(ctx, h, w.Recovered)
}
