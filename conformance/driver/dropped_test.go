package driver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

// droppingDeployment is a deployment at rest whose sink says its history
// left attempts out; only what Finish reads is implemented.
type droppingDeployment struct {
	Deployment
	records int
}

func (d *droppingDeployment) Events() EventLog                       { return noEvents{} }
func (d *droppingDeployment) Pods(context.Context) ([]string, error) { return nil, nil }
func (d *droppingDeployment) StopReconcilers(context.Context) error  { return nil }
func (d *droppingDeployment) Witness(context.Context) (*record.History, error) {
	return &record.History{}, nil
}
func (d *droppingDeployment) Sink() Sink                       { return d }
func (d *droppingDeployment) PodIPs() ([]history.PodIP, error) { return nil, nil }
func (d *droppingDeployment) Status(context.Context, string) (json.RawMessage, error) {
	return nil, nil
}

func (d *droppingDeployment) History(context.Context) ([]contract.Attempt, error) {
	return []contract.Attempt{{Seq: 1, Op: contract.OpPut, Key: "k", Epoch: 1, Status: 200, Result: contract.ResultOK, Order: 1}}, DroppedErr(7)
}

func (d *droppingDeployment) Records(_ context.Context, keys []string) ([]contract.Record, error) {
	d.records = len(keys)
	return []contract.Record{{Key: "k", Value: "v", Epoch: 1}}, nil
}

type noEvents struct{}

func (noEvents) Snapshot() map[string][]eventlog.Event                        { return nil }
func (noEvents) Refresh(context.Context, string) error                        { return nil }
func (noEvents) Stop(context.Context) (map[string][]eventlog.Event, []string) { return nil, nil }

// A sink that says it dropped history: the attempts and records are kept,
// the checks that need the sink's history are INCONCLUSIVE and say why,
// and it is no collection error.
func TestDroppedSinkHistoryMakesSinkChecksInconclusive(t *testing.T) {
	dep := &droppingDeployment{}
	s := &Session{dr: &Driver{}, Hist: &history.Scenario{Name: "x"}, dep: dep}
	h, err := s.Finish(context.Background())
	if err != nil || len(h.Errors) != 0 {
		t.Fatalf("finish: %v %v", err, h.Errors)
	}
	if len(h.Attempts) != 1 || dep.records != 1 || len(h.FinalRecords) != 1 {
		t.Fatalf("attempts %v, records read %d, final %v", h.Attempts, dep.records, h.FinalRecords)
	}
	c, _ := check.ByName(check.Idempotency)
	v := c.Judge(h)
	if v.Status == check.StatusPass || v.Status != check.StatusInconclusive || !strings.Contains(strings.Join(v.Evidence, "\n"), "left out 7 attempts") {
		t.Fatalf("idempotency on a dropped history: %+v", v)
	}
	if !isDropped(DroppedErr(1)) || DroppedErr(0) != nil {
		t.Fatal("DroppedErr")
	}
}
