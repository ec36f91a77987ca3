package history

import "time"

// EvidencePodIPs is the harness's record of which address each reconciler
// pod sent from (the witness records addresses, not pods).
const EvidencePodIPs = "pod-ips"

// PodIP is one address a reconciler pod held, from the API (the cluster's
// pod status) or from the local target's own dialer: what the witness's
// source addresses are mapped back to. To is zero while it was still held
// when the recording ended.
type PodIP struct {
	Pod  string    `json:"pod"`
	IP   string    `json:"ip"`
	From time.Time `json:"from"`
	To   time.Time `json:"to,omitzero"`
}

// Holds reports whether the address was held at t.
func (p PodIP) Holds(t time.Time) bool {
	return !t.Before(p.From) && (p.To.IsZero() || !t.After(p.To))
}
