package eventlog

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEmitParseRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, "pod-a", "pod-a_0123abcd")
	t0 := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	w.Now = func() time.Time { return t0 }
	yes := true
	w.Emit(Event{Kind: KindAcquired, Epoch: 2})
	buf.WriteString("plain log line, not an event\n")
	w.Emit(Event{Kind: KindBridgeJoined, JoinedInTime: &yes, DurationMs: 1.5})

	got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("parsed %d events, want 2: %+v", len(got), got)
	}
	if got[0].Kind != KindAcquired || got[0].Epoch != 2 || got[0].Pod != "pod-a" || got[0].Identity != "pod-a_0123abcd" || !got[0].Time.Equal(t0) {
		t.Errorf("event 0 = %+v", got[0])
	}
	if got[1].JoinedInTime == nil || !*got[1].JoinedInTime {
		t.Errorf("event 1 lost joined_in_time: %+v", got[1])
	}
}

func TestParseFindsMarkerAfterPrefix(t *testing.T) {
	// kubectl logs --timestamps puts a timestamp before the line.
	in := "2026-04-02T10:00:00Z " + Marker + `{"kind":"lost","epoch":3}` + "\n"
	got, err := Parse(strings.NewReader(in))
	if err != nil || len(got) != 1 || got[0].Kind != KindLost || got[0].Epoch != 3 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestParseRejectsDamagedEvent(t *testing.T) {
	in := Marker + `{"kind":"write"` + "\n"
	_, err := Parse(strings.NewReader("x\n" + in))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Fatalf("want a ParseError on line 2, got %v", err)
	}
}
