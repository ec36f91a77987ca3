package local

import (
	"context"

	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// DeleteLease deletes the reconcilers' Lease in the local apiserver.
func (d *deployment) DeleteLease(ctx context.Context) (history.ChaosWindow, error) {
	w, err := driver.DeleteLease(ctx, d.t.opt.Kube, d.ns)
	w.Node = node
	return w, err
}
