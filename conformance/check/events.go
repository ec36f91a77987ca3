package check

import (
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/leader"
	"github.com/fencecheck/fencecheck/witness/record"
)

// PodOf maps a holder identity to its pod, or "" when it names none of
// the scenario's pods (HolderPod says why).
func PodOf(s *history.Scenario, identity string) string {
	pod, _ := HolderPod(s, identity)
	return pod
}

// HolderPod maps a holder identity to its pod by the contract's rule
// (docs/controller-contract.md, MUST 1; leader.HolderPod): the pod of the
// run whose name, or one of whose addresses, the identity is or starts
// with followed by '_', whatever the suffix. The run's pods are those the
// harness recorded addresses for and those with an event log. A holder
// that matches none is an error naming it, then the pod that logged that
// identity in its events, if one did.
func HolderPod(s *history.Scenario, identity string) (string, error) {
	known := map[string]string{}
	shared := map[string]bool{} // an address two pods held names neither
	for _, p := range s.PodIPs {
		known[p.Pod] = p.Pod
		if q, ok := known[p.IP]; ok && q != p.Pod {
			shared[p.IP] = true
		}
		known[p.IP] = p.Pod
	}
	for ip := range shared {
		delete(known, ip)
	}
	for pod := range s.Events {
		known[pod] = pod
	}
	pod, err := leader.HolderPod(identity, known)
	if err == nil {
		return pod, nil
	}
	for p, evs := range s.Events {
		for _, ev := range evs {
			if ev.Identity == identity {
				return p, nil
			}
		}
	}
	return "", err
}

// checkStepsDown judges, from the Lease watch and the witness (not from
// the old leader's own account), that every previous holder stopped
// sending once it lost the Lease: no write stamped with its term is sent
// later than drain_timeout after the takeover the watch saw (its bridge
// may still drain until then). A write carries its term in the epoch
// header, so no log is needed to attribute it.
func checkStepsDown(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history: what the old leader sent is unknown")
		return e.verdict()
	}
	stopped, known := writersStopped(s)
	if !known {
		e.unknownf("no collect phase recorded: when the harness stopped the writers is unknown")
	}
	n := 0
	for _, t := range Takeovers(s) {
		if t.From == "" || t.FromTerm == t.ToTerm {
			continue // the first holder; or no new term to tell the writers apart (term-step judges that)
		}
		n++
		limit := t.Observed.Add(s.Config.DrainTimeout.D())
		closes := t.Observed.Add(StepDownWindow(s.Config))
		late, unstamped := 0, 0
		var last record.Operation
		for _, o := range s.Witness.Operations {
			if o.Method != "PUT" || !o.Invoked.After(limit) || o.Harness != "" {
				continue // not a write, in time, or the harness's own probe
			}
			switch {
			case !o.EpochValid():
				unstamped++
			case o.Epoch == t.FromTerm:
				if late == 0 {
					e.failf("%s kept sending after losing the Lease to %s at %s: put %s epoch %d sent at %s (%s %s), past drain_timeout %v",
						t.From, t.To, ts(t.Observed), o.Key, o.Epoch, ts(o.Invoked), o.Type, o.Result, s.Config.DrainTimeout.D())
				}
				late++
				last = o
			}
		}
		switch {
		case late > 0:
			e.addf("%s: %d writes of term %d sent after %s + drain_timeout, the last at %s", t.From, late, t.FromTerm, ts(t.Observed), ts(last.Invoked))
		case known && stopped.Before(closes):
			e.unknownf("takeover %s -> %s at %s: the harness stopped the writers at %s, before the step-down window closed at %s (drain_timeout %v + %v): a leader that never stops would not have been seen",
				t.From, t.To, ts(t.Observed), ts(stopped), ts(closes), s.Config.DrainTimeout.D(), StepDownWindow(s.Config)-s.Config.DrainTimeout.D())
		case unstamped > 0:
			e.unknownf("takeover %s -> %s at %s: %d writes without a valid epoch were sent after drain_timeout and cannot be told apart", t.From, t.To, ts(t.Observed), unstamped)
		default:
			e.addf("%s (term %d) sent nothing later than drain_timeout after losing the Lease at %s", t.From, t.FromTerm, ts(t.Observed))
		}
	}
	if n == 0 {
		e.unknownf("no takeover from a previous holder observed: nothing to judge")
	}
	return e.verdict()
}

// testimony heads the evidence of the checks that still rest on the
// reconciler's own bridge events.
const testimony = "judged from the reconciler's own bridge events (its testimony; INCONCLUSIVE unless every log is complete)"

func checkBridgeAbort(s *history.Scenario) Verdict {
	var e evidence
	e.addf(testimony)
	limit := s.Config.AbortLimit.D()
	if limit <= 0 {
		e.failf("the scenario sets no abort_limit")
	}
	n := 0
	for _, pod := range s.Pods() {
		evs := s.Events[pod]
		for _, ab := range evs {
			if ab.Kind != eventlog.KindBridgeAborted {
				continue
			}
			n++
			took := time.Duration(ab.DurationMs * float64(time.Millisecond))
			if took > limit {
				e.failf("%s bridge of term %d took %v to abort, limit %v", pod, ab.Epoch, took, limit)
			} else {
				e.addf("%s bridge of term %d aborted in %v (limit %v), dropped %d", pod, ab.Epoch, took, limit, ab.Count)
			}
			// The event is written once the bridge exited; the abort began
			// DurationMs earlier. No write the sink answered may have been
			// sent after that. A write event is logged when its answer came
			// and carries the round trip in DurationMs, so a request already
			// in flight at the abort is not counted as emitted after it.
			abortAt := ab.Time.Add(-took)
			for _, w := range evs {
				sentAt := w.Time.Add(-time.Duration(w.DurationMs * float64(time.Millisecond)))
				if w.Kind == eventlog.KindWrite && w.Epoch == ab.Epoch && w.Status != 0 && sentAt.After(abortAt) {
					e.failf("%s sent %s=%q (term %d, %s) at %s, after its bridge aborted at %s", pod, w.Key, w.Value, w.Epoch, w.Result, ts(sentAt), ts(abortAt))
				}
			}
		}
	}
	if n == 0 {
		e.unknownf("no bridge_aborted event: no shutdown aborted a bridge, nothing to judge")
	}
	return e.verdict()
}

func checkBridgeJoin(s *history.Scenario) Verdict {
	var e evidence
	e.addf(testimony)
	n := 0
	for _, pod := range s.Pods() {
		open := map[uint64]time.Time{} // spawned, not yet joined
		var ended time.Time
		for _, ev := range s.Events[pod] {
			switch ev.Kind {
			case eventlog.KindBridgeSpawned:
				open[ev.Epoch] = ev.Time
			case eventlog.KindBridgeJoined:
				n++
				delete(open, ev.Epoch)
				limit := s.Config.DrainTimeout.D()
				if ev.DrainTimeoutMs > 0 {
					limit = time.Duration(ev.DrainTimeoutMs * float64(time.Millisecond))
				}
				took := time.Duration(ev.DurationMs * float64(time.Millisecond))
				switch {
				case ev.JoinedInTime == nil:
					e.failf("%s bridge of term %d: bridge_joined without joined_in_time", pod, ev.Epoch)
				case !*ev.JoinedInTime:
					e.failf("%s bridge of term %d was not joined within drain_timeout %v (waited %v, %s)", pod, ev.Epoch, limit, took, ev.Detail)
				case s.Config.DrainTimeout > 0 && limit != s.Config.DrainTimeout.D():
					e.failf("%s bridge of term %d joined against %v, but the scenario set drain_timeout %v", pod, ev.Epoch, limit, s.Config.DrainTimeout.D())
				default:
					e.addf("%s bridge of term %d joined in %v (drain_timeout %v, %s)", pod, ev.Epoch, took, limit, ev.Detail)
				}
			case eventlog.KindLost, eventlog.KindStopped:
				ended = ev.Time
			}
		}
		if !ended.IsZero() {
			for ep, at := range open {
				if at.Before(ended) {
					e.failf("%s bridge of term %d (spawned %s) was never joined though the pod stopped leading at %s", pod, ep, ts(at), ts(ended))
				}
			}
		}
	}
	if n == 0 {
		e.unknownf("no bridge_joined event: nothing to judge")
	}
	return e.verdict()
}
