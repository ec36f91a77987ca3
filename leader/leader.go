// Package leader holds the names and rules of the fixture's leader election
// that the reconciler, the chaos executor and the conformance checks share:
// the Lease, its term annotation, the holder identity and client-go's timing
// rule. It is pure: no client, no I/O.
package leader

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// LeaseName is the Lease the fixture reconciler holds.
const LeaseName = "fencecheck-reconciler"

// TermAnnotation is the Lease annotation that carries the leader term (the
// fencing epoch).
const TermAnnotation = "camel.io/leader-term"

// JitterFactor is client-go's leaderelection.JitterFactor: a candidate waits
// between RetryPeriod and RetryPeriod*(1+JitterFactor) between tries.
const JitterFactor = 1.2

// suffixLen is the length of the hex suffix of an identity.
const suffixLen = 8

// NewIdentity returns "<pod>_<8 hex>". The suffix makes each process a new
// holder, so a restarted pod is not mistaken for the leader it replaced.
func NewIdentity(pod string, suffix uint32) string {
	return fmt.Sprintf("%s_%0*x", pod, suffixLen, suffix)
}

// ValidateTiming applies client-go's rule (it panics on a violation):
// renewDeadline < leaseDuration, renewDeadline > JitterFactor*retryPeriod,
// retryPeriod > 0. The errors name the flags to change.
func ValidateTiming(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	var errs []error
	if renewDeadline >= leaseDuration {
		errs = append(errs, fmt.Errorf("--renew-deadline %v must be shorter than --lease-duration %v: a leader must give up before its lease can be taken", renewDeadline, leaseDuration))
	}
	if retryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--retry-period %v must be positive", retryPeriod))
	} else if float64(renewDeadline) <= JitterFactor*float64(retryPeriod) {
		errs = append(errs, fmt.Errorf("--renew-deadline %v must be more than %vx --retry-period %v", renewDeadline, JitterFactor, retryPeriod))
	}
	return errors.Join(errs...)
}

// HolderPod names the pod a Lease holder identity belongs to, by the
// contract's rule (docs/controller-contract.md, MUST 1): the identity is
// "<pod>_<suffix>" with any non-empty suffix, or the pod alone. known
// maps each name an identity may start with to its pod: the scenario's
// pod names (each to itself) and, if the caller wants them, the pods'
// addresses (each to its pod). The longest known name that the identity
// equals, or that is followed by '_' in it, wins; an identity that names
// no known pod is an error naming it and the pods, never a guess.
//
// It needs no suffix convention: "pod_1" is pod's identity when pod is
// known.
func HolderPod(identity string, known map[string]string) (string, error) {
	best := ""
	for name := range known {
		if name == "" || len(name) <= len(best) {
			continue
		}
		if identity == name || (strings.HasPrefix(identity, name) && identity[len(name)] == '_') {
			best = name
		}
	}
	if best != "" {
		return known[best], nil
	}
	pods := map[string]bool{}
	for _, p := range known {
		pods[p] = true
	}
	names := make([]string, 0, len(pods))
	for p := range pods {
		names = append(names, p)
	}
	sort.Strings(names)
	return "", fmt.Errorf("the Lease holder %q names none of the scenario's pods [%s]: a holder identity must be <pod name>_<suffix> (docs/controller-contract.md, MUST 1)",
		identity, strings.Join(names, " "))
}
