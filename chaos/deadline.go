package chaos

import (
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
)

// Deadline is when nc heals: creationTimestamp rounded up to the second,
// plus spec.duration (see plan.Deadline). The agent enforces it.
func Deadline(nc *v1alpha1.NetworkChaos) (time.Time, error) { return plan.Deadline(nc) }
