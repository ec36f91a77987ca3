package scenario

import (
	"fmt"
	"strconv"
	"time"
)

// Reconciler is how the fixture reconciler runs in a scenario: the zero
// value is the correct fixture, each field one of its broken modes.
type Reconciler struct {
	FencingOff     bool // --fencing=off: no epoch header, no fence call
	IgnoreDemotion bool // --ignore-demotion: keeps writing after losing the Lease
	LiveEpoch      bool // --live-epoch: stamps the live term, not the bridge's snapshot
	NoDrain        bool // --no-drain: drops the bridge's buffer on producer stop
	TermOnRenew    bool // --term-on-renew: the term moves on renew
	NoTermBump     bool // --no-term-bump: a takeover keeps the old term
	// WriteInterval overrides the timing's write interval when set.
	WriteInterval time.Duration
	// BridgeCapacity, when set, is --bridge-capacity: a depth other than
	// the contract's 128 is a broken mode (neg-deep-bridge).
	BridgeCapacity int
	// TermRestartOnRecreate: --term-restart-on-recreate, a re-created Lease starts at term 1.
	TermRestartOnRecreate bool
	// ClockRate: --clock-rate, the lease clock runs slow (0: real time).
	ClockRate float64
	// ReleaseOnCancel: --release-on-cancel, the Lease is released on shutdown after the bridge's join.
	ReleaseOnCancel bool
	// LeadDelay: --lead-delay, a new leader waits before its first write.
	LeadDelay time.Duration
	// SharedKeys: --shared-keys, every term reuses the keys "seq-N" for other values.
	SharedKeys bool
}

// Args renders the knobs as the reconciler's flags.
func (r Reconciler) Args() []string {
	var out []string
	for _, f := range []struct {
		on   bool
		flag string
	}{{r.FencingOff, "--fencing=off"}, {r.IgnoreDemotion, "--ignore-demotion"}, {r.LiveEpoch, "--live-epoch"},
		{r.NoDrain, "--no-drain"}, {r.TermOnRenew, "--term-on-renew"}, {r.NoTermBump, "--no-term-bump"},
		{r.TermRestartOnRecreate, "--term-restart-on-recreate"}, {r.ReleaseOnCancel, "--release-on-cancel"},
		{r.SharedKeys, "--shared-keys"}} {
		if f.on {
			out = append(out, f.flag)
		}
	}
	if r.ClockRate > 0 {
		out = append(out, "--clock-rate="+strconv.FormatFloat(r.ClockRate, 'g', -1, 64))
	}
	if r.LeadDelay > 0 {
		out = append(out, "--lead-delay="+r.LeadDelay.String())
	}
	if r.WriteInterval > 0 {
		out = append(out, "--write-interval="+r.WriteInterval.String())
	}
	if r.BridgeCapacity > 0 {
		out = append(out, fmt.Sprintf("--bridge-capacity=%d", r.BridgeCapacity))
	}
	return out
}

// SinkMode names one of the reference sink's negative-control variants
// (fixtures/sink/broken); "" is the correct sink.
type SinkMode string

const (
	CorrectSink    SinkMode = ""
	UnfencedSink   SinkMode = "unfenced"
	HideCommitSink SinkMode = "hide-commit"
	// MisreportSink records a commit as rejected in its history.
	MisreportSink SinkMode = "misreport"
	// PerKeyFloorSink fences each key against its own last epoch.
	PerKeyFloorSink SinkMode = "per-key-floor"
)

// Sink is how the reference sink runs in a scenario.
type Sink struct {
	Broken SinkMode
}

// Args renders the knobs as the sink's flags.
func (s Sink) Args() []string {
	if s.Broken == CorrectSink {
		return nil
	}
	return []string{"--broken=" + string(s.Broken)}
}
