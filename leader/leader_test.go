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

func TestPodOf(t *testing.T) {
	for id, want := range map[string]string{
		"reconciler-7d9f-abcde_0a1b2c3d": "reconciler-7d9f-abcde",
		"my_pod_0a1b2c3d":                "my_pod",        // the split is at the last '_'
		"a_0a1b2c3d_0a1b2c3d":            "a_0a1b2c3d",    // only one suffix comes off
		"reconciler":                     "reconciler",    // no '_'
		"_0a1b2c3d":                      "_0a1b2c3d",     // '_' at start: no pod
		"pod_0A1B2C3D":                   "pod_0A1B2C3D",  // upper case is not what NewIdentity writes
		"pod_0a1b2c3g":                   "pod_0a1b2c3g",  // not hex
		"pod_0a1b2c3":                    "pod_0a1b2c3",   // 7 digits
		"pod_0a1b2c3d4":                  "pod_0a1b2c3d4", // 9 digits
		"pod-0a1b2c3d":                   "pod-0a1b2c3d",  // no '_' before the suffix
		"pod_":                           "pod_",          // empty suffix
		"":                               "",              // empty
		"x_0a1b2c3d":                     "x",             // shortest valid
		"manager-6c8f-x2x9q_3f2b1c9e-8d7a-4b6c-9e5f-0a1b2c3d4e5f": "manager-6c8f-x2x9q",                     // controller-runtime's hostname_uuid
		"m_3F2B1C9E-8D7A-4B6C-9E5F-0A1B2C3D4E5F":                  "m_3F2B1C9E-8D7A-4B6C-9E5F-0A1B2C3D4E5F", // not what uuid.NewUUID writes
		"m_3f2b1c9e8d7a-4b6c-9e5f-0a1b2c3d4e5f0":                  "m_3f2b1c9e8d7a-4b6c-9e5f-0a1b2c3d4e5f0", // dashes misplaced
	} {
		if got := PodOf(id); got != want {
			t.Errorf("PodOf(%q) = %q, want %q", id, got, want)
		}
	}
	if id := NewIdentity("my_pod", 7); PodOf(id) != "my_pod" {
		t.Errorf("PodOf(NewIdentity) = %q", PodOf(id))
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
