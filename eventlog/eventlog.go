// Package eventlog is the structured event log of the fenced reconciler:
// one JSON object per line on stdout, prefixed by Marker so the harness can
// pick events out of `kubectl logs` among other output. The conformance
// suite reads these events to check the bridge limits and to time failovers.
package eventlog

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// Marker starts every event line.
const Marker = "FCEVENT "

// Event kinds.
const (
	KindStarted       = "started"        // process up; Detail holds flags
	KindJitter        = "jitter"         // measured apiserver round-trip jitter; DurationMs, Detail
	KindAcquired      = "acquired"       // became leader with Epoch
	KindLost          = "lost"           // stopped leading (Epoch it held)
	KindFence         = "fence"          // POST /v1/fence sent; Result, Status
	KindWrite         = "write"          // one write attempt, logged when answered; Key, Value, IdempotencyKey, Epoch, Result, Status, DurationMs (round trip)
	KindBridgeSpawned = "bridge_spawned" // bridge started with snapshot Epoch, Capacity
	KindBridgeDrained = "bridge_drained" // producer stopped, buffer drained; Count, DurationMs
	KindBridgeAborted = "bridge_aborted" // parent cancelled; Count = dropped, DurationMs
	KindBridgeJoined  = "bridge_joined"  // stop path awaited the join; JoinedInTime, DurationMs, DrainTimeoutMs
	KindStopped       = "stopped"        // process exiting
)

// Event is one line of the log. Fields unused by a kind are left empty.
type Event struct {
	Time           time.Time `json:"time"`
	Pod            string    `json:"pod"`
	Identity       string    `json:"identity"`
	Kind           string    `json:"kind"`
	Epoch          uint64    `json:"epoch,omitempty"`
	Key            string    `json:"key,omitempty"`
	Value          string    `json:"value,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Result         string    `json:"result,omitempty"`
	Status         int       `json:"status,omitempty"`
	Capacity       int       `json:"capacity,omitempty"`
	Count          int       `json:"count,omitempty"`
	DurationMs     float64   `json:"duration_ms,omitempty"`
	DrainTimeoutMs float64   `json:"drain_timeout_ms,omitempty"`
	JoinedInTime   *bool     `json:"joined_in_time,omitempty"`
	Detail         string    `json:"detail,omitempty"`
	Error          string    `json:"error,omitempty"`
}

// Writer emits events as marked JSON lines; safe for concurrent use.
type Writer struct {
	mu       sync.Mutex
	w        io.Writer
	Pod      string
	Identity string
	Now      func() time.Time // nil means time.Now
}

// NewWriter returns a Writer that stamps pod and identity on every event.
func NewWriter(w io.Writer, pod, identity string) *Writer {
	return &Writer{w: w, Pod: pod, Identity: identity}
}

// Emit writes one event, filling Time, Pod and Identity when empty.
func (w *Writer) Emit(e Event) {
	if e.Time.IsZero() {
		if w.Now != nil {
			e.Time = w.Now()
		} else {
			e.Time = time.Now()
		}
	}
	if e.Pod == "" {
		e.Pod = w.Pod
	}
	if e.Identity == "" {
		e.Identity = w.Identity
	}
	b, _ := json.Marshal(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.w.Write(append(append([]byte(Marker), b...), '\n'))
}

// Parse reads every marked line from r and skips the rest (plain log
// output). A marked line that is not valid JSON is an error: the log is
// evidence, and a damaged record must not be dropped silently.
func Parse(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		i := strings.Index(s, Marker)
		if i < 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(s[i+len(Marker):]), &e); err != nil {
			return out, &ParseError{Line: line, Err: err}
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// ParseError names the line of a damaged event.
type ParseError struct {
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	return "eventlog: line " + itoa(e.Line) + ": " + e.Err.Error()
}
func (e *ParseError) Unwrap() error { return e.Err }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
