package fault

import "context"

// RollingRestart replaces every reconciler, one at a time, as a
// Deployment's rollout does: with --release-on-cancel, a planned handover.
const RollingRestart Kind = "rolling-restart"

var rollingRestart = Fault{
	Kind:     RollingRestart,
	Doc:      "restart the reconcilers' Deployment (every replica replaced, one at a time)",
	Inject:   injectRollingRestart,
	Gate:     GateFault,
	Hits:     HitsEveryPod,
	Silences: SilenceEnds,
	Takeover: true,
	Waits:    WaitLease,
	Style:    Style{Fill: "#4dd0e1", Opacity: "0.35", Color: "#006064", Label: "rolling restart", Legend: "rolling restart (every replica replaced)"},
	Checks:   []string{},
	Mix:      1,
}

// injectRollingRestart replaces every reconciler and waits for a
// committing leader among the new pods.
func injectRollingRestart(ctx context.Context, e Env, _ Step) error {
	h, _ := e.Leader()
	e.Logf("rolling restart")
	pod := "" // no leader yet: none of the replacements is a takeover
	if h.Holder != "" {
		var err error
		if pod, err = e.PodOf(ctx, h.Holder); err != nil {
			return err
		}
	}
	w, err := e.Act().RollingRestart(ctx, pod)
	stamp(e, RollingRestart, w)
	if err != nil {
		return err
	}
	if _, err := e.WaitHolder(ctx, h.Holder); err != nil {
		return err
	}
	return e.WaitCommits(ctx, w.Recovered, SettleCommits)
}
