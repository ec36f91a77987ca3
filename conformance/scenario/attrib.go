package scenario

import (
	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
)

// The bridge's controls judged from the witness: what it saw each pod
// send, not what the reconciler counts about itself.
func init() {
	register(func() []Def {
		return []Def{
			{
				Name:        "neg-no-drain-witnessed",
				Description: "negative control: --no-drain with the sink path intact: the reconciler's bridge drops its buffer when the producer stops, and the witness never sees the dropped seqs",
				Fault:       fault.Partition,
				Reconciler:  Reconciler{NoDrain: true},
				Expect:      control(check.BridgeDrain),
			},
			{
				Name:        "neg-deep-bridge",
				Description: "negative control: --bridge-capacity=512: the producer runs 512 writes ahead of what the witness saw, not the contract's 128",
				Fault:       fault.Partition,
				Reconciler:  Reconciler{BridgeCapacity: 512},
				Expect:      control(check.BridgeCapacity),
			},
		}
	})
}
