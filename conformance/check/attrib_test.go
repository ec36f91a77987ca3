package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

func TestSenderOf(t *testing.T) {
	t0 := synth.T0
	s := &history.Scenario{PodIPs: []history.PodIP{
		{Pod: "a", IP: "10.0.0.1", From: t0, To: t0.Add(10 * time.Second)},
		{Pod: "b", IP: "10.0.0.1", From: t0.Add(20 * time.Second)}, // the address reused later
		{Pod: "c", IP: "10.0.0.3", From: t0},
		{Pod: "d", IP: "10.0.0.3", From: t0.Add(5 * time.Second)}, // held twice at once
	}}
	for _, c := range []struct {
		src      string
		at       time.Duration
		pod, why string
	}{
		{"10.0.0.1:5000", time.Second, "a", ""},
		{"10.0.0.1:5000", 25 * time.Second, "b", ""},
		{"10.0.0.1:5000", 15 * time.Second, "", "no pod held 10.0.0.1"},
		{"10.0.0.3:5000", time.Second, "c", ""},
		{"10.0.0.3:5000", 6 * time.Second, "", "10.0.0.3 was held by c and d"},
		{"[::ffff:10.0.0.3]:5000", time.Second, "c", ""},
		{"nonsense", time.Second, "", "is not ip:port"},
	} {
		pod, why := SenderOf(s, record.Operation{Source: c.src, Invoked: t0.Add(c.at)})
		if pod != c.pod || !strings.Contains(why, c.why) || (c.why == "" && why != "") {
			t.Errorf("SenderOf(%s at +%v) = %q, %q; want %q, %q", c.src, c.at, pod, why, c.pod, c.why)
		}
	}
	if _, why := SenderOf(&history.Scenario{}, record.Operation{Source: "10.0.0.1:1"}); why != "no pod addresses recorded" {
		t.Errorf("no addresses: %q", why)
	}
}

func TestParsePlanKey(t *testing.T) {
	k, ok := ParsePlanKey("reconciler-7h8nw_0a1b2c3d.4.129")
	if !ok || k != (PlanKey{Identity: "reconciler-7h8nw_0a1b2c3d", Term: 4, Seq: 129}) {
		t.Errorf("got %+v %v", k, ok)
	}
	if k, ok := ParsePlanKey("pod.with.dots_00000001.2.0"); !ok || k.Identity != "pod.with.dots_00000001" {
		t.Errorf("dotted identity: %+v %v", k, ok)
	}
	for _, bad := range []string{"", "ghost-1", "a.b.c", "a.1", ".1.2", "a.1.x"} {
		if _, ok := ParsePlanKey(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// epoch-held-by-writer reads no log and no sink history.
func TestEpochHeldJudgedFromWitnessAndWatch(t *testing.T) {
	s := synth.Scenario("correct", synth.Defect{})
	s.Events, s.Attempts = map[string][]eventlog.Event{}, nil
	wantPass(t, s, EpochHeldByWriter)

	live := synth.Scenario("live-epoch", synth.Defect{IgnoreDemotion: true, LiveEpoch: true})
	live.Events, live.Attempts = map[string][]eventlog.Event{}, nil
	wantFail(t, live, EpochHeldByWriter, "sent by pod-a, which the Lease watch never shows holding term 2")

	// Sent well before the watch showed the grant: not held at the send.
	early := synth.Scenario("early", synth.Defect{})
	to := Takeovers(early)[1]
	for i, o := range early.Witness.Operations {
		if o.Epoch == to.ToTerm {
			early.Witness.Operations[i].Invoked = to.Observed.Add(-2 * watchLag)
			break
		}
	}
	wantFail(t, early, EpochHeldByWriter, "before the Lease watch showed it holding term 2")

	// Two pods on one address, or no addresses at all: unattributed.
	amb := synth.Scenario("ambiguous", synth.Defect{})
	amb.PodIPs = append(amb.PodIPs, history.PodIP{Pod: "pod-x", IP: amb.PodIPs[0].IP, From: synth.T0})
	wantInconclusive(t, amb, EpochHeldByWriter, "was held by pod-a and pod-x")
	none := synth.Scenario("no-ips", synth.Defect{})
	none.PodIPs = nil
	wantInconclusive(t, none, EpochHeldByWriter, "no pod addresses recorded")
	none.MissingEvidence(history.EvidencePodIPs, "pod watch: forbidden")
	wantInconclusive(t, none, EpochHeldByWriter, "pod-ips evidence incomplete: pod watch: forbidden")
}

// The holder's pod comes from the run's pods, not from a suffix rule: any
// "<pod>_<suffix>" is that pod's (docs/controller-contract.md, MUST 1),
// and a holder that names no pod leaves the writes of its term unjudged,
// naming it, never failed.
func TestHolderPodByTheRunsPods(t *testing.T) {
	rename := func(s *history.Scenario, id func(pod string, i int) string) {
		ids := map[string]string{}
		for i, r := range s.Lease.Records {
			if r.Holder == "" {
				continue
			}
			if _, ok := ids[r.Holder]; !ok {
				ids[r.Holder] = id(strings.Split(r.Holder, "_")[0], len(ids))
			}
			s.Lease.Records[i].Holder = ids[r.Holder]
		}
	}
	odd := synth.Scenario("correct", synth.Defect{})
	odd.Events, odd.Attempts = map[string][]eventlog.Event{}, nil
	rename(odd, func(pod string, i int) string { return fmt.Sprintf("%s_%d", pod, i+1) })
	wantPass(t, odd, EpochHeldByWriter)
	for _, r := range odd.Lease.Records {
		if p := PodOf(odd, r.Holder); r.Holder != "" && (p == "" || !strings.HasPrefix(r.Holder, p+"_")) {
			t.Errorf("PodOf(%q) = %q", r.Holder, p)
		}
	}

	stranger := synth.Scenario("correct", synth.Defect{})
	stranger.Events, stranger.Attempts = map[string][]eventlog.Event{}, nil
	rename(stranger, func(pod string, i int) string { return fmt.Sprintf("stranger-%d_x", i) })
	wantInconclusive(t, stranger, EpochHeldByWriter, `the Lease holder "stranger-0_x" names none of the scenario's pods`)
}

func TestBridgeDrainFromTheWitness(t *testing.T) {
	s := synth.Scenario("correct", synth.Defect{})
	wantPass(t, s, BridgeDrain)
	if v := verdict(t, s, BridgeDrain); !strings.Contains(strings.Join(v.Evidence, "\n"), "seqs 0..12, contiguous (enqueued=13 by its bridge_drained event)") {
		t.Errorf("evidence: %v", v.Evidence)
	}
	// The reconciler's own count says nothing was dropped, yet the
	// witness never saw the last seq: the witness wins.
	lying := synth.Scenario("hidden-drop", synth.Defect{})
	ops := lying.Witness.Operations
	for i := len(ops) - 1; i >= 0; i-- {
		if k, ok := ParsePlanKey(ops[i].IdempotencyKey); ok && k.Identity == "pod-a_000000a0" && k.Seq == 12 {
			lying.Witness.Operations = append(ops[:i:i], ops[i+1:]...)
			break
		}
	}
	wantFail(t, lying, BridgeDrain, "the witness never saw it send seqs 12 (1 of the 13 it enqueued")
	// A key of pod-a's plan sent from pod-c's address.
	foreign := synth.Scenario("foreign", synth.Defect{})
	for i, o := range foreign.Witness.Operations {
		if k, ok := ParsePlanKey(o.IdempotencyKey); ok && k.Identity == "pod-a_000000a0" {
			foreign.Witness.Operations[i].Source = "10.244.3.5:40000"
			break
		}
	}
	wantFail(t, foreign, BridgeDrain, "carries pod-a's key but was sent by pod-c")
	// The writes of a drained bridge from an address no pod held.
	unknown := synth.Scenario("unattributed", synth.Defect{NoDrain: true})
	unknown.PodIPs = unknown.PodIPs[1:] // pod-a's address unrecorded
	wantInconclusive(t, unknown, BridgeDrain, "from addresses no single pod held")
	noWit := synth.Scenario("no-witness", synth.Defect{})
	noWit.Witness = nil
	wantInconclusive(t, noWit, BridgeDrain, "no witness history")
}

// setEnqueued rewrites the enqueue count of pod-a's first bridge exit.
func setEnqueued(t *testing.T, s *history.Scenario, n string) {
	t.Helper()
	for i, ev := range s.Events["pod-a"] {
		if ev.Kind == eventlog.KindBridgeDrained {
			f := strings.Fields(ev.Detail)
			f[0] = "enqueued=" + n
			s.Events["pod-a"][i].Detail = strings.Join(f, " ")
			return
		}
	}
	t.Fatal("no bridge_drained event of pod-a")
}

func TestBridgeCapacityFromTheWitness(t *testing.T) {
	s := synth.Scenario("correct", synth.Defect{Shutdown: true})
	wantPass(t, s, BridgeCapacity)
	// 13 sent, the buffer full (128) and one in the writer's hands: at the bound.
	atBound := synth.Scenario("at-bound", synth.Defect{})
	setEnqueued(t, atBound, "142")
	wantPass(t, atBound, BridgeCapacity)
	deep := synth.Scenario("deep", synth.Defect{})
	setEnqueued(t, deep, "525") // a 512-deep bridge
	wantFail(t, deep, BridgeCapacity, "by its stop at 04:00:06.988 it had enqueued 525 (its bridge_drained event), but the witness had seen it send seq 12 at most: 512 ahead")
	unknown := synth.Scenario("unattributed", synth.Defect{})
	setEnqueued(t, unknown, "525")
	unknown.PodIPs = unknown.PodIPs[1:]
	wantInconclusive(t, unknown, BridgeCapacity, "no single pod held")
	bad := synth.Scenario("no-count", synth.Defect{})
	setEnqueued(t, bad, "x")
	wantInconclusive(t, bad, BridgeCapacity, "has no enqueued= count")
}

// A leader is only seen to step down if the writers run past the window.
func TestStepsDownNeedsTheWholeWindow(t *testing.T) {
	s := synth.Scenario("cut-short", synth.Defect{})
	to := Takeovers(s)[1]
	for i, p := range s.Phases {
		if p.Name == PhaseCollect {
			s.Phases[i].Start = to.Observed.Add(s.Config.DrainTimeout.D())
		}
	}
	wantInconclusive(t, s, OldLeaderStepsDown, "before the step-down window closed")
	s.Phases = s.Phases[:len(s.Phases)-1]
	wantInconclusive(t, s, OldLeaderStepsDown, "no collect phase recorded")
	// A late write already seen stands as a violation.
	bad := synth.Scenario("ignore-demotion", synth.Defect{IgnoreDemotion: true})
	bad.Phases = bad.Phases[:len(bad.Phases)-1]
	wantFail(t, bad, OldLeaderStepsDown, "kept sending after losing the Lease")
}

func TestBridgeTestimonySaysSo(t *testing.T) {
	s := synth.Scenario("correct", synth.Defect{Shutdown: true})
	for _, c := range []string{BridgeAbort, BridgeJoin} {
		if v := verdict(t, s, c); v.Status != StatusPass || v.Evidence[0] != testimony {
			t.Errorf("%s: %v", c, v.Evidence)
		}
	}
}
