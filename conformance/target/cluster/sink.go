package cluster

import (
	"context"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/contract"
)

// sink reads the scenario's sink through the apiserver's service proxy,
// which reaches it whatever the partitions cut.
type sink struct{ d *deployment }

func (s sink) History(ctx context.Context) ([]contract.Attempt, error) {
	return collect.SinkHistory(ctx, s.d.t.opt.Kube, s.d.ns, SinkService, SinkPort)
}

func (s sink) Records(ctx context.Context, keys []string) ([]contract.Record, error) {
	return collect.SinkRecords(ctx, s.d.t.opt.Kube, s.d.ns, SinkService, SinkPort, keys)
}
