// Package contract is the sink contract v1, HTTP binding, written once:
// header names, result codes, JSON shapes and the parsing rules that the
// reference sink, the HTTP client (package contract/client), certify and the conformance
// checks all share. See docs/sink-contract.md for the prose version.
package contract

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

const (
	// HeaderEpoch carries the leader epoch (fencing token) as a decimal uint64.
	HeaderEpoch = "x-camel-leader-epoch"
	// HeaderIdempotencyKey names one logical write; retries reuse it.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderInstanceID is optional: a value a sink sends on its answers that
	// changes whenever the sink process restarts, so certify can tell that
	// a restart really happened.
	HeaderInstanceID = "Sink-Instance-Id"
	// HeaderHistoryDropped is the reference sink's answer header on GET
	// /v1/history: how many attempts past its history limit were answered
	// but not kept (a history with a non-zero count is incomplete).
	HeaderHistoryDropped = "X-Fencecheck-History-Dropped"
	// HeaderToken carries a sink token where Authorization cannot: the
	// apiserver's service proxy consumes the caller's Authorization header
	// (it authenticated the caller to the apiserver) and never forwards
	// it, so the harness reads the history through the proxy with its
	// admin token here. The reference sink accepts either.
	HeaderToken = "X-Fencecheck-Sink-Token"

	// MaxValueBytes is the largest record value a sink must accept.
	MaxValueBytes = 1 << 20
	// MaxIdempotencyKeyLen bounds Idempotency-Key (1 to 255 printable ASCII).
	MaxIdempotencyKeyLen = 255

	PathRecords = "/v1/records/" // PUT, GET /v1/records/{key}
	PathFence   = "/v1/fence"    // POST (raise floor), GET (read floor)
	PathHistory = "/v1/history"  // GET: every attempt, reference sink only
	// PathRecordsBulk is GET /v1/records?key=K1&key=K2...: the records of
	// many keys in one read (reference sink only: the harness's final
	// read; a sink without it is read key by key).
	PathRecordsBulk = "/v1/records"
	// QueryKey names a key of a bulk read.
	QueryKey = "key"
)

// Result codes in response bodies.
const (
	ResultOK          = "OK"
	ResultOKDup       = "OK_DUP"
	ResultRejectStale = "REJECT_STALE_EPOCH"
	ResultBadRequest  = "BAD_REQUEST"
	ResultConflict    = "IDEMPOTENCY_CONFLICT" // same Idempotency-Key, other key or value (422)
)

// The HTTP statuses of the v1 binding, written here so the pure packages
// (the fence rule, the model, the checks) need no net/http.
const (
	StatusOK            = 200
	StatusBadRequest    = 400
	StatusNotFound      = 404
	StatusConflict      = 409 // REJECT_STALE_EPOCH
	StatusUnprocessable = 422 // IDEMPOTENCY_CONFLICT
)

// The HTTP methods of the v1 binding, likewise.
const (
	MethodGet  = "GET"
	MethodPut  = "PUT"  // a write
	MethodPost = "POST" // a fence
)

// StatusOf is the HTTP status that goes with a result code in the v1
// binding.
func StatusOf(result string) int {
	switch result {
	case ResultOK, ResultOKDup:
		return StatusOK
	case ResultRejectStale:
		return StatusConflict
	case ResultConflict:
		return StatusUnprocessable
	}
	return StatusBadRequest
}

// WriteResponse is the body of PUT /v1/records/{key}.
// Epoch is set on OK and OK_DUP; HighestEpoch on REJECT_STALE_EPOCH.
type WriteResponse struct {
	Result       string `json:"result"`
	Epoch        uint64 `json:"epoch,omitempty"`
	HighestEpoch uint64 `json:"highest_epoch,omitempty"`
	Error        string `json:"error,omitempty"`
}

// FenceResponse is the body of POST and GET /v1/fence.
type FenceResponse struct {
	Result       string `json:"result,omitempty"`
	HighestEpoch uint64 `json:"highest_epoch"`
	Error        string `json:"error,omitempty"`
}

// Record is the body of GET /v1/records/{key}.
type Record struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Epoch uint64 `json:"epoch"`
}

// Op names the kind of an attempt in the history.
const (
	OpPut   = "put"
	OpFence = "fence"
)

// Attempt is one request the sink received, as GET /v1/history lists it:
// every attempt, committed or not, in arrival order.
type Attempt struct {
	Seq     uint64    `json:"seq"`
	Arrived time.Time `json:"arrived"`
	Op      string    `json:"op"`
	Key     string    `json:"key,omitempty"`
	// Value is the value, or its first MaxAttemptValuePrefix bytes when
	// ValueLen says it was longer: a history keeps prefixes, not values.
	Value string `json:"value,omitempty"`
	// ValueSHA256 (hex) and ValueLen describe the whole value (optional;
	// the reference sink sets them on every put). Compare with ValueHash.
	ValueSHA256    string `json:"value_sha256,omitempty"`
	ValueLen       int    `json:"value_len,omitempty"`
	Epoch          uint64 `json:"epoch"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Status         int    `json:"status"`
	Result         string `json:"result"`
	// FloorAfter is the sink's floor once this attempt was decided.
	FloorAfter uint64 `json:"floor_after"`
	// Order is the sink's decision order (optional, the reference sink
	// sets it): taken inside the store's transaction, under its lock, so
	// it is the order the decisions took effect in, which arrival (Seq)
	// is not. Checks judge in Order when every attempt has one.
	Order uint64 `json:"order,omitempty"`
}

// MaxAttemptValuePrefix is how much of a value the reference sink's
// history keeps (with the whole value's SHA-256).
const MaxAttemptValuePrefix = 1 << 10

// ValueHash is the hex SHA-256 of the attempt's whole value: ValueSHA256
// when the sink sent it, else computed from Value (a history that keeps
// whole values).
func (a Attempt) ValueHash() string {
	if a.ValueSHA256 != "" {
		return a.ValueSHA256
	}
	sum := sha256.Sum256([]byte(a.Value))
	return hex.EncodeToString(sum[:])
}

// Committed reports whether the attempt changed the sink's records.
func (a Attempt) Committed() bool { return a.Op == OpPut && a.Result == ResultOK }

// HistoryResponse is the body of GET /v1/history.
type HistoryResponse struct {
	Attempts []Attempt `json:"attempts"`
}

// RecordsResponse is the body of a bulk read (PathRecordsBulk): the
// records of the keys asked for that have one, in the order asked.
type RecordsResponse struct {
	Records []Record `json:"records"`
}

// Errors from parsing request headers.
var (
	ErrEpochMissing   = errors.New("missing " + HeaderEpoch + " header")
	ErrEpochMalformed = errors.New(HeaderEpoch + " must be a decimal uint64")
	ErrIdemMalformed  = errors.New(HeaderIdempotencyKey + " must be 1 to 255 printable ASCII characters")
)

// ParseEpoch parses an epoch header value. Only plain decimal digits are
// accepted: no sign, no spaces, no hex, nothing above 2^64-1.
func ParseEpoch(s string) (uint64, error) {
	if s == "" {
		return 0, ErrEpochMissing
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %q", ErrEpochMalformed, truncate(s))
		}
	}
	e, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q overflows", ErrEpochMalformed, truncate(s))
	}
	return e, nil
}

// RecordPath is the URL path of a record key (escaped).
func RecordPath(key string) string { return PathRecords + url.PathEscape(key) }

// FormatEpoch renders an epoch for the header.
func FormatEpoch(e uint64) string { return strconv.FormatUint(e, 10) }

// ValidIdempotencyKey reports whether k is 1 to 255 printable ASCII characters.
func ValidIdempotencyKey(k string) error {
	if len(k) == 0 || len(k) > MaxIdempotencyKeyLen {
		return ErrIdemMalformed
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return ErrIdemMalformed
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// NewToken is a fresh random sink token (256 bits, hex), as the targets
// mint one writer and one admin token per scenario.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand crashes the program instead)
	return hex.EncodeToString(b)
}
