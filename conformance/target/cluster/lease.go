package cluster

import (
	"context"

	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// DeleteLease deletes the reconcilers' Lease through the apiserver.
func (d *deployment) DeleteLease(ctx context.Context) (history.ChaosWindow, error) {
	return driver.DeleteLease(ctx, d.t.opt.Kube, d.ns)
}
