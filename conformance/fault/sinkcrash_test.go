package fault

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/witness/record"
)

// probingEnv is a scenario whose deployment answers the harness's probes
// with the outcomes given, one per probe, and records the gate's moves;
// only what crashSink uses is implemented (the rest panics).
type probingEnv struct {
	Env
	Actions
	windows []history.ChaosWindow
}

func (e *probingEnv) Act() Actions                 { return e.Actions }
func (e *probingEnv) Logf(string, ...any)          {}
func (e *probingEnv) Record(w history.ChaosWindow) { e.windows = append(e.windows, w) }
func (e *probingEnv) Poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	return wait.Poll(ctx, 10*time.Second, what, cond)
}

type probingDeployment struct {
	Actions
	answers []record.Operation
	probes  int
	gate    []bool // each gate request's Closed
}

func (d *probingDeployment) CrashSink(context.Context) (history.ChaosWindow, error) {
	now := time.Now()
	return history.ChaosWindow{Pod: "sink", Injected: now, Recovered: now}, nil
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
			e := &probingEnv{Actions: dep}
			if err := crashSink(context.Background(), e, 2); err != nil {
				t.Fatal(err)
			}
			if len(e.windows) != 1 || e.windows[0].Kind != string(SinkCrash) {
				t.Errorf("windows recorded %+v, want the one sink crash", e.windows)
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
