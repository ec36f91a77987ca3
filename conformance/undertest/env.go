// Package undertest is what the suite asks of a user's controller
// directory (make conformance CONTROLLER=DIR; docs/controller-contract.md):
// the FENCECHECK_* variables it gives the controller, the ${FENCECHECK_...}
// placeholders it substitutes, how it reads the directory (Read, shared
// with the cluster target), and the checks `fencecheck controller-check`
// runs on it before any cluster time (Check). It reads files and talks to
// no cluster.
package undertest

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/leader"
)

// Environment variables the suite gives a controller.
const (
	EnvNamespace      = "FENCECHECK_NAMESPACE"
	EnvLeaseName      = "FENCECHECK_LEASE_NAME"
	EnvTermAnnotation = "FENCECHECK_TERM_ANNOTATION"
	EnvSinkURL        = "FENCECHECK_SINK_URL"
	// EnvPodName is the pod's name (downward API): an env entry only, no
	// ${...} placeholder (the name is known only once the pod exists).
	EnvPodName = "FENCECHECK_POD_NAME"
	// EnvSinkTokenFile names the file with the sink's writer token, mounted
	// into every container (not init containers) and added after the
	// container's own env.
	EnvSinkTokenFile = "FENCECHECK_SINK_TOKEN_FILE"

	EnvLeaseDuration = "FENCECHECK_LEASE_DURATION"
	EnvRenewDeadline = "FENCECHECK_RENEW_DEADLINE"
	EnvRetryPeriod   = "FENCECHECK_RETRY_PERIOD"
	EnvDrainTimeout  = "FENCECHECK_DRAIN_TIMEOUT"
	EnvWriteInterval = "FENCECHECK_WRITE_INTERVAL"
)

// TimingEnv maps the fixture's timing flags to their variables: the only
// flags a scenario may give a user's controller (a scenario that needs one
// of the fixture's broken modes runs on the fixture).
var TimingEnv = map[string]string{
	"lease-duration": EnvLeaseDuration, "renew-deadline": EnvRenewDeadline,
	"retry-period": EnvRetryPeriod, "drain-timeout": EnvDrainTimeout,
	"write-interval": EnvWriteInterval,
}

// UnderTestLabel marks the pods of a user's controller: the suite adds
// it to the pod template (the controller's own labels and selector are
// left alone), selects the pods by it, and the witness's NetworkPolicy
// admits the pods that carry it.
const (
	UnderTestLabel    = "fencecheck.io/under-test"
	UnderTestValue    = "controller"
	UnderTestSelector = UnderTestLabel + "=" + UnderTestValue
)

// Vars are the FENCECHECK_* values for a scenario namespace ns, the sink
// URL the controller writes to, and the flags the scenario would give our
// fixture: only timing flags are allowed. These are the names a ${...}
// placeholder may use; the container env gets them too, with EnvPodName
// and EnvSinkTokenFile.
func Vars(ns, sinkURL string, reconcilerArgs []string) (map[string]string, error) {
	vars := map[string]string{EnvNamespace: ns, EnvLeaseName: leader.LeaseName, EnvTermAnnotation: leader.TermAnnotation, EnvSinkURL: sinkURL}
	for _, a := range reconcilerArgs {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		env, known := TimingEnv[name]
		if !ok || !known {
			return nil, fmt.Errorf("flag %s has no FENCECHECK_* equivalent: a scenario that needs the fixture's modes cannot run on a user's controller", a)
		}
		vars[env] = value // the last flag wins, as for the fixture
	}
	return vars, nil
}
