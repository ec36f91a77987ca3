package driver

import (
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/contract"
)

// HistoryDropped is what a Sink's History returns, with the attempts it
// read, when the sink says it left attempts out (contract's
// HeaderHistoryDropped): the history is evidence, but incomplete.
type HistoryDropped struct{ N uint64 }

func (e *HistoryDropped) Error() string {
	return fmt.Sprintf("the sink's history left out %d attempts past its limit (%s: %d)", e.N, contract.HeaderHistoryDropped, e.N)
}

// DroppedErr is nil for a complete history, a *HistoryDropped otherwise.
func DroppedErr(n uint64) error {
	if n == 0 {
		return nil
	}
	return &HistoryDropped{N: n}
}

// isDropped: err says only that the history is incomplete (the attempts
// read are still good to wait on).
func isDropped(err error) bool {
	var d *HistoryDropped
	return errors.As(err, &d)
}
