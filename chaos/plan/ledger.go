package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// The node ledger is the agent's record, kept on the node itself (a
// hostPath under /run), of every cut it installed: which object asked, with
// which spec, until when. The agent writes an entry before it installs a
// rule, so whatever it installed is in the ledger; its heal loop reads only
// the ledger and the clock, so an expired cut heals with the apiserver
// unreachable, before the informers sync, and after a restart.

// Part is one object's contribution to one target (a network namespace's
// routes, or a frozen cgroup).
type Part struct {
	Chaos       string    `json:"chaos"` // "namespace/name"
	UID         string    `json:"uid"`
	Fingerprint string    `json:"fingerprint"`
	Deadline    time.Time `json:"deadline"`
	Routes      []Route   `json:"routes,omitempty"`
}

// Entry is the ledger record of one target on the node.
type Entry struct {
	// Path is the network namespace (or, for a pause, the cgroup directory).
	Path string `json:"path"`
	// Kind is KindRoutes or KindFreeze.
	Kind  string `json:"kind,omitempty"`
	Parts []Part `json:"parts"`
}

// Entry kinds: routes in a network namespace, or a frozen cgroup.
const (
	KindRoutes = ""
	KindFreeze = "freeze"
)

// Live returns the routes of the parts whose deadline is after now, and
// the earliest deadline still ahead (zero when none).
func (e Entry) Live(now time.Time) (routes []Route, next time.Time) {
	for _, p := range e.Parts {
		if !now.Before(p.Deadline) {
			continue
		}
		routes = MergeRoutes(routes, p.Routes)
		if next.IsZero() || p.Deadline.Before(next) {
			next = p.Deadline
		}
	}
	return routes, next
}

// Injection is what the ledger remembers of an object's first injection.
type Injection struct {
	Kind        string    `json:"kind,omitempty"`
	Fingerprint string    `json:"fingerprint"`
	Deadline    time.Time `json:"deadline"`
}

// Injections indexes the ledger's parts by object UID (the earliest
// deadline wins if entries disagree).
func Injections(entries []Entry) map[string]Injection {
	out := map[string]Injection{}
	for _, e := range entries {
		for _, p := range e.Parts {
			if cur, ok := out[p.UID]; !ok || p.Deadline.Before(cur.Deadline) {
				out[p.UID] = Injection{Kind: e.Kind, Fingerprint: p.Fingerprint, Deadline: p.Deadline}
			}
		}
	}
	return out
}

// Fingerprint identifies what an object asks for: its spec and the
// annotations the agent reads. An edit after injection changes it.
func Fingerprint(spec any, annotations map[string]string, keys ...string) string {
	h := sha256.New()
	b, _ := json.Marshal(spec)
	h.Write(b)
	for _, k := range keys {
		h.Write([]byte("\x00" + k + "=" + annotations[k]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// EffectiveDeadline is an object's deadline: from its creation and
// duration, but never later than the one recorded at its first injection
// (an edit cannot extend a live cut).
func EffectiveDeadline(computed time.Time, inj Injection, injected bool) time.Time {
	if injected && inj.Deadline.Before(computed) {
		return inj.Deadline
	}
	return computed
}
