package check

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
)

// attempts returns the sink's attempts in the order its decisions took
// effect when it reports one for every attempt (contract.Attempt.Order),
// else in arrival (Seq) order. Arrival order can put a write decided
// before a concurrent fence after it, and call it stale.
func attempts(s *history.Scenario) []contract.Attempt {
	out := append([]contract.Attempt(nil), s.Attempts...)
	byOrder := len(out) > 0
	for _, a := range out {
		byOrder = byOrder && a.Order > 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		if byOrder {
			return out[i].Order < out[j].Order
		}
		return out[i].Seq < out[j].Seq
	})
	return out
}

func isReject(a contract.Attempt) bool { return strings.HasPrefix(a.Result, "REJECT") }

func describe(a contract.Attempt) string {
	if a.Op == contract.OpFence {
		return fmt.Sprintf("seq %d fence epoch %d -> %s", a.Seq, a.Epoch, a.Result)
	}
	return fmt.Sprintf("seq %d put %s=%q epoch %d idem %q -> %s", a.Seq, a.Key, a.Value, a.Epoch, a.IdempotencyKey, a.Result)
}

// writers indexes the reconcilers' write events so that a sink attempt can
// be attributed to the pod that sent it: by Idempotency-Key, else by
// key, value and epoch.
type writers struct {
	byIdem map[string][]eventlog.Event
	byKV   map[string][]eventlog.Event
}

func indexWriters(s *history.Scenario) writers {
	w := writers{byIdem: map[string][]eventlog.Event{}, byKV: map[string][]eventlog.Event{}}
	for _, ev := range s.AllEvents() {
		if ev.Kind != eventlog.KindWrite {
			continue
		}
		if ev.IdempotencyKey != "" {
			w.byIdem[ev.IdempotencyKey] = append(w.byIdem[ev.IdempotencyKey], ev)
		}
		k := kv(ev.Key, ev.Value, ev.Epoch)
		w.byKV[k] = append(w.byKV[k], ev)
	}
	return w
}

func kv(key, value string, epoch uint64) string {
	return fmt.Sprintf("%s\x00%s\x00%d", key, value, epoch)
}

// of returns the write events that could have sent a.
func (w writers) of(a contract.Attempt) []eventlog.Event {
	if a.IdempotencyKey != "" {
		if evs := w.byIdem[a.IdempotencyKey]; len(evs) > 0 {
			return evs
		}
	}
	return w.byKV[kv(a.Key, a.Value, a.Epoch)]
}

// effectiveEpoch is the attempt's epoch, or, for an attempt sent without
// one, the epoch its writer logged.
func effectiveEpoch(a contract.Attempt, w writers) uint64 {
	if a.Epoch != 0 {
		return a.Epoch
	}
	for _, ev := range w.of(a) {
		if ev.Epoch != 0 {
			return ev.Epoch
		}
		// An unfenced write is sent (and logged) without an epoch; the
		// reconciler notes the bridge's epoch in the detail.
		if m := bridgeEpochRE.FindStringSubmatch(ev.Detail); m != nil {
			if e, err := strconv.ParseUint(m[1], 10, 64); err == nil {
				return e
			}
		}
	}
	return 0
}

var bridgeEpochRE = regexp.MustCompile(`\bbridge_epoch=(\d+)`)

func checkNoStaleCommit(s *history.Scenario) Verdict {
	var e evidence
	w := indexWriters(s)
	as := attempts(s)
	fenced := map[uint64]bool{}
	for _, a := range as {
		if a.Op == contract.OpFence {
			fenced[a.Epoch] = true
		}
	}
	// A term that was never fenced at the sink is in force from the moment
	// the Lease shows it acquired.
	acquired := termAcquired(s)
	var unfencedTerms []uint64
	for t := range acquired {
		if !fenced[t] {
			unfencedTerms = append(unfencedTerms, t)
		}
	}
	sort.Slice(unfencedTerms, func(i, j int) bool { return unfencedTerms[i] < unfencedTerms[j] })

	var seen uint64 // highest epoch the sink has seen (fence, commit or floor)
	seenAt := "nothing"
	commits, stale, rises := 0, 0, 0
	first := true
	for _, a := range as {
		cutoff, why := seen, seenAt
		for _, t := range unfencedTerms {
			if t > cutoff && acquired[t].Before(a.Arrived) {
				cutoff, why = t, fmt.Sprintf("term %d acquired at %s (never fenced)", t, ts(acquired[t]))
			}
		}
		if a.Committed() {
			commits++
			if ep := effectiveEpoch(a, w); ep < cutoff {
				stale++
				e.failf("stale commit at %s: %s (epoch %d) after the sink saw epoch %d (%s)", ts(a.Arrived), describe(a), ep, cutoff, why)
			}
		}
		var high uint64
		if a.Op == contract.OpFence || a.Committed() {
			high = a.Epoch
		}
		if a.FloorAfter > high {
			high = a.FloorAfter
		}
		if high > seen {
			if !first {
				rises++
			}
			seen, seenAt = high, fmt.Sprintf("%s at %s", describe(a), ts(a.Arrived))
		}
		if high > 0 {
			first = false
		}
	}
	if commits == 0 {
		e.unknownf("the sink committed nothing: nothing to judge")
	}
	if rises == 0 && len(acquired) < 2 {
		e.unknownf("no new term reached the sink: nothing to judge")
	}
	if !e.fail {
		e.addf("%d commits, none stale; the sink's epoch rose %d times", commits, rises)
	}
	return e.verdict()
}

func checkRowEpoch(s *history.Scenario) Verdict {
	var e evidence
	last := map[string]contract.Attempt{}
	commits := 0
	for _, a := range attempts(s) {
		if !a.Committed() {
			continue
		}
		commits++
		if p, ok := last[a.Key]; ok && a.Epoch < p.Epoch {
			e.failf("row %s went back from epoch %d (seq %d) to %d (seq %d)", a.Key, p.Epoch, p.Seq, a.Epoch, a.Seq)
		}
		last[a.Key] = a
	}
	if commits == 0 {
		e.unknownf("the sink committed nothing: nothing to judge")
	}
	if !e.fail {
		e.addf("%d commits over %d rows, no row returned to an older epoch", commits, len(last))
	}
	return e.verdict()
}

// replayState is the sink's final state as its own history implies it.
func replayState(as []contract.Attempt) map[string]contract.Record {
	st := map[string]contract.Record{}
	for _, a := range as {
		if a.Committed() {
			st[a.Key] = contract.Record{Key: a.Key, Value: a.Value, Epoch: a.Epoch}
		}
	}
	return st
}

// replayHashes is the SHA-256 of each row's value in replayState: values
// are compared by hash, since a history may keep only their prefix.
func replayHashes(as []contract.Attempt) map[string]string {
	h := map[string]string{}
	for _, a := range as {
		if a.Committed() {
			h[a.Key] = a.ValueHash()
		}
	}
	return h
}

func valueHash(v string) string { return contract.Attempt{Value: v}.ValueHash() }

func checkRejectedNotInState(s *history.Scenario) Verdict {
	var e evidence
	as := attempts(s)
	state := replayState(as)
	hashes := replayHashes(as)
	if s.FinalRecords != nil {
		final := map[string]contract.Record{}
		for _, r := range s.FinalRecords {
			final[r.Key] = r
		}
		// In key order: the evidence is the same on every re-check.
		for _, k := range slices.Sorted(maps.Keys(state)) {
			r := state[k]
			if f, ok := final[k]; !ok {
				e.failf("row %s: history says %q@%d, the sink's final state has no such row", k, r.Value, r.Epoch)
			} else if f.Epoch != r.Epoch || valueHash(f.Value) != hashes[k] {
				e.failf("row %s: history says %q@%d, the sink's final state says %q@%d", k, r.Value, r.Epoch, f.Value, f.Epoch)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(final)) {
			f := final[k]
			if _, ok := state[k]; !ok {
				e.failf("row %s=%q@%d is in the sink's final state but no commit in its history wrote it", k, f.Value, f.Epoch)
			}
		}
		state = final
		hashes = map[string]string{}
		for k, f := range final {
			hashes[k] = valueHash(f.Value)
		}
	}
	rejected := 0
	for _, a := range as {
		if a.Op != contract.OpPut || !isReject(a) {
			continue
		}
		rejected++
		if r, ok := state[a.Key]; ok && hashes[a.Key] == a.ValueHash() && r.Epoch == a.Epoch {
			e.failf("%s was rejected, yet the final state holds it", describe(a))
		}
	}
	if len(as) == 0 {
		e.unknownf("the sink's history is empty: nothing to judge")
	}
	if !e.fail {
		src := "replayed from the history"
		if s.FinalRecords != nil {
			src = "read from the sink, equal to the replay"
		}
		e.addf("%d rejected writes, none in the final state (%d rows, %s)", rejected, len(state), src)
	}
	return e.verdict()
}

func checkFloorMonotonic(s *history.Scenario) Verdict {
	var e evidence
	bySeq := append([]contract.Attempt(nil), s.Attempts...)
	sort.Slice(bySeq, func(i, j int) bool { return bySeq[i].Seq < bySeq[j].Seq })
	for i := 1; i < len(bySeq); i++ {
		if bySeq[i].Seq != bySeq[i-1].Seq+1 {
			e.failf("sink history has a hole: seq %d then %d", bySeq[i-1].Seq, bySeq[i].Seq)
		}
	}
	var floor, highest uint64
	for _, a := range attempts(s) {
		if a.FloorAfter < floor {
			e.failf("%s: floor went back %d -> %d", describe(a), floor, a.FloorAfter)
		}
		floor = a.FloorAfter
		if a.Committed() {
			if a.Epoch < highest {
				e.failf("%s: committed below the highest committed epoch %d", describe(a), highest)
			}
			if a.Epoch > highest {
				highest = a.Epoch
			}
		}
	}
	if len(bySeq) == 0 {
		e.unknownf("the sink's history is empty: nothing to judge")
	}
	if !e.fail {
		e.addf("%d attempts, floor ends at %d, highest committed epoch %d", len(bySeq), floor, highest)
	}
	return e.verdict()
}

func checkIdempotency(s *history.Scenario) Verdict {
	var e evidence
	applied := map[string]contract.Attempt{}
	keyed, dups := 0, 0
	for _, a := range attempts(s) {
		if a.Op != contract.OpPut || a.IdempotencyKey == "" {
			continue
		}
		switch a.Result {
		case contract.ResultOK:
			keyed++
			if p, ok := applied[a.IdempotencyKey]; ok {
				e.failf("Idempotency-Key %q applied twice: seq %d and seq %d", a.IdempotencyKey, p.Seq, a.Seq)
				continue
			}
			applied[a.IdempotencyKey] = a
		case contract.ResultOKDup:
			dups++
			if _, ok := applied[a.IdempotencyKey]; !ok {
				e.failf("%s: OK_DUP for a key never applied", describe(a))
			}
		}
	}
	if keyed == 0 {
		e.unknownf("no commit carried an Idempotency-Key: nothing to judge")
	}
	if !e.fail {
		e.addf("%d keyed commits, each applied once; %d retries answered OK_DUP", keyed, dups)
	}
	return e.verdict()
}

func checkUnfenced(s *history.Scenario) Verdict {
	var e evidence
	fencedAt := map[uint64]uint64{} // epoch -> seq of its first fence
	firstCommit := map[uint64]bool{}
	commits := 0
	for _, a := range attempts(s) {
		if a.Op == contract.OpFence {
			if _, ok := fencedAt[a.Epoch]; !ok {
				fencedAt[a.Epoch] = a.Seq
			}
			continue
		}
		if !a.Committed() {
			continue
		}
		commits++
		if a.Epoch == 0 {
			e.failf("%s: committed without an epoch", describe(a))
			continue
		}
		if !firstCommit[a.Epoch] {
			firstCommit[a.Epoch] = true
			if _, ok := fencedAt[a.Epoch]; !ok {
				e.failf("%s: first commit of term %d, but no fence for term %d reached the sink before it", describe(a), a.Epoch, a.Epoch)
			}
		}
	}
	// A writer that never stamps gets every write refused by a correct
	// sink, so no commit shows it: the witness does.
	if n, puts, status := unstampedPuts(s); n > 0 {
		e.failf("the witness saw %d of %d PUTs sent without a valid %s header (answers by status: %v): the writer does not stamp its writes", n, puts, contract.HeaderEpoch, status)
	} else if commits == 0 {
		e.unknownf("the sink committed nothing: nothing to judge")
	}
	if !e.fail {
		e.addf("%d commits, all with an epoch; %d terms, each fenced before its first commit", commits, len(firstCommit))
	}
	return e.verdict()
}

// unstampedPuts counts the witness's PUTs without a valid epoch header.
func unstampedPuts(s *history.Scenario) (n, puts int, status map[int]int) {
	status = map[int]int{}
	if s.Witness == nil {
		return 0, 0, status
	}
	for _, op := range s.Witness.Operations {
		if op.Method != "PUT" {
			continue
		}
		puts++
		if op.EpochHeader == "" || op.EpochError != "" {
			n++
			status[op.Status]++
		}
	}
	return n, puts, status
}

func checkRejectStaleSeen(s *history.Scenario) Verdict {
	var e evidence
	n := 0
	for _, a := range attempts(s) {
		if a.Result == contract.ResultRejectStale {
			if n == 0 {
				e.addf("first: %s at %s (floor %d)", describe(a), ts(a.Arrived), a.FloorAfter)
			}
			n++
		}
	}
	if n == 0 {
		e.failf("the sink never answered %s in %d attempts", contract.ResultRejectStale, len(s.Attempts))
	} else {
		e.addf("%d attempts answered %s", n, contract.ResultRejectStale)
	}
	return e.verdict()
}

// WriterPods attributes every sink attempt to the pod that sent it, by
// Seq (absent if unknown): a put by its write event, a fence by the fence
// event of the same epoch.
func WriterPods(s *history.Scenario) map[uint64]string {
	w := indexWriters(s)
	fences := map[uint64]string{}
	for _, ev := range s.AllEvents() {
		if _, ok := fences[ev.Epoch]; ev.Kind == eventlog.KindFence && !ok {
			fences[ev.Epoch] = ev.Pod
		}
	}
	out := map[uint64]string{}
	for _, a := range s.Attempts {
		if a.Op == contract.OpFence {
			if p, ok := fences[a.Epoch]; ok {
				out[a.Seq] = p
			}
		} else if evs := w.of(a); len(evs) > 0 {
			out[a.Seq] = evs[0].Pod
		}
	}
	return out
}
