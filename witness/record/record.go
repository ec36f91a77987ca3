// Package record is the witness's history as JSON: what the harness's proxy
// in front of the sink saw of every request, in Jepsen's client-history
// terms (invoke, ok, fail, info). Pure types, so the conformance history and
// the checkers can import them without net/http.
package record

import "time"

// Type is an operation's outcome as a client sees it.
type Type string

const (
	// Invoke: sent, no answer yet (in flight when the history was read).
	Invoke Type = "invoke"
	// OK: a 2xx answer; the operation took effect.
	OK Type = "ok"
	// Fail: certainly no effect: a definite answer (3xx, 4xx, e.g. 409
	// REJECT_STALE_EPOCH), or the upstream could not even be dialled.
	Fail Type = "fail"
	// Info: indeterminate, it may or may not have taken effect: no answer
	// (upstream error, timeout, the client went away) or a 5xx.
	Info Type = "info"
)

// Operation is one request through the witness. The request half is filled
// at invocation, the answer half at completion.
type Operation struct {
	// ID numbers operations in invocation order from 1; a gap in the IDs is
	// an operation dropped past the limit (see History.Dropped).
	ID uint64 `json:"id"`
	// Source is the TCP peer (ip:port) the request came from: the
	// harness maps the IP to a pod, it never trusts a header for identity.
	Source  string    `json:"source"`
	Invoked time.Time `json:"invoked"`
	// Completed is zero while Type is Invoke.
	Completed time.Time `json:"completed,omitzero"`

	Method string `json:"method"`
	// Path is the request path as sent (escaped), with its query if any.
	Path string `json:"path"`
	// Key is the record key of PUT and GET /v1/records/{key}, unescaped.
	Key string `json:"key,omitempty"`
	// EpochHeader is the raw x-camel-leader-epoch header ("" if absent);
	// Epoch its value when it parses, else EpochError says why.
	EpochHeader    string `json:"epoch_header,omitempty"`
	Epoch          uint64 `json:"epoch,omitempty"`
	EpochError     string `json:"epoch_error,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// ValueLen and ValueSHA256 (hex) cover the request body as forwarded;
	// the value itself is not kept, so memory stays bounded.
	ValueLen    int64  `json:"value_len"`
	ValueSHA256 string `json:"value_sha256,omitempty"`
	// ValuePartial: the body was not read to its end (the client went away,
	// or the upstream answered first), so the hash covers a prefix only.
	ValuePartial bool `json:"value_partial,omitempty"`

	Type Type `json:"type"`
	// Status is the upstream's HTTP status, 0 if none came.
	Status int `json:"status,omitempty"`
	// Result, ResultEpoch and HighestEpoch come from the answer body
	// (contract.WriteResponse or FenceResponse) when it parsed.
	Result       string `json:"result,omitempty"`
	ResultEpoch  uint64 `json:"result_epoch,omitempty"`
	HighestEpoch uint64 `json:"highest_epoch,omitempty"`
	// SinkInstance is the instance id the sink sent with its answer
	// (Sink-Instance-Id), if any: a change within one run is a sink
	// restart, which its in-memory history does not survive.
	SinkInstance string `json:"sink_instance,omitempty"`
	// ForeignPeer is the address (ip:port) that answered without a
	// Sink-Instance-Id: not the sink, so the report can name who it was.
	ForeignPeer string `json:"foreign_peer,omitempty"`
	// AnswerLen is the length of the answer body passed back.
	AnswerLen int64 `json:"answer_len,omitempty"`
	// Error says why an Info operation has no definite answer.
	Error string `json:"error,omitempty"`
	// Harness names traffic the harness itself sent through the witness
	// (HarnessProbe), "" for a client's request: checks that judge the
	// clients (who sent what, when they stopped) leave it out.
	Harness string `json:"harness,omitempty"`
	// Nemesis is what the witness's own fault injection did to this
	// operation, nil when it did nothing.
	Nemesis *Fault `json:"nemesis,omitempty"`
}

// HarnessProbe marks the harness's probe write after a sink restart.
const HarnessProbe = "probe"

// EpochValid reports whether the request carried a well-formed epoch.
func (o Operation) EpochValid() bool { return o.EpochHeader != "" && o.EpochError == "" }

// History is GET /v1/witness/history.
type History struct {
	// Instance is random per witness process start: two reads with
	// different instances are two histories, not one.
	Instance string    `json:"instance"`
	Started  time.Time `json:"started"`
	// Read is when this snapshot was taken (witness clock).
	Read time.Time `json:"read"`
	// Dropped counts operations not kept past the limit: evidence with
	// Dropped > 0 is incomplete.
	Dropped    uint64      `json:"dropped"`
	Operations []Operation `json:"operations"`
}
