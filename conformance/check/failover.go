package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// JitterFactor is client-go's leaderelection.JitterFactor: a candidate
// retries every retry period × [1, 1+JitterFactor] (written here, not
// imported: the checks import no Kubernetes client).
const JitterFactor = 1.2

// FailoverBound is the longest a correct takeover may take, from the
// later of the fault and the old holder's last renew (or its release) to
// the new leader's first acknowledged write, by client-go's algorithm:
//   - after a renew: a follower's lease clock starts when it sees that
//     renew, up to one jittered retry period (retry × (1+1.2)) after it;
//     it takes over at its first retry after the lease duration ran out on
//     that clock, up to one more jittered retry later. Then the new
//     leader's pacer waits up to one write interval before its first
//     write, and the fence and the write each take a sink round trip;
//   - after a release: the Lease is free at once, so only the first
//     jittered retry, the write interval and the round trips remain.
func FailoverBound(c history.Config, released bool, roundTrips time.Duration) time.Duration {
	jittered := time.Duration(float64(c.RetryPeriod.D()) * (1 + JitterFactor))
	if released {
		return jittered + c.WriteInterval.D() + roundTrips
	}
	return c.LeaseDuration.D() + 2*jittered + c.WriteInterval.D() + roundTrips
}

// TakeoverTime is one takeover the Lease watch saw after a fault, timed
// against FailoverBound.
type TakeoverTime struct {
	Cause    string    `json:"cause"`     // the chaos window's kind
	CausePod string    `json:"cause_pod"` // the pod it hit
	Injected time.Time `json:"injected"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	FromTerm uint64    `json:"from_term"`
	ToTerm   uint64    `json:"to_term"`
	// Released: the old holder released the Lease before the takeover.
	Released bool `json:"released,omitempty"`
	// Start is the later of the injection and the old holder's last renew
	// or release, as the watch saw them: no follower could start earlier.
	Start   time.Time `json:"start"`
	Granted time.Time `json:"granted"` // the watch saw the new holder
	// Acquired is the new holder's acquireTime in the Lease: its own clock
	// when it began the attempt that won (zero if the Lease had none). It
	// splits Took into the lease mechanics (Start -> Acquired: seeing the
	// last renew, the TTL, the next retry) and the write path (Acquired ->
	// FirstCommit: the update, the fence, the pacer, the first write).
	Acquired time.Time `json:"acquired,omitzero"`
	// FirstCommit is when the witness saw the first acknowledged write of
	// the new term answered; RoundTrips the witness's timing of that write
	// and of the new term's acknowledged fence.
	FirstCommit time.Time     `json:"first_commit,omitzero"`
	RoundTrips  time.Duration `json:"round_trips_ns"`
	Took        time.Duration `json:"took_ns"` // Start -> FirstCommit
	Bound       time.Duration `json:"bound_ns"`
	// Superseded: the new holder lost the Lease again before it committed
	// (a rolling restart stopped it too); its successor is judged instead.
	Superseded bool `json:"superseded,omitempty"`
}

// Judged reports whether the takeover was timed against its bound.
func (t TakeoverTime) Judged() bool { return !t.FirstCommit.IsZero() }

// Within reports whether a timed takeover came within its bound.
func (t TakeoverTime) Within() bool { return t.Judged() && t.Took <= t.Bound }

// StartedBy says what started the clock.
func (t TakeoverTime) StartedBy() string {
	switch {
	case t.Start.Equal(t.Injected):
		return "the injection"
	case t.Released:
		return "the release"
	}
	return "the last renew"
}

// faultOf is the registered fault of a window's kind; a kind this build
// does not know acts on its pod and must end in a takeover.
func faultOf(w history.ChaosWindow) fault.Fault {
	if f, ok := fault.Of(fault.Kind(w.Kind)); ok {
		return f
	}
	return fault.Fault{Kind: fault.Kind(w.Kind), Hits: fault.HitsPod, Takeover: true}
}

// collectPhase is the driver's last phase (scenario.PhaseCollect; the
// scenario package imports this one): it stops every reconciler, and a
// leader that releases on shutdown hands over once more.
const collectPhase = "collect"

// collectStart is when the collect phase began (zero if none was recorded).
func collectStart(s *history.Scenario) time.Time {
	for _, p := range s.Phases {
		if p.Name == collectPhase {
			return p.Start
		}
	}
	return time.Time{}
}

// hits reports whether a fault acts on pod: its own pod, every pod for
// one that hits them all (a rolling restart replaces them one by one),
// none for a fault of the sink.
func hits(w history.ChaosWindow, pod string) bool {
	switch faultOf(w).Hits {
	case fault.HitsEveryPod:
		return true
	case fault.HitsSink:
		return false
	}
	return pod != "" && w.Pod == pod
}

// holderAtTime is the Lease holder as last observed at or before t.
func holderAtTime(s *history.Scenario, t time.Time) (history.LeaseRecord, bool) {
	var out history.LeaseRecord
	ok := false
	for _, r := range s.Lease.Records {
		if r.Observed.After(t) {
			break
		}
		if r.Event != "DELETED" {
			out, ok = r, true
		}
	}
	return out, ok
}

// TakeoverTimes times every takeover that followed a chaos window (the
// first holder's acquisition is not one). problems are violations (a fault
// on the leader no takeover followed, a new leader that never committed);
// notes are the rest.
func TakeoverTimes(s *history.Scenario) (out []TakeoverTime, problems, notes []string) {
	recs := s.Lease.Records
	windows := append([]history.ChaosWindow(nil), s.Chaos...)
	sort.SliceStable(windows, func(i, j int) bool { return windows[i].Injected.Before(windows[j].Injected) })
	caused := make([]int, len(windows))
	tos := Takeovers(s)
	collect := collectStart(s)
	for i, t := range tos {
		if t.From == "" {
			continue
		}
		if !collect.IsZero() && t.Observed.After(collect) {
			notes = append(notes, fmt.Sprintf("takeover %s -> %s at %s came while the driver stopped every reconciler to collect: not timed", t.From, t.To, ts(t.Observed)))
			continue
		}
		// The cause is the last fault before it on the old holder's pod.
		wi := -1
		for j, w := range windows {
			if !w.Injected.After(t.Observed) && hits(w, PodOf(s, t.From)) {
				wi = j
			}
		}
		if wi < 0 {
			notes = append(notes, fmt.Sprintf("takeover %s -> %s at %s followed no fault on %s: not timed", t.From, t.To, ts(t.Observed), PodOf(s, t.From)))
			continue
		}
		w := windows[wi]
		caused[wi]++
		tt := TakeoverTime{Cause: w.Kind, CausePod: w.Pod, Injected: w.Injected, From: t.From, To: t.To, FromTerm: t.FromTerm, ToTerm: t.ToTerm,
			Granted: t.Observed, Start: w.Injected}
		if a := recs[t.Index].AcquireTime; a != nil {
			tt.Acquired = *a
		}
		for k := t.Index - 1; k >= 0; k-- {
			r := recs[k]
			if r.Event == "DELETED" {
				continue
			}
			if r.Holder == "" {
				tt.Released = true
			}
			if r.Holder == t.From {
				last := r.Observed
				if tt.Released {
					last = recs[k+1].Observed // the first record without a holder
				}
				if last.After(tt.Start) {
					tt.Start = last
				}
				break
			}
		}
		if s.Witness != nil {
			put, fence := firstCommitOf(s, t.ToTerm, PodOf(s, t.To), tt.Start)
			if put != nil {
				tt.FirstCommit = put.Completed
				tt.RoundTrips = put.Completed.Sub(put.Invoked)
				if fence != nil {
					tt.RoundTrips += fence.Completed.Sub(fence.Invoked)
				}
				tt.Took = tt.FirstCommit.Sub(tt.Start)
			}
		}
		tt.Bound = FailoverBound(s.Config, tt.Released, tt.RoundTrips)
		if !tt.Judged() && s.Witness != nil {
			if i+1 < len(tos) && tos[i+1].From == t.To {
				tt.Superseded = true
				notes = append(notes, fmt.Sprintf("%s took over at %s (term %d) and lost the Lease again at %s before it committed: its successor is timed instead",
					t.To, ts(t.Observed), t.ToTerm, ts(tos[i+1].Observed)))
			} else {
				problems = append(problems, fmt.Sprintf("%s of %s at %s: new leader %s (term %d, granted %s) never committed a write the witness saw acknowledged",
					w.Kind, w.Pod, ts(w.Injected), t.To, t.ToTerm, ts(t.Observed)))
			}
		}
		out = append(out, tt)
	}
	for j, w := range windows {
		h, ok := holderAtTime(s, w.Injected)
		switch {
		case faultOf(w).Hits == fault.HitsSink:
			notes = append(notes, fmt.Sprintf("%s of %s at %s: a fault of the sink, not of a leader: not a failover", w.Kind, w.Pod, ts(w.Injected)))
		case !ok || h.Holder == "":
			notes = append(notes, fmt.Sprintf("%s of %s at %s: no leader was known then", w.Kind, w.Pod, ts(w.Injected)))
		case PodOf(s, h.Holder) != w.Pod:
			notes = append(notes, fmt.Sprintf("%s of %s at %s hit a follower (leader was %s): not a failover", w.Kind, w.Pod, ts(w.Injected), h.Holder))
		case caused[j] == 0 && faultOf(w).Takeover:
			problems = append(problems, fmt.Sprintf("%s of leader %s at %s: no takeover followed", w.Kind, w.Pod, ts(w.Injected)))
		}
	}
	return out, problems, notes
}

// firstCommitOf is the witness's first acknowledged PUT of term sent by
// pod (by answer time), and the acknowledged fence of that term before
// it. The epoch alone does not name the new leader: a controller whose
// term did not move (neg-no-term-bump) or an old leader that stamps the
// live term (neg-live-epoch) sends the same epoch, and timing the new
// leader by their writes gave failovers of -0.9 s (s16-bench). So a
// request counts only when its TCP source was pod's address then
// (SenderOf; an address it cannot attribute does not count), and was sent
// after start, less the watch's lag, as the new leader's must be. A
// history with no pod addresses (recorded before they were) is timed by
// the epoch and the time alone.
func firstCommitOf(s *history.Scenario, term uint64, pod string, start time.Time) (put, fence *record.Operation) {
	h := s.Witness
	for i := range h.Operations {
		o := &h.Operations[i]
		if o.Type != record.OK || !o.EpochValid() || o.Epoch != term || o.Completed.IsZero() || o.Invoked.Before(start.Add(-watchLag)) {
			continue
		}
		if len(s.PodIPs) > 0 {
			if sender, _ := SenderOf(s, *o); sender != pod {
				continue
			}
		}
		switch {
		case o.Method == "PUT" && strings.HasPrefix(o.Path, contract.PathRecords):
			if put == nil || o.Completed.Before(put.Completed) {
				put = o
			}
		case o.Method == "POST" && o.Path == contract.PathFence:
			if fence == nil || o.Completed.Before(fence.Completed) {
				fence = o
			}
		}
	}
	if put != nil && fence != nil && fence.Completed.After(put.Completed) {
		fence = nil
	}
	return put, fence
}

func checkTakeoverBound(s *history.Scenario) Verdict {
	var e evidence
	if len(s.Chaos) == 0 {
		e.unknownf("no chaos window recorded: nothing to judge")
		return e.verdict()
	}
	if s.Witness == nil {
		e.unknownf("no witness history: when each new leader's first write was acknowledged is unknown")
	}
	times, problems, notes := TakeoverTimes(s)
	for _, p := range problems {
		e.failf("%s", p)
	}
	judged := 0
	for _, t := range times {
		if !t.Judged() {
			continue
		}
		judged++
		line := fmt.Sprintf("%s of %s: term %d -> %d, first commit %v after %s (bound %v: %s)", t.Cause, t.CausePod, t.FromTerm, t.ToTerm,
			t.Took.Round(time.Millisecond), t.StartedBy(), t.Bound.Round(time.Millisecond), boundTerms(s.Config, t))
		if t.Within() {
			e.addf("within: %s", line)
		} else {
			e.failf("OVER: %s", line)
		}
	}
	for _, n := range notes {
		e.addf("%s", n)
	}
	if judged == 0 && !e.fail {
		e.unknownf("no takeover after a fault to time")
	}
	return e.verdict()
}

// boundTerms spells out a bound's sum.
func boundTerms(c history.Config, t TakeoverTime) string {
	if t.Released {
		return fmt.Sprintf("retry %v × 2.2 + write %v + round trips %v", c.RetryPeriod.D(), c.WriteInterval.D(), t.RoundTrips.Round(time.Millisecond))
	}
	return fmt.Sprintf("lease %v + 2 × retry %v × 2.2 + write %v + round trips %v", c.LeaseDuration.D(), c.RetryPeriod.D(), c.WriteInterval.D(), t.RoundTrips.Round(time.Millisecond))
}
