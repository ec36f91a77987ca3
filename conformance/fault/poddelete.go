package fault

import "context"

// PodDelete deletes the leader's pod while it writes (SIGTERM); its
// replacement starts as a ReplicaSet's would.
const PodDelete Kind = "pod-delete"

var podDelete = Fault{
	Kind:     PodDelete,
	Doc:      "delete the leader's pod while it writes (SIGTERM); a replacement starts",
	Inject:   injectPodDelete,
	Gate:     GateFault,
	Hits:     HitsPod,
	Silences: SilenceEnds,
	Takeover: true,
	Waits:    WaitLease, // the successor waits out the lease
	Style:    Style{Fill: "#8d6e63", Opacity: "0.35", Color: "#4e342e", Label: "pod deleted", Legend: "pod deleted (SIGTERM)"},
	Checks:   []string{},
	Mix:      1,
}

// injectPodDelete deletes the leader pod and waits for its stop and its
// successor.
func injectPodDelete(ctx context.Context, e Env, _ Step) error {
	h, pod, err := leaderPod(ctx, e, "to delete")
	if err != nil {
		return err
	}
	e.Logf("deleting leader pod %s", pod)
	w, err := e.Act().DeletePod(ctx, pod)
	stamp(e, PodDelete, w)
	if err != nil {
		return err
	}
	if err := e.WaitStopped(ctx, pod); err != nil {
		return err
	}
	return e.AfterTakeover(ctx, h, w.Injected)
}
