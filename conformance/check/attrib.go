package check

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

// bridgeDepth is the epoch bridge's depth the contract (ADR-0035) sets:
// the checks hold the reconciler to it, never to the depth it reports.
const bridgeDepth = 128

// watchLag is how long before the Lease watch saw a grant its holder's
// first request may reach the witness: a watch event arrives after the
// update it reports, so a new leader's fence can overtake it.
const watchLag = time.Second

// SenderOf is the pod that sent o, from its TCP source address and the
// harness's record of which pod held that address when o was invoked. An
// address no pod held then, or that two pods held, is missing evidence:
// it returns "" and why, never a guess.
func SenderOf(s *history.Scenario, o record.Operation) (pod, why string) {
	ap, err := netip.ParseAddrPort(o.Source)
	if err != nil {
		return "", fmt.Sprintf("source %q is not ip:port", o.Source)
	}
	ip := ap.Addr().Unmap().String()
	var holders []string
	for _, p := range s.PodIPs {
		if a, err := netip.ParseAddr(p.IP); err == nil && a.Unmap().String() == ip && p.Holds(o.Invoked) && !slices.Contains(holders, p.Pod) {
			holders = append(holders, p.Pod)
		}
	}
	switch len(holders) {
	case 1:
		return holders[0], ""
	case 0:
		if len(s.PodIPs) == 0 {
			return "", "no pod addresses recorded"
		}
		return "", fmt.Sprintf("no pod held %s at %s", ip, ts(o.Invoked))
	}
	sort.Strings(holders)
	return "", fmt.Sprintf("%s was held by %s at %s", ip, strings.Join(holders, " and "), ts(o.Invoked))
}

// PlanKey is an idempotency key of the fixture's plan,
// <identity>.<term>.<seq> (fixtures/reconciler/plan).
type PlanKey struct {
	Identity  string
	Term, Seq uint64
}

// ParsePlanKey splits an idempotency key from the right (an identity may
// hold dots); ok is false for a key of another shape.
func ParsePlanKey(k string) (PlanKey, bool) {
	i := strings.LastIndexByte(k, '.')
	if i <= 0 {
		return PlanKey{}, false
	}
	j := strings.LastIndexByte(k[:i], '.')
	if j <= 0 {
		return PlanKey{}, false
	}
	term, err1 := strconv.ParseUint(k[j+1:i], 10, 64)
	seq, err2 := strconv.ParseUint(k[i+1:], 10, 64)
	if err1 != nil || err2 != nil {
		return PlanKey{}, false
	}
	return PlanKey{Identity: k[:j], Term: term, Seq: seq}, true
}

func isWriteOrFence(o record.Operation) bool {
	return o.Method == "PUT" || (o.Method == "POST" && strings.HasPrefix(o.Path, contract.PathFence))
}

func describeOp(o record.Operation) string {
	if o.Method == "PUT" {
		return fmt.Sprintf("witness op %d (put %s epoch %s at %s from %s)", o.ID, o.Key, o.EpochHeader, ts(o.Invoked), o.Source)
	}
	return fmt.Sprintf("witness op %d (%s %s epoch %s at %s from %s)", o.ID, o.Method, o.Path, o.EpochHeader, ts(o.Invoked), o.Source)
}

// holderPods maps each holder the Lease watch saw to its pod (HolderPod),
// once per check; unmatched says which holders name no pod of the run.
func holderPods(s *history.Scenario) (pods map[string]string, unmatched []error) {
	pods = map[string]string{}
	for _, r := range s.Lease.Records {
		if _, done := pods[r.Holder]; r.Holder == "" || done {
			continue
		}
		pod, err := HolderPod(s, r.Holder)
		if err != nil {
			unmatched = append(unmatched, err)
		}
		pods[r.Holder] = pod
	}
	return pods, unmatched
}

// heldSince is when the Lease watch first showed pod holding term.
func heldSince(s *history.Scenario, pods map[string]string, pod string, term uint64) (time.Time, bool) {
	for _, r := range s.Lease.Records {
		if r.Holder != "" && r.TermOK && r.Event != "DELETED" && r.Term == term && pods[r.Holder] == pod {
			return r.Observed, true
		}
	}
	return time.Time{}, false
}

func termsOf(s *history.Scenario, pods map[string]string, pod string) []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	for _, r := range s.Lease.Records {
		if r.Holder != "" && r.TermOK && pods[r.Holder] == pod && !seen[r.Term] {
			seen[r.Term] = true
			out = append(out, r.Term)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// checkEpochHeld judges from the witness and the Lease watch only: every
// write and fence a pod sent carries a term the watch shows that pod
// holding at or before the send (within watchLag).
func checkEpochHeld(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history: what each pod sent is unknown")
		return e.verdict()
	}
	pods, unmatched := holderPods(s)
	for _, err := range unmatched {
		e.unknownf("%v", err)
	}
	unmatchedTerm := map[uint64]bool{} // a term whose holder names no pod: who held it is unknown
	for _, r := range s.Lease.Records {
		if r.Holder != "" && r.TermOK && pods[r.Holder] == "" {
			unmatchedTerm[r.Term] = true
		}
	}
	n, unknown := 0, 0
	by := map[string]int{}
	for _, o := range s.Witness.Operations {
		if !isWriteOrFence(o) || !o.EpochValid() {
			continue // unfenced-writes judges the writes without an epoch
		}
		if o.Harness != "" {
			continue // the harness's own probe (sink-crash): no pod sent it
		}
		n++
		pod, why := SenderOf(s, o)
		if pod == "" {
			if unknown < 3 {
				e.unknownf("%s cannot be attributed: %s", describeOp(o), why)
			}
			unknown++
			continue
		}
		by[pod]++
		at, ok := heldSince(s, pods, pod, o.Epoch)
		switch {
		case !ok && unmatchedTerm[o.Epoch]:
			unknown++ // said above: the holder of that term names no pod
		case !ok:
			e.failf("%s was sent by %s, which the Lease watch never shows holding term %d (it held [%s])", describeOp(o), pod, o.Epoch, joinU(termsOf(s, pods, pod)))
		case at.After(o.Invoked.Add(watchLag)):
			e.failf("%s was sent by %s before the Lease watch showed it holding term %d (at %s)", describeOp(o), pod, o.Epoch, ts(at))
		}
	}
	if unknown > 3 {
		e.unknownf("%d writes and fences in all cannot be attributed to a pod", unknown)
	}
	if n == 0 {
		e.unknownf("the witness saw no write or fence with an epoch: nothing to judge")
	}
	if !e.fail {
		e.addf("%d writes and fences (by sender, from source addresses: %s), each stamped with a term the Lease watch shows its sender holding", n, counts(by))
	}
	return e.verdict()
}

func counts(m map[string]int) string { return joinCounts(m, "%s:%d", " ") }

// joinCounts renders a tally in key order, each entry as format (key,
// count), joined with sep.
func joinCounts(m map[string]int, format, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(format, k, m[k])
	}
	return strings.Join(parts, sep)
}

// bridgeSends is what the witness saw one pod send of one term's plan.
type bridgeSends struct {
	first   map[uint64]time.Time // seq -> first invocation
	unknown int                  // the key matches but no pod could be named
	foreign []string             // the key matches but another pod sent it
}

func sendsOf(s *history.Scenario, pod, identity string, term uint64) bridgeSends {
	b := bridgeSends{first: map[uint64]time.Time{}}
	if s.Witness == nil {
		return b
	}
	for _, o := range s.Witness.Operations {
		if o.Method != "PUT" {
			continue
		}
		k, ok := ParsePlanKey(o.IdempotencyKey)
		if !ok || k.Identity != identity || k.Term != term {
			continue
		}
		switch sender, _ := SenderOf(s, o); sender {
		case "":
			b.unknown++
			continue
		case pod:
		default:
			b.foreign = append(b.foreign, fmt.Sprintf("%s carries %s's key but was sent by %s", describeOp(o), pod, sender))
			continue
		}
		if t, ok := b.first[k.Seq]; !ok || o.Invoked.Before(t) {
			b.first[k.Seq] = o.Invoked
		}
	}
	return b
}

// enqueuedOf reads the enqueue count from a bridge exit event: the
// reconciler's own count, the one number the witness cannot see.
func enqueuedOf(ev eventlog.Event) (uint64, bool) {
	for _, f := range strings.Fields(ev.Detail) {
		if k, v, ok := strings.Cut(f, "="); ok && k == "enqueued" {
			n, err := strconv.ParseUint(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// ranges renders missing seqs as 0-3,7,9-140.
func ranges(xs []uint64) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// checkBridgeDrain: for every bridge its producer stopped (it drained),
// the witness saw that pod send seqs 0..enqueued-1 of its term, each at
// least once. The enqueue count comes from the bridge's exit event.
func checkBridgeDrain(s *history.Scenario) Verdict {
	return bridgeExits(s, []string{eventlog.KindBridgeDrained}, func(e *evidence, pod string, ev eventlog.Event, enq uint64) {
		b := sendsOf(s, pod, ev.Identity, ev.Epoch)
		for _, f := range b.foreign {
			e.failf("%s", f)
		}
		var missing []uint64
		for q := uint64(0); q < enq; q++ {
			if _, ok := b.first[q]; !ok {
				missing = append(missing, q)
			}
		}
		switch {
		case len(missing) > 0 && b.unknown > 0:
			e.unknownf("%s bridge of term %d: the witness saw %d of the %d seqs it enqueued (its exit event's count) from it, and %d more of its keys from addresses no single pod held", pod, ev.Epoch, enq-uint64(len(missing)), enq, b.unknown)
		case len(missing) > 0:
			e.failf("%s bridge of term %d drained at %s, but the witness never saw it send seqs %s (%d of the %d it enqueued, by its bridge_drained event)", pod, ev.Epoch, ts(ev.Time), ranges(missing), len(missing), enq)
		default:
			e.addf("%s bridge of term %d: the witness saw it send seqs 0..%d, contiguous (enqueued=%d by its bridge_drained event)", pod, ev.Epoch, int64(enq)-1, enq)
		}
	})
}

// bridgeExits runs judge on every bridge exit event of the given kinds
// that carries its enqueue count; INCONCLUSIVE without a witness history
// or without such an event.
func bridgeExits(s *history.Scenario, kinds []string, judge func(e *evidence, pod string, ev eventlog.Event, enqueued uint64)) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history: what each bridge delivered is unknown")
		return e.verdict()
	}
	n := 0
	for _, pod := range s.Pods() {
		for _, ev := range s.Events[pod] {
			if !slices.Contains(kinds, ev.Kind) {
				continue
			}
			n++
			if enq, ok := enqueuedOf(ev); ok {
				judge(&e, pod, ev, enq)
			} else {
				e.unknownf("%s bridge of term %d: its %s event has no enqueued= count (%q)", pod, ev.Epoch, ev.Kind, ev.Detail)
			}
		}
	}
	if n == 0 {
		e.unknownf("no %s event: nothing to judge", strings.Join(kinds, " or "))
	}
	return e.verdict()
}

// checkBridgeCapacity shows the bridge's depth from the outside: when a
// bridge stopped (its exit event's time less its duration), its producer
// had enqueued at most bridgeDepth+1 seqs beyond the highest the witness
// had seen it send: the buffer, plus the one envelope in the writer's hands.
func checkBridgeCapacity(s *history.Scenario) Verdict {
	return bridgeExits(s, []string{eventlog.KindBridgeDrained, eventlog.KindBridgeAborted}, func(e *evidence, pod string, ev eventlog.Event, enq uint64) {
		stop := ev.Time.Add(-time.Duration(ev.DurationMs * float64(time.Millisecond)))
		b := sendsOf(s, pod, ev.Identity, ev.Epoch)
		highest := int64(-1)
		for q, at := range b.first {
			if !at.After(stop) && int64(q) > highest {
				highest = int64(q)
			}
		}
		ahead := int64(enq) - 1 - highest
		switch {
		case ahead > bridgeDepth+1 && b.unknown > 0:
			e.unknownf("%s bridge of term %d: %d ahead of what the witness saw at its stop, but %d of its keys came from addresses no single pod held", pod, ev.Epoch, ahead, b.unknown)
		case ahead > bridgeDepth+1:
			e.failf("%s bridge of term %d: by its stop at %s it had enqueued %d (its %s event), but the witness had seen it send seq %d at most: %d ahead, more than the capacity %d + 1 in the writer's hands",
				pod, ev.Epoch, ts(stop), enq, ev.Kind, highest, ahead, bridgeDepth)
		default:
			e.addf("%s bridge of term %d: %d ahead of the witness at its stop (enqueued=%d by its %s event, highest seq seen %d; capacity %d + 1)", pod, ev.Epoch, ahead, enq, ev.Kind, highest, bridgeDepth)
		}
	})
}

// StepDownWindow is how long after a takeover the writers must still run
// for old-leader-steps-down to judge it: drain_timeout, then long enough
// to see a leader that did not stop (a retry period, or four writes).
func StepDownWindow(c history.Config) time.Duration {
	return c.DrainTimeout.D() + max(c.RetryPeriod.D(), 4*c.WriteInterval.D())
}

// PhaseCollect is the phase in which the driver stops the writers; the
// scenario package names it too.
const PhaseCollect = "collect"

// writersStopped is when the harness began stopping the writers: the
// start of the collect phase.
func writersStopped(s *history.Scenario) (time.Time, bool) {
	for _, p := range s.Phases {
		if p.Name == PhaseCollect {
			return p.Start, true
		}
	}
	return time.Time{}, false
}
