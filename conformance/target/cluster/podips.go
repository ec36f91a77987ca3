package cluster

import (
	"errors"
	"strings"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// PodIPs ends the pod IP watch and returns what it recorded
// (driver.PodAddresses); a stretch it could not watch is an error, so the
// checks that attribute requests say why they cannot.
func (d *deployment) PodIPs() ([]history.PodIP, error) {
	ips, problems := d.ips.Stop()
	if len(problems) > 0 {
		return ips, errors.New("pod IP watch: " + strings.Join(problems, "; "))
	}
	return ips, nil
}
