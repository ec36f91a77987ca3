package fault

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
)

// LeaseDelete deletes the Lease under its holder once; the replicas
// re-create it.
const LeaseDelete Kind = "lease-delete"

var leaseDelete = Fault{
	Kind:   LeaseDelete,
	Doc:    "delete the Lease under its holder; the replicas re-create it",
	Inject: injectLeaseDelete,
	Gate:   GateFault,
	Hits:   HitsPod,
	// The holder may re-create the Lease itself: no takeover need follow.
	Takeover: false,
	Waits:    WaitLease,
	Style:    Style{Color: "#ef6c00", Label: "Lease deleted", Legend: "Lease deleted", AllLanes: true},
	Checks:   []string{},
	Mix:      1,
}

// injectLeaseDelete deletes the Lease under its holder and waits for the
// replicas to re-create it. If another replica re-created it, that is a
// takeover. If the holder did, it must move its writes to the re-created
// Lease's term: the wait is for commits of that term, not for a term
// change (a holder that restarts the term at 1 may keep the term it had).
func injectLeaseDelete(ctx context.Context, e Env, _ Step) error {
	h, oldPod, err := leaderPod(ctx, e, "to delete the Lease of")
	if err != nil {
		return err
	}
	before := len(e.Lease())
	e.Logf("deleting the Lease (holder %s, term %d)", h.Holder, h.Term)
	w, err := e.DeleteLease(ctx)
	w.Pod = oldPod
	stamp(e, LeaseDelete, w)
	if err != nil {
		return err
	}
	rec, err := waitRecreated(ctx, e, before, h.UID)
	if err != nil {
		return err
	}
	e.Logf("Lease re-created by %s at term %d", rec.Holder, rec.Term)
	if rec.Holder != h.Holder {
		return e.AfterTakeover(ctx, h, w.Injected)
	}
	return e.WaitSink(ctx, fmt.Sprintf("%d commits of the re-created Lease's term %d", SettleCommits, rec.Term), SettleCommits,
		func(a contract.Attempt) bool {
			return a.Committed() && a.Epoch == rec.Term && a.Arrived.After(w.Injected)
		})
}

// waitRecreated waits for a held Lease of another incarnation than uid,
// recorded at index from or later (after the DELETED event, or after a
// relist that shows a new UID).
func waitRecreated(ctx context.Context, e Env, from int, uid string) (history.LeaseRecord, error) {
	var out history.LeaseRecord
	err := e.WaitLease(ctx, "the Lease re-created with a holder", func(rs []history.LeaseRecord) bool {
		out, _ = recreated(rs, from, uid)
		return out.Holder != ""
	})
	return out, err
}

// recreated is the first held record at index from or later of another
// incarnation than uid: after a DELETED event, or with a new UID.
func recreated(rs []history.LeaseRecord, from int, uid string) (history.LeaseRecord, bool) {
	deleted := false
	for i := from; i < len(rs); i++ {
		r := rs[i]
		if r.Event == "DELETED" {
			deleted = true
			continue
		}
		if (deleted || r.UID != uid) && r.Holder != "" {
			return r, true
		}
	}
	return history.LeaseRecord{}, false
}
