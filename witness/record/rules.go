package record

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/contract"
)

// Rules on a witness history that the harness's driver and the checks
// share (one rule for both: the driver stamps its sink-crash probe below
// AckedFloor, floor-survives-restart recomputes it).

// AckedFloor is the highest floor the sink acknowledged to any client in
// ops answered before `before` (zero time: all): a fence answered OK, a
// commit (the floor is at least its epoch), or a refusal naming the floor.
// The harness stamps its probe below it; floor-survives-restart recomputes
// it rather than trusting the probe's choice.
func AckedFloor(ops []Operation, before time.Time) (floor uint64, by Operation) {
	for _, o := range ops {
		if o.Completed.IsZero() || (!before.IsZero() && !o.Completed.Before(before)) {
			continue
		}
		f := ackedBy(o)
		if f > floor {
			floor, by = f, o
		}
	}
	return floor, by
}

// ackedBy is the floor one answer acknowledged, 0 if none.
func ackedBy(o Operation) uint64 {
	switch {
	case o.Type == OK && o.Method == contract.MethodPost && o.Path == contract.PathFence && o.Result == contract.ResultOK:
		return max(o.Epoch, o.HighestEpoch)
	case o.Type == OK && o.Method == contract.MethodPut && o.Key != "" && (o.Result == contract.ResultOK || o.Result == contract.ResultOKDup):
		return max(o.ResultEpoch, o.HighestEpoch)
	case o.Type == Fail && o.Result == contract.ResultRejectStale:
		return o.HighestEpoch
	}
	return 0
}

// NotTheSinksAnswer says why a probe's recorded outcome is not the
// restarted sink's answer ("" when it is): no definite answer (not sent,
// or none came), or a status with no contract result in its body. The
// contract answers every request with a result; a bare status (an empty
// 404 seen 0.3 s after a sink came back, at --parallel 3, s16-bench-p3)
// came from something else at the Service's address while its endpoints
// settled. The driver sends such a probe again; floor-survives-restart does
// not judge it.
func NotTheSinksAnswer(op Operation) string {
	switch {
	case op.Completed.IsZero() || op.Type == Info || op.Type == Invoke || (op.Type == Fail && op.Status == 0):
		return fmt.Sprintf("got no definite answer (%s %s)", op.Type, op.Error)
	case op.Result == "":
		return fmt.Sprintf("got %d with no contract result in its body: not the sink's answer", op.Status)
	}
	return ""
}
