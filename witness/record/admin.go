package record

import "time"

// The witness's admin paths and requests (its history, the sink-crash
// nemesis's gate and probe, see witness/crash.go, the run-time nemesis),
// here so the harness speaks them without importing the proxy.

// Admin paths (on the witness's admin listener, which is never the
// proxied one: no forwarded request can collide with them).
const (
	// PathHistory: GET, answers the witness's History.
	PathHistory = "/v1/witness/history"
	// PathGate: POST GateRequest, answers GateState.
	PathGate = "/v1/witness/gate"
	// PathProbe: POST ProbeRequest; the witness sends the write upstream
	// past the gate, records it as harness traffic (Harness set to
	// HarnessProbe), and answers the recorded Operation (200 whatever the
	// sink said).
	PathProbe = "/v1/witness/probe"
	// PathNemesis: POST NemesisRequest, answers NemesisState (409 when the
	// witness runs without --nemesis-runtime, or the request cannot apply).
	PathNemesis = "/v1/witness/nemesis"
)

// NemesisRequest changes the witness's nemesis while it runs.
type NemesisRequest struct {
	// Hold arms a hold now: every write of an epoch at most the highest
	// committed so far is held until a higher fence arrives (one at a time).
	Hold bool `json:"hold,omitempty"`
	// LoseEvery, if set, is the new rate of lost answers (0: none).
	LoseEvery *int `json:"lose_every,omitempty"`
	// Slow, if set, delays every answer from now on (a zero Max: none).
	Slow *SlowRequest `json:"slow,omitempty"`
}

// SlowRequest makes the witness a slow sink: it holds each answer back
// for a delay drawn from [0, Max] by a PRNG seeded with Seed, so a run
// replays the same delays in the same order.
type SlowRequest struct {
	Max  time.Duration `json:"max_ns"`
	Seed uint64        `json:"seed"`
}

// NemesisState is the nemesis after a NemesisRequest.
type NemesisState struct {
	Holding   bool   `json:"holding"`
	HoldEpoch uint64 `json:"hold_epoch,omitempty"`
	LoseEvery int    `json:"lose_every"`
	FreshOK   int    `json:"fresh_ok"` // PUTs answered with a fresh OK so far
	// SlowMax is the longest delay of an answer (0: answers are not slowed).
	SlowMax time.Duration `json:"slow_max_ns,omitempty"`
}

// GateRequest closes (with a reason the refused operations carry) or opens
// the gate that refuses client requests while the harness restarts the sink.
type GateRequest struct {
	Closed bool   `json:"closed"`
	Reason string `json:"reason,omitempty"`
}

// GateState is the gate after a GateRequest.
type GateState struct {
	Closed bool `json:"closed"`
	// Refused counts the client requests refused since the witness started.
	Refused uint64 `json:"refused"`
}

// ProbeRequest is one write the harness sends through the witness.
type ProbeRequest struct {
	Key            string `json:"key"`
	Value          string `json:"value"`
	Epoch          uint64 `json:"epoch"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Authorization, if set, is sent upstream as the Authorization header
	// (the sink's writer token: "Bearer <token>"). It travels in the body
	// because an apiserver's service proxy, the admin port's way in on a
	// cluster, consumes the Authorization header itself. It is never
	// recorded.
	Authorization string `json:"authorization,omitempty"`
}
