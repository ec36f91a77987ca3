package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/contract"
)

// Sink is this controller's own client of the sink contract: plain
// net/http, nothing of the fixture's writer.
type Sink struct {
	base  string
	token string // sent as a Bearer credential when set
	http  *http.Client
}

// NewSink reads the credential from tokenFile when that file exists (the
// suite mounts it only for a sink that authenticates).
func NewSink(base, tokenFile string) (*Sink, error) {
	s := &Sink{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 3 * time.Second}}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		switch {
		case err == nil:
			s.token = strings.TrimSpace(string(b))
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("FENCECHECK_SINK_TOKEN_FILE: %w", err)
		}
	}
	return s, nil
}

// HasToken says whether writes carry a credential.
func (s *Sink) HasToken() bool { return s.token != "" }

// Answer is one exchange with the sink: the HTTP status (0: no answer),
// the contract's result code and the highest epoch it reported.
type Answer struct {
	Status       int
	Result       string
	HighestEpoch uint64
	Err          error
	// RetryAfter is the answer's Retry-After in whole seconds (0: none).
	RetryAfter time.Duration
}

// Retryable: no answer, a 5xx, or an answer that is not the sink's (no
// contract result: whatever a Service routed to meanwhile). The same
// request with the same Idempotency-Key is safe to send again
// (docs/controller-contract.md, MUST 5).
func (a Answer) Retryable() bool { return a.Err != nil || a.Status >= 500 || a.Result == "" }

// Put writes key; epoch 0 sends no epoch header (the unfenced writer).
func (s *Sink) Put(ctx context.Context, key, value string, epoch uint64, idem string) Answer {
	h := http.Header{contract.HeaderIdempotencyKey: {idem}}
	if epoch > 0 {
		h.Set(contract.HeaderEpoch, contract.FormatEpoch(epoch))
	}
	return s.do(ctx, http.MethodPut, contract.RecordPath(key), []byte(value), h)
}

// Fence raises the sink's floor to epoch.
func (s *Sink) Fence(ctx context.Context, epoch uint64) Answer {
	return s.do(ctx, http.MethodPost, contract.PathFence, nil, http.Header{contract.HeaderEpoch: {contract.FormatEpoch(epoch)}})
}

func (s *Sink) do(ctx context.Context, method, path string, body []byte, h http.Header) Answer {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return Answer{Err: err}
	}
	for k, v := range h {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return Answer{Err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var r struct {
		Result       string `json:"result"`
		HighestEpoch uint64 `json:"highest_epoch"`
	}
	_ = json.Unmarshal(b, &r) // a body that is not the contract's leaves Result empty
	out := Answer{Status: resp.StatusCode, Result: r.Result, HighestEpoch: r.HighestEpoch}
	if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && n > 0 {
		out.RetryAfter = time.Duration(min(n, 3600)) * time.Second
	}
	return out
}
