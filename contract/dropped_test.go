package contract

import "testing"

func TestParseHistoryDropped(t *testing.T) {
	for v, want := range map[string]uint64{"": 0, "0": 0, "12": 12} {
		if got, err := ParseHistoryDropped(v); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"-1", "x", "1.5"} {
		if _, err := ParseHistoryDropped(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
