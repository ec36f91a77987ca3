package driver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// probingDeployment answers the harness's probes with the outcomes given,
// one per probe, and records the gate's moves; only what crashSink uses is
// implemented.
type probingDeployment struct {
	Deployment
	answers []record.Operation
	probes  int
	gate    []bool // each gate request's Closed
}

func (d *probingDeployment) CrashSink(context.Context) (history.ChaosWindow, error) {
	now := time.Now()
	return history.ChaosWindow{Kind: history.ChaosSinkCrash, Pod: "sink", Injected: now, Recovered: now}, nil
}

func (d *probingDeployment) WitnessAdmin(_ context.Context, path string, req, resp any) error {
	switch path {
	case record.PathGate:
		d.gate = append(d.gate, req.(record.GateRequest).Closed)
		return nil
	case record.PathProbe:
		op := d.answers[min(d.probes, len(d.answers)-1)]
		op.ID = uint64(d.probes + 1)
		op.Invoked, op.Completed = time.Now(), time.Now()
		d.probes++
		b, _ := json.Marshal(op)
		return json.Unmarshal(b, resp)
	}
	return nil
}

// A probe answered with a bare status (no contract result: not the
// sink) is sent again, with the gate still closed, until the sink itself
// answers; a contract answer ends the wait, and the gate opens after it.
func TestCrashSinkProbesAgainPastABareStatus(t *testing.T) {
	stale := record.Operation{Type: record.Fail, Status: 409, Result: contract.ResultRejectStale, SinkInstance: "b"}
	for _, tc := range []struct {
		name    string
		answers []record.Operation
		probes  int
	}{
		{"the sink at once", []record.Operation{stale}, 1},
		{"refused, then the sink", []record.Operation{{Type: record.Fail, Error: "connection refused"}, stale}, 2},
		{"a bare 404, then the sink", []record.Operation{{Type: record.Fail, Status: 404}, stale}, 2},
		{"no answer, a bare 503, then a commit", []record.Operation{{Type: record.Info, Error: "timeout"}, {Type: record.Info, Status: 503},
			{Type: record.OK, Status: 200, Result: contract.ResultOK, SinkInstance: "b"}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep := &probingDeployment{answers: tc.answers}
			s := &Session{dr: &Driver{Config: Config{WaitTimeout: 10 * time.Second}}, Hist: &history.Scenario{Name: "x"}, dep: dep}
			if err := s.crashSink(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
			if dep.probes != tc.probes {
				t.Errorf("%d probes sent, want %d", dep.probes, tc.probes)
			}
			if len(dep.gate) != 2 || !dep.gate[0] || dep.gate[1] {
				t.Errorf("gate requests %v, want closed then open", dep.gate)
			}
		})
	}
}
