// Package leader holds the names and rules of the fixture's leader election
// that the reconciler, the chaos executor and the conformance checks share:
// the Lease, its term annotation, the holder identity and client-go's timing
// rule. It is pure: no client, no I/O.
package leader

import (
	"errors"
	"fmt"
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

// PodOf is the pod part of an identity made by NewIdentity: everything before
// the last '_' when what follows is 8 lowercase hex digits and what precedes
// is not empty. Any other string is returned as it is, so a holder that did
// not follow the convention still names itself.
//
// A "_<uuid>" suffix (36 characters, lowercase hex in 8-4-4-4-12) comes off
// too: it is what controller-runtime's default lock appends to the hostname,
// so a controller we did not write still names its pod.
func PodOf(identity string) string {
	if i := len(identity) - uuidLen - 1; i > 0 && identity[i] == '_' && isUUID(identity[i+1:]) {
		return identity[:i]
	}
	i := len(identity) - suffixLen - 1
	if i <= 0 || identity[i] != '_' || !isHex(identity[i+1:]) {
		return identity
	}
	return identity[:i]
}

// uuidLen is the length of a canonical UUID.
const uuidLen = 36

func isUUID(s string) bool {
	if len(s) != uuidLen {
		return false
	}
	for i, c := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
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
