// Package synth builds synthetic scenario histories from a tiny discrete
// model of three leader-elected pods and a sink: a correct run, or one with
// a chosen defect. The checks' tests, the report renderer's tests and the
// screenshot of the timeline all use it; it never touches a cluster.
package synth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/leader"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Defect selects a broken variant (zero value: everything correct).
type Defect struct {
	UnfencedSink   bool // the sink accepts every epoch
	FencingOff     bool // the reconciler sends no epoch and no fence
	IgnoreDemotion bool // the old leader keeps writing after losing the lease
	LiveEpoch      bool // stale writes stamped with the live term
	NoDrain        bool // the bridge drops its buffer on stop
	TermOnRenew    bool // every renew bumps the term
	NoTermBump     bool // a takeover keeps the old term
	Shutdown       bool // the last leader is shut down at the end (bridge abort)
	SlowAbort      bool // the abort takes longer than the limit
	WatchGap       bool // the Lease watch lost 2s (410 Gone)
	HideCommit     bool // the sink's history hides one commit its client saw
}

// T0 is when every synthetic scenario starts.
var T0 = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

type pod struct {
	name, id  string
	leader    bool
	term      uint64
	cut       bool // partitioned from the apiserver
	lastRenew time.Time
	writes    int
	writing   bool // keeps writing (leader, or ignoring demotion)
	ip        string
	termSeq   uint64 // the next plan seq of its current term
}

type model struct {
	s       *history.Scenario
	now     time.Time
	pods    []*pod
	holder  *pod
	term    uint64
	rv      int
	floor   uint64
	seq     uint64
	applied map[string]bool
	d       Defect
	senders []string // the pod that sent each attempt
}

// Scenario returns a partition scenario: pod-a leads, is cut off from the
// apiserver for 9s (lease 4s), pod-c takes over, the partition heals.
func Scenario(name string, d Defect) *history.Scenario {
	s := &history.Scenario{
		Name: name, Namespace: "fc-" + name,
		Description: "synthetic: leader partitioned for 9s with a 4s lease, then healed",
		Config: history.Config{
			LeaseDuration: history.Duration(4 * time.Second), RenewDeadline: history.Duration(3 * time.Second),
			RetryPeriod: history.Duration(time.Second), DrainTimeout: history.Duration(2 * time.Second),
			WriteInterval: history.Duration(500 * time.Millisecond), AbortLimit: history.Duration(200 * time.Millisecond),
			FencingRequired: true,
		},
		Events: map[string][]eventlog.Event{},
		Lease:  history.LeaseWatch{Name: leader.LeaseName, Start: T0.Add(-time.Second)},
		Expect: map[string]history.Expectation{},
	}
	m := &model{s: s, now: T0, applied: map[string]bool{}, d: d}
	for i, n := range []string{"pod-a", "pod-b", "pod-c"} {
		p := &pod{name: n, id: leader.NewIdentity(n, uint32(0xa0+i)), ip: fmt.Sprintf("10.244.%d.5", i+1)}
		m.pods = append(m.pods, p)
		s.PodIPs = append(s.PodIPs, history.PodIP{Pod: n, IP: p.ip, From: T0.Add(-time.Second)})
		m.emit(p, eventlog.Event{Kind: eventlog.KindStarted})
	}
	a, c := m.pods[0], m.pods[2]
	s.Phases = append(s.Phases, history.Phase{Name: "deploy", Start: T0, End: T0.Add(time.Second)})
	m.acquire(a)
	cutAt, healAt := T0.Add(5*time.Second), T0.Add(14*time.Second)
	end := T0.Add(20 * time.Second)
	step := 100 * time.Millisecond
	for m.now = T0.Add(step); !m.now.After(end); m.now = m.now.Add(step) {
		if m.now.Equal(cutAt) {
			a.cut = true
			s.Chaos = append(s.Chaos, history.ChaosWindow{Kind: string(fault.Partition), Pod: a.name, Node: "fencecheck-worker", Injected: cutAt, Recovered: healAt})
		}
		if m.now.Equal(healAt) {
			a.cut = false
		}
		m.tick(c)
	}
	m.now = end
	if d.Shutdown && m.holder != nil {
		m.shutdown(m.holder)
	}
	s.Phases = append(s.Phases,
		history.Phase{Name: "steady", Start: T0.Add(time.Second), End: cutAt},
		history.Phase{Name: "partition", Start: cutAt, End: healAt},
		history.Phase{Name: "heal", Start: healAt, End: m.now},
		// The driver begins stopping the writers here (old-leader-steps-down
		// needs them running through its window).
		history.Phase{Name: "collect", Start: m.now, End: m.now})
	// Then the driver stops every pod to collect: SIGTERM aborts the
	// leader's bridge, and every log ends with the pod's stopped event.
	if m.holder != nil {
		m.shutdown(m.holder)
	}
	m.now = m.now.Add(100 * time.Millisecond)
	for _, p := range m.pods {
		if evs := s.Events[p.name]; len(evs) == 0 || evs[len(evs)-1].Kind != eventlog.KindStopped {
			m.emit(p, eventlog.Event{Kind: eventlog.KindStopped})
		}
	}
	s.Lease.End = m.now.Add(time.Second)
	if d.WatchGap {
		var kept []history.LeaseRecord
		from, to := T0.Add(9*time.Second), T0.Add(11*time.Second)
		for _, r := range s.Lease.Records {
			if r.Observed.Before(from) || r.Observed.After(to) {
				kept = append(kept, r)
			}
		}
		s.Lease.Records = kept
		s.Lease.Gaps = []history.Gap{{From: from, To: to, Reason: "410 Gone: resourceVersion too old"}}
	}
	s.Witness = WitnessOf(s.Attempts)
	for i := range s.Witness.Operations {
		s.Witness.Operations[i].Source = m.ip(m.senders[i]) + ":40000"
	}
	if d.HideCommit {
		for i, at := range s.Attempts {
			if at.Committed() && at.Epoch == 2 {
				s.Attempts = append(s.Attempts[:i:i], s.Attempts[i+1:]...)
				break
			}
		}
	}
	state := map[string]contract.Record{}
	var keys []string
	for _, at := range s.Attempts {
		if at.Committed() {
			if _, ok := state[at.Key]; !ok {
				keys = append(keys, at.Key)
			}
			state[at.Key] = contract.Record{Key: at.Key, Value: at.Value, Epoch: at.Epoch}
		}
	}
	for _, k := range keys {
		s.FinalRecords = append(s.FinalRecords, state[k])
	}
	for _, c := range []string{"term-monotonic", "term-step", "no-stale-commit", "epoch-held-by-writer", "witness-agrees",
		"row-epoch-monotonic", "rejected-not-in-final-state", "floor-monotonic", "idempotency",
		"unfenced-writes", "old-leader-steps-down", "bridge-drain", "bridge-capacity", "bridge-join", "failover-liveness", "linearizable"} {
		s.Expect[c] = history.MustPass
	}
	if d.Shutdown {
		s.Expect["bridge-abort"] = history.MustPass
	}
	return s
}

// Run wraps scenarios into a run.
func Run(id string, ss ...*history.Scenario) *history.Run {
	return &history.Run{Format: history.FormatVersion, Meta: history.Meta{RunID: id, Seed: 1, Started: T0, Ended: T0.Add(time.Minute),
		Versions: map[string]string{"fencecheck": "synthetic"}}, Scenarios: ss}
}

func (m *model) emit(p *pod, e eventlog.Event) {
	e.Time, e.Pod, e.Identity = m.now, p.name, p.id
	m.s.Events[p.name] = append(m.s.Events[p.name], e)
}

func (m *model) record(event string) {
	m.rv++
	r := history.LeaseRecord{Observed: m.now.Add(20 * time.Millisecond), Event: event, ResourceVersion: fmt.Sprint(1000 + m.rv),
		UID: "5f0c2d4e-uid", TermRaw: fmt.Sprint(m.term), Term: m.term, TermOK: true}
	if m.holder != nil {
		r.Holder = m.holder.id
		rt := m.holder.lastRenew
		r.RenewTime = &rt
	}
	m.s.Lease.Records = append(m.s.Lease.Records, r)
}

func (m *model) acquire(p *pod) {
	if !m.d.NoTermBump || m.term == 0 {
		m.term++
	}
	m.holder, p.leader, p.writing, p.term, p.lastRenew, p.termSeq = p, true, true, m.term, m.now, 0
	ev := "MODIFIED"
	if m.rv == 0 {
		ev = "ADDED"
	}
	m.record(ev)
	m.emit(p, eventlog.Event{Kind: eventlog.KindAcquired, Epoch: p.term})
	if !m.d.FencingOff {
		a := m.attempt(p, contract.Attempt{Op: contract.OpFence, Epoch: p.term})
		m.emit(p, eventlog.Event{Kind: eventlog.KindFence, Epoch: p.term, Result: a.Result, Status: a.Status})
	}
	m.emit(p, eventlog.Event{Kind: eventlog.KindBridgeSpawned, Epoch: p.term, Capacity: 128})
}

// attempt applies the sink's rule and records the attempt.
func (m *model) attempt(p *pod, a contract.Attempt) contract.Attempt {
	m.seq++
	m.senders = append(m.senders, p.name)
	a.Seq, a.Arrived, a.Status = m.seq, m.now.Add(5*time.Millisecond), 200
	fenced := !m.d.UnfencedSink
	switch {
	case a.Op == contract.OpFence:
		if fenced && a.Epoch < m.floor {
			a.Result, a.Status = contract.ResultRejectStale, 409
		} else {
			a.Result = contract.ResultOK
			if a.Epoch > m.floor {
				m.floor = a.Epoch
			}
		}
	case fenced && a.Epoch < m.floor:
		a.Result, a.Status = contract.ResultRejectStale, 409
	case m.applied[a.IdempotencyKey]:
		a.Result = contract.ResultOKDup
	default:
		a.Result = contract.ResultOK
		m.applied[a.IdempotencyKey] = true
		if a.Epoch > m.floor {
			m.floor = a.Epoch
		}
	}
	a.FloorAfter = m.floor
	m.s.Attempts = append(m.s.Attempts, a)
	return a
}

func (m *model) write(p *pod) {
	p.writes++
	epoch := p.term
	if m.d.LiveEpoch && !p.leader {
		epoch = m.term
	}
	sent := epoch
	if m.d.FencingOff {
		sent = 0
	}
	key := fmt.Sprintf("row-%d", p.writes%3)
	val := fmt.Sprintf("%s-t%d-%d", p.name, epoch, p.writes)
	idem := fmt.Sprintf("%s.%d.%d", p.id, p.term, p.termSeq) // the plan's <identity>.<term>.<seq>
	p.termSeq++
	a := m.attempt(p, contract.Attempt{Op: contract.OpPut, Key: key, Value: val, Epoch: sent, IdempotencyKey: idem})
	m.emit(p, eventlog.Event{Kind: eventlog.KindWrite, Key: key, Value: val, IdempotencyKey: idem, Epoch: epoch, Result: a.Result, Status: a.Status})
}

func (m *model) stepDown(p *pod) {
	p.leader = false
	m.emit(p, eventlog.Event{Kind: eventlog.KindLost, Epoch: p.term})
	dropped, drained := 0, 2
	if m.d.NoDrain {
		dropped, drained = 2, 0
	}
	m.emit(p, eventlog.Event{Kind: eventlog.KindBridgeDrained, Epoch: p.term, Count: drained, DurationMs: 12,
		Detail: fmt.Sprintf("enqueued=%d forwarded=%d drained=%d dropped=%d", p.termSeq+uint64(dropped), p.termSeq, drained, dropped)})
	yes := true
	m.emit(p, eventlog.Event{Kind: eventlog.KindBridgeJoined, Epoch: p.term, JoinedInTime: &yes, DurationMs: 13, DrainTimeoutMs: 2000, Detail: "exit=drained"})
	if !m.d.IgnoreDemotion {
		p.writing = false
	}
}

func (m *model) shutdown(p *pod) {
	took := 3.5
	if m.d.SlowAbort {
		took = 900
	}
	m.now = m.now.Add(100 * time.Millisecond)
	p.leader, p.writing = false, false
	m.now = m.now.Add(time.Duration(took * float64(time.Millisecond)))
	m.emit(p, eventlog.Event{Kind: eventlog.KindBridgeAborted, Epoch: p.term, Count: 1, DurationMs: took,
		Detail: fmt.Sprintf("enqueued=%d forwarded=%d drained=0 dropped=1", p.termSeq+1, p.termSeq)})
	yes := true
	m.emit(p, eventlog.Event{Kind: eventlog.KindBridgeJoined, Epoch: p.term, JoinedInTime: &yes, DurationMs: took + 1, DrainTimeoutMs: 2000, Detail: "exit=aborted"})
	m.emit(p, eventlog.Event{Kind: eventlog.KindStopped})
	m.holder = nil
	m.record("MODIFIED")
}

func (m *model) tick(successor *pod) {
	h := m.holder
	// Renew every retry period, unless cut off.
	if h != nil && !h.cut && h.leader && m.now.Sub(h.lastRenew) >= time.Second {
		h.lastRenew = m.now
		if m.d.TermOnRenew {
			m.term++
			h.term = m.term
		}
		m.record("MODIFIED")
	}
	// A cut-off leader gives up after the renew deadline.
	if h != nil && h.cut && h.leader && m.now.Sub(h.lastRenew) >= 3*time.Second {
		m.stepDown(h)
	}
	// The successor takes over once the lease expired (+ its retry tick).
	if h != nil && h != successor && m.now.Sub(h.lastRenew) >= 5*time.Second {
		m.acquire(successor)
	}
	if m.now.Sub(T0)%(500*time.Millisecond) == 0 {
		for _, p := range m.pods {
			if p.writing {
				m.write(p)
			}
		}
	}
}

// ip is the address pod sent from.
func (m *model) ip(name string) string {
	for _, p := range m.pods {
		if p.name == name {
			return p.ip
		}
	}
	return ""
}

// WitnessOf is the client-side history a witness in front of the sink
// would have recorded for these attempts: one operation each, answered
// with the sink's result.
func WitnessOf(as []contract.Attempt) *record.History {
	h := &record.History{Instance: "synthetic", Started: T0}
	for i, a := range as {
		o := record.Operation{ID: uint64(i + 1), Source: "10.244.1.5:40000", Invoked: a.Arrived.Add(-time.Millisecond), Completed: a.Arrived.Add(time.Millisecond),
			Epoch: a.Epoch, Status: a.Status, Result: a.Result, Type: record.Fail}
		if a.Epoch > 0 {
			o.EpochHeader = fmt.Sprint(a.Epoch)
		}
		if a.Status/100 == 2 {
			o.Type = record.OK
		}
		// The answer's epochs as the reference sink sends them: a commit's
		// epoch, the floor on a reject or a fence.
		switch {
		case a.Op == contract.OpFence || a.Status == 409:
			o.HighestEpoch = a.FloorAfter
		case o.Type == record.OK:
			o.ResultEpoch = a.Epoch
		}
		switch a.Op {
		case contract.OpFence:
			o.Method, o.Path = "POST", contract.PathFence
		default:
			sum := sha256.Sum256([]byte(a.Value))
			o.Method, o.Path, o.Key, o.IdempotencyKey = "PUT", contract.RecordPath(a.Key), a.Key, a.IdempotencyKey
			o.ValueLen, o.ValueSHA256 = int64(len(a.Value)), hex.EncodeToString(sum[:])
		}
		h.Operations = append(h.Operations, o)
		h.Read = o.Completed
	}
	return h
}
