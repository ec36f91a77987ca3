package local

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// addrOf gives pod a loopback address of its own, 127.1.x.y, that its sink
// proxy dials the witness from, and records it: the witness sees each
// process at its own source address, as it sees each pod at its pod IP on
// the cluster. Addresses are never reused within a scenario.
func (d *deployment) addrOf(pod string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.podIPs) + 1
	ip := fmt.Sprintf("127.1.%d.%d", n/250, n%250+1)
	d.podIPs = append(d.podIPs, history.PodIP{Pod: pod, IP: ip, From: time.Now()})
	return ip
}

// PodIPs is every address a reconciler sent from (driver.PodAddresses).
func (d *deployment) PodIPs() ([]history.PodIP, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]history.PodIP(nil), d.podIPs...), nil
}
