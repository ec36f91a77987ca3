package check

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// crashRun builds a witness history of a sink crash mid-takeover: sink
// instance "a" acknowledges term 1's fence and writes, then term 2's fence
// and writes; it is killed (a write in flight gets no answer, one is
// refused by the gate); instance "b" answers the harness's probe at epoch
// 1 (probe), then term 2's writes again. final are the records read at the
// end.
type crashRun struct {
	t0    time.Time
	crash time.Time // the kill (zero: none recorded)
	ops   []record.Operation
	next  time.Duration
}

func (c *crashRun) add(o record.Operation) *record.Operation {
	o.ID = uint64(len(c.ops) + 1)
	c.next += 10 * time.Millisecond
	o.Invoked = c.t0.Add(c.next)
	if o.Type != record.Invoke {
		o.Completed = o.Invoked.Add(2 * time.Millisecond)
	}
	if o.Source == "" {
		o.Source = "10.0.0.1:4000"
	}
	c.ops = append(c.ops, o)
	return &c.ops[len(c.ops)-1]
}

func (c *crashRun) fence(epoch uint64, inst string) {
	c.add(record.Operation{Method: "POST", Path: contract.PathFence, EpochHeader: "x", Epoch: epoch, Type: record.OK, Status: 200,
		Result: contract.ResultOK, HighestEpoch: epoch, SinkInstance: inst})
}

func (c *crashRun) put(key, value string, epoch uint64, inst string) {
	c.add(record.Operation{Method: "PUT", Path: contract.PathRecords + key, Key: key, EpochHeader: "x", Epoch: epoch, ValueSHA256: sha(value),
		ValueLen: int64(len(value)), IdempotencyKey: value, Type: record.OK, Status: 200, Result: contract.ResultOK, ResultEpoch: epoch, HighestEpoch: epoch, SinkInstance: inst})
}

func (c *crashRun) probe(status int, inst string) {
	o := record.Operation{Method: "PUT", Path: contract.PathRecords + "fencecheck-probe", Key: "fencecheck-probe", EpochHeader: "1", Epoch: 1,
		ValueSHA256: sha("probe"), ValueLen: 5, Source: "harness", Harness: record.HarnessProbe, Status: status, SinkInstance: inst}
	switch status {
	case 200:
		o.Type, o.Result, o.ResultEpoch, o.HighestEpoch = record.OK, contract.ResultOK, 1, 1
	case 409:
		o.Type, o.Result, o.HighestEpoch = record.Fail, contract.ResultRejectStale, 2
	case 401:
		o.Type, o.Result = record.Fail, "UNAUTHORIZED" // the sink's auth answer (fixtures/sink/auth.go)
	default:
		o.Type = record.Fail // a bare status: no contract result
	}
	c.add(o)
}

// scenario is the run with its final records (key → value@epoch).
func (c *crashRun) scenario(final map[string]struct {
	v string
	e uint64
}) *history.Scenario {
	s := &history.Scenario{Name: "sink-crash", Witness: &record.History{Instance: "w", Started: c.t0, Read: c.t0.Add(c.next + time.Second), Operations: c.ops}}
	if !c.crash.IsZero() {
		s.Chaos = []history.ChaosWindow{{Kind: string(fault.SinkCrash), Pod: "sink", Injected: c.crash, Recovered: c.crash.Add(5 * time.Millisecond)}}
	}
	for k, r := range final {
		s.FinalRecords = append(s.FinalRecords, contract.Record{Key: k, Value: r.v, Epoch: r.e})
	}
	return s
}

type fv = struct {
	v string
	e uint64
}

// probedTwice is the correct run in which the harness's first probe (op
// #8) came back as first says, and the probe sent again was refused 409 by
// the restarted instance b.
func probedTwice(first record.Operation) *crashRun {
	c := standardCrash(409, "b")
	first.ID, first.Method, first.Key, first.EpochHeader, first.Epoch, first.Harness = 8, "PUT", "fencecheck-probe", "1", 1, record.HarnessProbe
	first.Invoked, first.Completed = c.ops[6].Completed, c.ops[6].Completed.Add(time.Millisecond)
	c.ops = append(c.ops[:7:7], first)
	for _, o := range standardCrash(409, "b").ops[7:] {
		o.ID++
		c.ops = append(c.ops, o)
	}
	return c
}

// standard is the correct run up to the probe; after is what follows it.
func standardCrash(probeStatus int, probeInst string) *crashRun {
	c := &crashRun{t0: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	c.fence(1, "a")
	c.put("row-000", "gen-1-seq-0", 1, "a")
	c.put("row-001", "gen-1-seq-1", 1, "a")
	c.fence(2, "a")
	c.put("row-000", "gen-2-seq-0", 2, "a")
	// The kill: one write in flight gets no answer, the next is refused.
	c.add(record.Operation{Method: "PUT", Key: "row-001", EpochHeader: "2", Epoch: 2, ValueSHA256: sha("gen-2-seq-1"), Type: record.Info, Error: "upstream: EOF"})
	c.crash = c.t0.Add(c.next + 5*time.Millisecond)
	c.add(record.Operation{Method: "PUT", Key: "row-001", EpochHeader: "2", Epoch: 2, ValuePartial: true, Type: record.Fail, Error: "refused by the witness: sink restarting"})
	c.probe(probeStatus, probeInst)
	c.put("row-001", "gen-2-seq-1", 2, "b")
	return c
}

var correctFinal = map[string]fv{"row-000": {"gen-2-seq-0", 2}, "row-001": {"gen-2-seq-1", 2}}

func judge(t *testing.T, name string, s *history.Scenario) Verdict {
	t.Helper()
	c, ok := ByName(name)
	if !ok {
		t.Fatalf("no check %s", name)
	}
	return c.Judge(s)
}

func wantVerdict(t *testing.T, v Verdict, pass, inconclusive bool, contains string) {
	t.Helper()
	joined := strings.Join(v.Evidence, "\n")
	if (v.Status == StatusPass) != pass || (v.Status == StatusInconclusive) != inconclusive || !strings.Contains(joined, contains) {
		t.Errorf("%s: pass=%v inconclusive=%v, want pass=%v inconclusive=%v with %q:\n%s", v.Check, v.Status == StatusPass, v.Status == StatusInconclusive, pass, inconclusive, contains, joined)
	}
}

func TestFloorSurvivesRestart(t *testing.T) {
	correct := standardCrash(409, "b").scenario(correctFinal)
	wantVerdict(t, judge(t, FloorSurvivesRestart, correct), true, false, "refused 409 by the restarted instance b")
	wantVerdict(t, judge(t, Linearizable, correct), true, false, "linearizable")

	// forget-floor: the restarted sink commits the probe below the floor.
	forgot := map[string]fv{"row-000": {"gen-2-seq-0", 2}, "row-001": {"gen-2-seq-1", 2}, "fencecheck-probe": {"probe", 1}}
	defect := standardCrash(200, "b").scenario(forgot)
	wantVerdict(t, judge(t, FloorSurvivesRestart, defect), false, false, "forgot its floor")
	wantVerdict(t, judge(t, Linearizable, defect), false, false, "not linearizable")

	// No evidence: no restart, no probe, no definite answer, no token.
	wantVerdict(t, judge(t, FloorSurvivesRestart, standardCrash(409, "a").scenario(correctFinal)), false, true, "did not restart")
	noID := standardCrash(409, "").scenario(correctFinal)
	wantVerdict(t, judge(t, FloorSurvivesRestart, noID), false, true, "nothing proves it restarted")
	wantVerdict(t, judge(t, FloorSurvivesRestart, standardCrash(401, "b").scenario(correctFinal)), false, true, "writer token")
	c := standardCrash(409, "b")
	c.ops = c.ops[:len(c.ops)-2] // drop the probe and what followed
	wantVerdict(t, judge(t, FloorSurvivesRestart, c.scenario(correctFinal)), false, true, "no probe")
	wantVerdict(t, judge(t, FloorSurvivesRestart, &history.Scenario{}), false, true, "no witness history")

	// A probe with no answer, sent again and refused: judged by the second.
	c = probedTwice(record.Operation{Type: record.Info, Error: "upstream: EOF"})
	wantVerdict(t, judge(t, FloorSurvivesRestart, c.scenario(correctFinal)), true, false, "not judged: probe #8 got no definite answer")

	// A bare 404 (no contract result: not the sink), then the sink's 409:
	// judged by the second; a bare 404 alone says nothing.
	c = probedTwice(record.Operation{Type: record.Fail, Status: 404})
	wantVerdict(t, judge(t, FloorSurvivesRestart, c.scenario(correctFinal)), true, false, "not judged: probe #8 got 404 with no contract result")
	wantVerdict(t, judge(t, FloorSurvivesRestart, standardCrash(404, "").scenario(correctFinal)), false, true, "not the sink's answer")

	// Without the crash's time, the write in flight at the kill may as
	// well have reached the restarted sink: the probe proves nothing.
	c = standardCrash(409, "b")
	c.crash = time.Time{}
	wantVerdict(t, judge(t, FloorSurvivesRestart, c.scenario(correctFinal)), false, true, "proves nothing")

	// A write of the current term reached the restarted sink first: even
	// a sink that forgot its floor would refuse the probe now.
	c = &crashRun{t0: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	c.fence(2, "a")
	c.put("row-000", "v0", 2, "a")
	c.put("row-000", "v1", 2, "b")
	c.probe(409, "b")
	wantVerdict(t, judge(t, FloorSurvivesRestart, c.scenario(map[string]fv{"row-000": {"v1", 2}})), false, true, "proves nothing")
}

func TestAckedWritesDurable(t *testing.T) {
	wantVerdict(t, judge(t, AckedWritesDurable, standardCrash(409, "b").scenario(correctFinal)), true, false, "across 2 sink instances")

	lost := standardCrash(409, "b").scenario(map[string]fv{"row-001": {"gen-2-seq-1", 2}})
	wantVerdict(t, judge(t, AckedWritesDurable, lost), false, false, "row-000: acknowledged")
	older := standardCrash(409, "b").scenario(map[string]fv{"row-000": {"gen-1-seq-0", 1}, "row-001": {"gen-2-seq-1", 2}})
	wantVerdict(t, judge(t, AckedWritesDurable, older), false, false, "is lost")
	nobody := standardCrash(409, "b").scenario(map[string]fv{"row-000": {"made-up", 2}, "row-001": {"gen-2-seq-1", 2}})
	wantVerdict(t, judge(t, AckedWritesDurable, nobody), false, false, "no write any client sent")

	// The write in flight at the kill (no answer) may be what stayed.
	c := standardCrash(409, "b")
	c.ops = c.ops[:len(c.ops)-1]
	inflight := c.scenario(map[string]fv{"row-000": {"gen-2-seq-0", 2}, "row-001": {"gen-2-seq-1", 2}})
	wantVerdict(t, judge(t, AckedWritesDurable, inflight), true, false, "acknowledged writes")

	// A retry of an older write answered OK_DUP after a newer write to the
	// key committed (mixed-faults, s15-all-p3-last): the dup acknowledges
	// the first commit, which the newer one replaced; a sink that applied
	// the retry again would have answered OK, and lost the newer write.
	for _, c := range []struct {
		result string
		pass   bool
	}{{contract.ResultOKDup, true}, {contract.ResultOK, false}} {
		r := standardCrash(409, "b")
		r.put("row-000", "gen-2-seq-9", 2, "b")
		retry := r.ops[4] // row-000's gen-2-seq-0 again, same Idempotency-Key
		retry.SinkInstance, retry.Result = "b", c.result
		r.add(retry)
		final := map[string]fv{"row-000": {"gen-2-seq-9", 2}, "row-001": {"gen-2-seq-1", 2}}
		wantVerdict(t, judge(t, AckedWritesDurable, r.scenario(final)), c.pass, false, map[bool]string{true: "acknowledged writes", false: "is lost"}[c.pass])
	}

	wantVerdict(t, judge(t, AckedWritesDurable, (&crashRun{}).scenario(nil)), false, true, "nothing to judge")
	missing := standardCrash(409, "b").scenario(correctFinal)
	missing.MissingEvidence(history.EvidenceFinalState, "read failed")
	wantVerdict(t, judge(t, AckedWritesDurable, missing), false, true, "read failed")
}

// Two instance ids: the sink's own history covers the last one only, so
// the checks that read it are INCONCLUSIVE and say why.
func TestSinkRestartMakesSinkHistoryChecksInconclusive(t *testing.T) {
	s := standardCrash(409, "b").scenario(correctFinal)
	for _, c := range All {
		needsSink := false
		for _, n := range c.Needs {
			needsSink = needsSink || n == history.EvidenceSink
		}
		if !needsSink {
			continue
		}
		v := c.Judge(s)
		if v.Status == StatusPass || !strings.Contains(strings.Join(v.Evidence, " "), "the sink restarted during the run") {
			t.Errorf("%s after a sink restart: pass=%v %v", c.Name, v.Status == StatusPass, v.Evidence)
		}
	}
}

func TestOldLeaderStepsDownIgnoresTheProbe(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	s := &history.Scenario{Config: history.Config{DrainTimeout: history.Duration(time.Second)},
		Phases: []history.Phase{{Name: "collect", Start: t0.Add(50 * time.Second), End: t0.Add(50 * time.Second)}},
		Lease: history.LeaseWatch{Start: t0, End: t0.Add(time.Minute), Records: []history.LeaseRecord{
			{Observed: t0, Holder: "p1_aaaaaaaa", Term: 1, TermOK: true, TermRaw: "1"},
			{Observed: t0.Add(time.Second), Holder: "p2_bbbbbbbb", Term: 2, TermOK: true, TermRaw: "2"}}},
		Witness: &record.History{Operations: []record.Operation{{ID: 1, Method: "PUT", Key: "fencecheck-probe", EpochHeader: "1", Epoch: 1,
			Harness: record.HarnessProbe, Invoked: t0.Add(10 * time.Second), Completed: t0.Add(10 * time.Second), Type: record.Fail, Status: 409}}}}
	if v := judge(t, OldLeaderStepsDown, s); v.Status != StatusPass {
		t.Errorf("the harness's probe counted as the old leader's write: %v", v.Evidence)
	}
}
