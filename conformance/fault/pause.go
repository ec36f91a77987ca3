package fault

import "context"

// Pause freezes the leader's process for the step's length (the cgroup
// freezer on the cluster, SIGSTOP locally), then thaws it: the canonical
// stale leader (a stop-the-world GC, a frozen VM) wakes up believing it
// leads.
const Pause Kind = "pause"

// ProcessPause is a target's (its chaos executor's) power to freeze a
// process: Chaos Mesh has none.
const ProcessPause Capability = "process pause"

var pause = Fault{
	Kind:     Pause,
	Doc:      "freeze the leader's processes for longer than the TTL, then thaw them",
	Inject:   injectPause,
	Gate:     GateFault,
	Lasts:    true,
	Hits:     HitsPod,
	Silences: SilenceHides,
	Takeover: true,
	Waits:    WaitWindow,
	Style:    Style{Fill: "#7e57c2", Opacity: "0.3", Color: "#4527a0", Label: "pause", Legend: "pause (frozen)"},
	Checks:   []string{"stale-leader-acted"},
	Needs:    []Capability{ProcessPause},
	Mix:      1,
}

// injectPause freezes the current leader for the step's length (longer
// than the TTL: it wakes up believing it still leads) and waits for the
// takeover to settle.
func injectPause(ctx context.Context, e Env, st Step) error {
	h, pod, err := leaderPod(ctx, e, "to pause")
	if err != nil {
		return err
	}
	e.Logf("pausing %s for %v", pod, st.Length)
	w, err := e.Act().Pause(ctx, pod, st.Length)
	stamp(e, Pause, w)
	if err != nil {
		return err
	}
	return e.AfterTakeover(ctx, h, w.Recovered)
}
