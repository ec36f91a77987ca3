package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// sink reads the scenario's sink through the apiserver's service proxy,
// which reaches it whatever the partitions cut.
type sink struct{ d *deployment }

func (s sink) History(ctx context.Context) ([]contract.Attempt, error) {
	as, dropped, err := collect.SinkHistory(ctx, s.d.t.opt.Kube, s.d.ns, SinkService, SinkPort, s.d.adminToken)
	if err != nil {
		return as, err
	}
	return as, driver.DroppedErr(dropped)
}

func (s sink) Records(ctx context.Context, keys []string) ([]contract.Record, error) {
	return collect.SinkRecords(ctx, s.d.t.opt.Kube, s.d.ns, SinkService, SinkPort, s.d.adminToken, keys)
}

// Witness reads the witness's history through the service proxy, on its
// admin port (never the one the reconcilers write to).
func (d *deployment) Witness(ctx context.Context) (*record.History, error) {
	b, err := d.t.opt.Kube.CoreV1().Services(d.ns).ProxyGet("http", WitnessService, WitnessAdminPort, record.PathHistory, nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("witness history via %s/%s:%s: %w", d.ns, WitnessService, WitnessAdminPort, err)
	}
	var h record.History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("witness history: bad body: %w", err)
	}
	return &h, nil
}
