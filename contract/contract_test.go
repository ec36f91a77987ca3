package contract

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestParseEpoch(t *testing.T) {
	good := map[string]uint64{"0": 0, "1": 1, "007": 7, "18446744073709551615": 1<<64 - 1}
	for in, want := range good {
		got, err := ParseEpoch(in)
		if err != nil || got != want {
			t.Errorf("ParseEpoch(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := []string{"-1", "+1", " 1", "1 ", "0x10", "1e3", "18446744073709551616", "99999999999999999999999", "１", "1.0"}
	for _, in := range bad {
		if _, err := ParseEpoch(in); !errors.Is(err, ErrEpochMalformed) {
			t.Errorf("ParseEpoch(%q) err = %v; want ErrEpochMalformed", in, err)
		}
	}
	if _, err := ParseEpoch(""); !errors.Is(err, ErrEpochMissing) {
		t.Errorf("empty epoch: err = %v; want ErrEpochMissing", err)
	}
}

func TestFormatEpochRoundTrip(t *testing.T) {
	for _, e := range []uint64{0, 1, 42, 1<<64 - 1} {
		got, err := ParseEpoch(FormatEpoch(e))
		if err != nil || got != e {
			t.Errorf("round trip %d: got %d, %v", e, got, err)
		}
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	ok := []string{"a", "r-001", strings.Repeat("x", 255), " ~!"}
	for _, k := range ok {
		if err := ValidIdempotencyKey(k); err != nil {
			t.Errorf("%q rejected: %v", k, err)
		}
	}
	bad := []string{"", strings.Repeat("x", 256), "a\nb", "tab\t", "é", "\x7f"}
	for _, k := range bad {
		if err := ValidIdempotencyKey(k); err == nil {
			t.Errorf("%q accepted", k)
		}
	}
}

func TestAttemptCommitted(t *testing.T) {
	cases := []struct {
		a    Attempt
		want bool
	}{
		{Attempt{Op: OpPut, Result: ResultOK}, true},
		{Attempt{Op: OpPut, Result: ResultOKDup}, false},
		{Attempt{Op: OpPut, Result: ResultRejectStale}, false},
		{Attempt{Op: OpFence, Result: ResultOK}, false},
	}
	for _, c := range cases {
		if got := c.a.Committed(); got != c.want {
			t.Errorf("%+v.Committed() = %v, want %v", c.a, got, c.want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for result, want := range map[string]int{ResultOK: http.StatusOK, ResultOKDup: http.StatusOK, ResultRejectStale: http.StatusConflict,
		ResultConflict: http.StatusUnprocessableEntity, ResultBadRequest: http.StatusBadRequest} {
		if got := StatusOf(result); got != want {
			t.Errorf("StatusOf(%s) = %d, want %d", result, got, want)
		}
	}
}
