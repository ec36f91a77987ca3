package driver

import (
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/eventlog"
)

func TestNamespaceNames(t *testing.T) {
	dr := &Driver{Config: Config{RunID: "20261130-040000"}}
	for _, d := range scenario.All() {
		ns := dr.Namespace(d)
		if len(ns) > 63 || strings.ToLower(ns) != ns || strings.HasSuffix(ns, "-") {
			t.Errorf("bad namespace %q", ns)
		}
	}
}

// A pod that led term 1 and leads term 3 again (repeated takeovers, one
// process) has term 1's bridge_joined in its log: losing term 3 is not
// accounted for until the join after its last spawn, or the process stops.
func TestSteppedDownIsTheLastBridgesJoin(t *testing.T) {
	ev := func(kind string, epoch uint64) eventlog.Event { return eventlog.Event{Kind: kind, Epoch: epoch} }
	led1 := []eventlog.Event{ev(eventlog.KindBridgeSpawned, 1), ev(eventlog.KindBridgeDrained, 1), ev(eventlog.KindBridgeJoined, 1)}
	leads3 := append(slices.Clone(led1), ev(eventlog.KindAcquired, 3), ev(eventlog.KindBridgeSpawned, 3))
	for _, c := range []struct {
		name string
		log  []eventlog.Event
		want bool
	}{
		{"nothing logged", nil, false},
		{"led term 1 and stepped down", led1, true},
		{"leads term 3 after leading term 1", leads3, false},
		{"term 3's bridge drained, not joined", append(slices.Clone(leads3), ev(eventlog.KindBridgeDrained, 3)), false},
		{"term 3's bridge joined", append(slices.Clone(leads3), ev(eventlog.KindBridgeJoined, 3)), true},
		{"stopped", append(slices.Clone(leads3), ev(eventlog.KindStopped, 0)), true},
	} {
		if got := steppedDown(c.log); got != c.want {
			t.Errorf("%s: steppedDown = %v, want %v", c.name, got, c.want)
		}
	}
}
