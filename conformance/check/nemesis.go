package check

import (
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Checks of the witness's own faults (witness/nemesis.go): each first shows,
// from the witness's record, that the fault took effect, then what the sink
// did with it. No fault in the record is INCONCLUSIVE, never a pass.

// upstreamInterval narrows an operation to when the witness had it at the
// sink: the sink can only have acted between sending it and reading the
// answer. The nemesis records those times when it held the request or its
// answer, which is when they differ from the client's.
func upstreamInterval(o record.Operation, call, ret int64, ns func(time.Time) int64) (int64, int64) {
	f := o.Nemesis
	if f == nil || f.Sent.IsZero() {
		return call, ret
	}
	call = max(call, ns(f.Sent))
	if o.Status != 0 && !f.Answered.IsZero() {
		ret = min(ret, ns(f.Answered))
	}
	return call, max(call, ret)
}

// faultOps are the witness's operations, or INCONCLUSIVE without a witness.
func faultOps(s *history.Scenario, e *evidence) ([]record.Operation, bool) {
	if s.Witness == nil {
		e.unknownf("no witness history")
		return nil, false
	}
	return s.Witness.Operations, true
}

// checkHeldWrites: every write the witness held and released after the
// sink answered a higher fence was answered 409 (so none committed); a
// write released just before such a fence (the race mode) is judged by
// the sink-side checks, but its release counts as the fault taking effect.
func checkHeldWrites(s *history.Scenario) Verdict {
	var e evidence
	ops, ok := faultOps(s, &e)
	if !ok {
		return e.verdict()
	}
	fences := map[uint64]record.Operation{}
	for _, o := range ops {
		if o.Nemesis != nil && len(o.Nemesis.Releases) > 0 {
			fences[o.ID] = o
		}
	}
	after, before, expired := 0, 0, 0
	for _, o := range ops {
		f := o.Nemesis
		if f == nil || !f.Held {
			continue
		}
		fence, ok := fences[f.ReleasedBy]
		switch {
		case f.Expired || !ok:
			expired++
			e.addf("op #%d (put %s epoch %d) was held but no fence released it (sent at %s): the fault did not take effect for it", o.ID, o.Key, o.Epoch, ts(f.Sent))
			continue
		case f.ReleasedBeforeFence:
			before++
			e.addf("op #%d (put %s epoch %d) held, released %s before fence #%d (epoch %d) was sent: answered %d %s",
				o.ID, o.Key, o.Epoch, fence.Nemesis.Sent.Sub(f.Sent).Round(time.Microsecond), fence.ID, fence.Epoch, o.Status, o.Result)
			continue
		}
		after++
		if f.Sent.Before(fence.Nemesis.Answered) {
			e.failf("op #%d (put %s epoch %d) was sent at %s, before fence #%d was answered at %s: not held past the fence",
				o.ID, o.Key, o.Epoch, ts(f.Sent), fence.ID, ts(fence.Nemesis.Answered))
			continue
		}
		switch {
		case o.Status == 0:
			e.unknownf("op #%d (put %s epoch %d) held past fence #%d (epoch %d) got no answer from the sink: %s", o.ID, o.Key, o.Epoch, fence.ID, fence.Epoch, o.Error)
		case o.Status != contract.StatusConflict || o.Result != contract.ResultRejectStale:
			e.failf("op #%d (put %s epoch %d) held past fence #%d (epoch %d, answered OK at %s) was answered %d %s: a write below the floor %s",
				o.ID, o.Key, o.Epoch, fence.ID, fence.Epoch, ts(fence.Nemesis.Answered), o.Status, o.Result, verb(o))
		default:
			e.addf("op #%d (put %s epoch %d) held past fence #%d (epoch %d): 409 %s, highest epoch %d", o.ID, o.Key, o.Epoch, fence.ID, fence.Epoch, o.Result, o.HighestEpoch)
		}
	}
	if after+before == 0 {
		e.unknownf("no write was held and released by a fence (%d held without a release): the fault did not take effect", expired)
	}
	if !e.fail {
		e.addf("%d held writes released after the sink answered a higher fence, all rejected; %d released just before one", after, before)
	}
	return e.verdict()
}

func verb(o record.Operation) string {
	if o.Status >= 200 && o.Status < 300 {
		return "committed"
	}
	return "not rejected as stale"
}

// checkLostAnswers: every write whose answer the witness lost (the sink
// had answered a fresh OK) was retried with the same Idempotency-Key, and
// every retry was answered OK_DUP with the first commit's epoch: the key
// committed once.
func checkLostAnswers(s *history.Scenario) Verdict {
	var e evidence
	ops, ok := faultOps(s, &e)
	if !ok {
		return e.verdict()
	}
	byIdem := map[string][]record.Operation{}
	for _, o := range ops {
		if o.Method == contract.MethodPut && o.IdempotencyKey != "" {
			byIdem[o.IdempotencyKey] = append(byIdem[o.IdempotencyKey], o)
		}
	}
	lost, judged, unretried := 0, 0, 0
	for _, o := range ops {
		if o.Nemesis == nil || !o.Nemesis.LostAnswer {
			continue
		}
		lost++
		var retries []record.Operation
		for _, r := range byIdem[o.IdempotencyKey] {
			if r.ID > o.ID {
				retries = append(retries, r)
			}
		}
		if len(retries) == 0 {
			unretried++
			e.addf("op #%d (put %s, key %q): answer lost, never retried (the writer stopped?): not judged", o.ID, o.Key, o.IdempotencyKey)
			continue
		}
		judged++
		ok := true
		for _, r := range retries {
			switch {
			case r.Type != record.OK && r.Type != record.Fail:
				e.addf("op #%d retried %q as op #%d with no definite answer (%s)", o.ID, o.IdempotencyKey, r.ID, r.Error)
			case r.Result != contract.ResultOKDup || r.ResultEpoch != o.ResultEpoch:
				ok = false
				e.failf("op #%d (put %s epoch %d, key %q) committed and its answer was lost; the retry op #%d was answered %d %s epoch %d, not OK_DUP epoch %d: %s",
					o.ID, o.Key, o.Epoch, o.IdempotencyKey, r.ID, r.Status, r.Result, r.ResultEpoch, o.ResultEpoch, dupWhy(r))
			}
		}
		if ok && judged <= 3 {
			e.addf("op #%d (put %s, key %q): answer lost, %d retries, answered OK_DUP epoch %d", o.ID, o.Key, o.IdempotencyKey, len(retries), o.ResultEpoch)
		}
	}
	if judged == 0 {
		e.unknownf("%d answers lost, %d of them retried: the fault did not take effect", lost, judged)
	}
	if !e.fail {
		e.addf("%d answers lost, %d retried and all deduplicated (%d never retried)", lost, judged, unretried)
	}
	return e.verdict()
}

func dupWhy(r record.Operation) string {
	if r.Result == contract.ResultOK {
		return "the key committed twice"
	}
	return "the sink did not recognise its own commit"
}
