package leader

import (
	"strings"
	"testing"
	"time"
)

func TestNewIdentity(t *testing.T) {
	for suffix, want := range map[uint32]string{0xdeadbeef: "p_deadbeef", 0x2a: "p_0000002a", 0: "p_00000000"} {
		if got := NewIdentity("p", suffix); got != want {
			t.Errorf("NewIdentity(p, %#x) = %q, want %q", suffix, got, want)
		}
	}
}

func TestValidateTiming(t *testing.T) {
	s := time.Second
	if err := ValidateTiming(15*s, 10*s, 2*s); err != nil {
		t.Fatalf("client-go defaults rejected: %v", err)
	}
	for want, c := range map[string][3]time.Duration{
		"--lease-duration": {10 * s, 10 * s, 2 * s},
		"--retry-period":   {15 * s, 10 * s, 0},
		"1.2x":             {15 * s, 12 * s, 10 * s}, // exactly 1.2x is not enough
	} {
		err := ValidateTiming(c[0], c[1], c[2])
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: got %v, want an error naming %s", c, err, want)
		}
	}
}

func TestHolderPod(t *testing.T) {
	known := map[string]string{
		"ctrl-5d8f-abcde": "ctrl-5d8f-abcde", "ctrl-5d8f-abcde-x": "ctrl-5d8f-abcde-x", "my_pod": "my_pod",
		"10.244.1.5": "ctrl-5d8f-fghij",
	}
	for id, want := range map[string]string{
		"ctrl-5d8f-abcde_1":          "ctrl-5d8f-abcde", // a suffix PodOf does not know
		"ctrl-5d8f-abcde_0a1b2c3d":   "ctrl-5d8f-abcde",
		"ctrl-5d8f-abcde":            "ctrl-5d8f-abcde", // the pod alone
		"ctrl-5d8f-abcde-x_7":        "ctrl-5d8f-abcde-x",
		"my_pod_2":                   "my_pod", // an underscore in the pod's name
		"10.244.1.5_3f2b":            "ctrl-5d8f-fghij",
		"ctrl-5d8f-abcde_a_b":        "ctrl-5d8f-abcde",
		"ctrl-5d8f-abcde-x_ctrl-xyz": "ctrl-5d8f-abcde-x", // the longest name wins
	} {
		if got, err := HolderPod(id, known); got != want || err != nil {
			t.Errorf("HolderPod(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for _, id := range []string{"ctrl-5d8f-abcdef_1", "ctrl-5d8f", "ctrl-5d8f-abcde-1", "", "other_1"} {
		if got, err := HolderPod(id, known); err == nil || !strings.Contains(err.Error(), "ctrl-5d8f-fghij") || !strings.Contains(err.Error(), "MUST 1") {
			t.Errorf("HolderPod(%q) = %q, %v; want an error naming the pods and MUST 1", id, got, err)
		}
	}
}
