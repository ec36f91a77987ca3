package check

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// The sink-crash checks judge from the witness and the final reads only:
// the sink's own history of the instance that was killed is gone with it.
const (
	FloorSurvivesRestart = "floor-survives-restart"
	AckedWritesDurable   = "acked-writes-durable"
)

// checkFloorSurvivesRestart: after the sink was SIGKILLed and restarted,
// the harness's probe, stamped below the floor the sink acknowledged
// before the crash, is refused 409 by the restarted instance. Without
// proof of a restart (the probe answered by an instance id other than the
// one that acknowledged the floor) or without a probe, it is INCONCLUSIVE;
// so is a probe that proves nothing because a write or fence at or above
// the floor may have reached the restarted sink first (a sink that forgot
// its floor would have re-learned it from that write).
func checkFloorSurvivesRestart(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history recorded")
		return e.verdict()
	}
	ops := s.Witness.Operations
	var probes []record.Operation
	unsent := 0
	for _, o := range ops {
		switch {
		case o.Harness != record.HarnessProbe:
		case o.Type == record.Fail && o.Status == 0:
			unsent++ // never reached the sink (it was not listening yet): no effect, nothing said
		default:
			probes = append(probes, o)
		}
	}
	if unsent > 0 {
		e.addf("%d probe(s) never reached the sink (not listening yet) and say nothing", unsent)
	}
	if len(probes) == 0 {
		e.unknownf("the harness sent no probe that reached the sink after a restart: nothing to judge")
		return e.verdict()
	}
	judged := 0
	var why evidence
	for _, p := range probes {
		if judgeProbe(&e, &why, ops, p, crashedBefore(s, p.Invoked)) {
			judged++
		}
	}
	// A probe with no definite answer (sent again by the harness) or one
	// that proves nothing is a note when another probe was judged.
	for _, line := range why.lines {
		if judged == 0 {
			e.unknownf("%s", line)
		} else {
			e.addf("not judged: %s", line)
		}
	}
	if judged > 0 && !e.fail {
		e.addf("%d probe(s) below the acknowledged floor refused by the restarted sink", judged)
	}
	return e.verdict()
}

// judgeProbe adds p's verdict to e and reports whether p was judged; when
// it was not, why says so.
func judgeProbe(e, why *evidence, ops []record.Operation, p record.Operation, crashed time.Time) bool {
	if not := record.NotTheSinksAnswer(p); not != "" {
		why.addf("probe #%d %s", p.ID, not)
		return false
	}
	floor, by := record.AckedFloor(ops, p.Invoked)
	switch {
	case floor == 0:
		why.addf("probe #%d: no floor was acknowledged before it", p.ID)
		return false
	case p.Epoch >= floor:
		why.addf("probe #%d at epoch %d is not below the acknowledged floor %d", p.ID, p.Epoch, floor)
		return false
	case p.SinkInstance == "" || by.SinkInstance == "":
		why.addf("probe #%d: the sink sends no %s, so nothing proves it restarted between the floor (op #%d) and the probe",
			p.ID, contract.HeaderInstanceID, by.ID)
		return false
	case p.SinkInstance == by.SinkInstance:
		why.addf("probe #%d was answered by instance %s, which also acknowledged floor %d (op #%d): the sink did not restart in between",
			p.ID, p.SinkInstance, floor, by.ID)
		return false
	}
	if x, ok := raisedFirst(ops, p, crashed); ok {
		why.addf("probe #%d proves nothing: op #%d (%s %s epoch %d) may have reached the restarted sink (instance %s) before it and raised its floor to %d or above",
			p.ID, x.ID, x.Method, x.Path, x.Epoch, p.SinkInstance, p.Epoch+1)
		return false
	}
	switch {
	case p.Type == record.Fail && p.Status == contract.StatusConflict && p.Result == contract.ResultRejectStale:
		e.addf("probe #%d at epoch %d, below floor %d acknowledged by instance %s (op #%d at %s), refused 409 by the restarted instance %s (floor %d)",
			p.ID, p.Epoch, floor, by.SinkInstance, by.ID, ts(by.Completed), p.SinkInstance, p.HighestEpoch)
		return true
	case p.Type == record.OK:
		e.failf("the restarted sink (instance %s) committed probe #%d at epoch %d (%s) below floor %d it acknowledged as instance %s before the crash (op #%d at %s): it forgot its floor",
			p.SinkInstance, p.ID, p.Epoch, p.Result, floor, by.SinkInstance, by.ID, ts(by.Completed))
		return true
	case p.Status == 401 || p.Status == 403: // an authenticated sink (docs/sink-contract.md, Security considerations)
		why.addf("probe #%d was refused %d before the fencing rule: was the sink's writer token handed to the probe?", p.ID, p.Status)
	default:
		why.addf("probe #%d answered %d %q: not the fencing rule's refusal, nothing said of the floor", p.ID, p.Status, p.Result)
	}
	return false
}

// raisedFirst finds a client write or fence other than p, at an epoch
// above p's, that may have reached p's sink instance before p did: one
// that instance answered and that was sent before p was answered, or one
// with no answer sent after the crash (crashed: when the last sink-crash
// before p was injected; without one, the last answer of another
// instance): a request sent before it went to the instance that died.
func raisedFirst(ops []record.Operation, p record.Operation, crashed time.Time) (record.Operation, bool) {
	if crashed.IsZero() {
		for _, o := range ops {
			if o.SinkInstance != "" && o.SinkInstance != p.SinkInstance && o.Completed.After(crashed) && o.Completed.Before(p.Invoked) {
				crashed = o.Completed
			}
		}
	}
	for _, o := range ops {
		if o.ID == p.ID || o.Epoch <= p.Epoch || !o.Invoked.Before(p.Completed) || (o.Type == record.Fail && o.Status == 0) {
			continue // a request never forwarded (refused, dial failed) reached nothing
		}
		write := (o.Method == "PUT" && o.Key != "") || (o.Method == "POST" && o.Path == contract.PathFence)
		switch {
		case !write:
		case o.SinkInstance == p.SinkInstance:
			return o, true
		case o.SinkInstance == "" && !o.Invoked.Before(crashed):
			return o, true
		}
	}
	return record.Operation{}, false
}

// crashedBefore is when the last sink crash before t was injected (zero
// if none was recorded).
func crashedBefore(s *history.Scenario, t time.Time) time.Time {
	var at time.Time
	for _, w := range s.Chaos {
		if w.Kind == string(fault.SinkCrash) && w.Injected.Before(t) && w.Injected.After(at) {
			at = w.Injected
		}
	}
	return at
}

// checkAckedWritesDurable: every write a client saw acknowledged (2xx) is
// in the final state with its value, or with a later write's: one sent to
// the same key, not finished before the acknowledged one was sent, that
// may have taken effect, at an epoch no lower. Nothing acknowledged may be
// lost, the sink restart included. An OK_DUP acknowledges the commit of its
// Idempotency-Key's first request, not a new one: a later write that
// committed before the retry was sent may still have replaced it.
func checkAckedWritesDurable(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history recorded")
		return e.verdict()
	}
	final := map[string]contract.Record{}
	for _, r := range s.FinalRecords {
		final[r.Key] = r
	}
	type val struct {
		sha   string
		epoch uint64
	}
	acked := map[string][]record.Operation{}
	// writers: per key and (value, epoch), the latest end of a write that
	// may have left that record (acknowledged or without a definite answer).
	writers := map[string]map[val]time.Time{}
	// firstSent: per key and Idempotency-Key, when its first request was
	// sent; the earliest the commit an OK_DUP acknowledges can have happened.
	type idem struct{ key, idem string }
	firstSent := map[idem]time.Time{}
	end := s.Witness.Read
	for _, o := range s.Witness.Operations {
		if o.Method == "PUT" && o.IdempotencyKey != "" {
			k := idem{o.Key, o.IdempotencyKey}
			if t, ok := firstSent[k]; !ok || o.Invoked.Before(t) {
				firstSent[k] = o.Invoked
			}
		}
		if o.Method != "PUT" || o.Key == "" || o.ValuePartial || o.Type == record.Fail {
			continue
		}
		done := o.Completed
		if done.IsZero() {
			done = end
		}
		if writers[o.Key] == nil {
			writers[o.Key] = map[val]time.Time{}
		}
		epoch := o.Epoch
		if o.Type == record.OK && o.ResultEpoch != 0 {
			epoch = o.ResultEpoch
		}
		v := val{o.ValueSHA256, epoch}
		if done.After(writers[o.Key][v]) {
			writers[o.Key][v] = done
		}
		if o.Type == record.OK && (o.Result == contract.ResultOK || o.Result == contract.ResultOKDup) {
			acked[o.Key] = append(acked[o.Key], o)
		}
	}
	if len(acked) == 0 {
		e.unknownf("no write was acknowledged: nothing to judge")
		return e.verdict()
	}
	keys := make([]string, 0, len(acked))
	n := 0
	for k := range acked {
		keys = append(keys, k)
		n += len(acked[k])
	}
	sort.Strings(keys)
	for _, k := range keys {
		r, ok := final[k]
		if !ok {
			a := acked[k][len(acked[k])-1]
			e.failf("%s: acknowledged (op #%d epoch %d at %s, instance %s) but absent from the final state", k, a.ID, a.Epoch, ts(a.Completed), shortID(a.SinkInstance))
			continue
		}
		sum := sha256.Sum256([]byte(r.Value))
		got := val{hex.EncodeToString(sum[:]), r.Epoch}
		wrote, ok := writers[k][got]
		if !ok {
			e.failf("%s: the final record (epoch %d, value sha256 %.12s) is no write any client sent", k, r.Epoch, got.sha)
			continue
		}
		for _, a := range acked[k] {
			epoch := max(a.Epoch, a.ResultEpoch)
			since := a.Invoked
			if a.Result == contract.ResultOKDup && a.IdempotencyKey != "" {
				since = firstSent[idem{a.Key, a.IdempotencyKey}]
			}
			if r.Epoch < epoch || !wrote.After(since) {
				e.failf("%s: write acknowledged as op #%d (epoch %d at %s, instance %s) is lost: the final record (epoch %d) is neither its value nor a later write's",
					k, a.ID, epoch, ts(a.Completed), shortID(a.SinkInstance), r.Epoch)
				break
			}
		}
	}
	if !e.fail {
		e.addf("%d acknowledged writes on %d keys: each key's final record is its last acknowledged value or a later write's%s", n, len(keys), acrossRestarts(s.Witness))
	}
	return e.verdict()
}

// acrossRestarts says how many sink instances acknowledged the writes.
func acrossRestarts(h *record.History) string {
	if ids := sinkInstances(h); len(ids) > 1 {
		return fmt.Sprintf(", across %d sink instances %v", len(ids), ids)
	}
	return ""
}
