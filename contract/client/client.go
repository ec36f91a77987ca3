// Package client speaks the HTTP binding of the sink contract (package
// contract holds the wire format): the reconciler's writer, certify and the
// tests use it; the pure checkers never do.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/contract"
)

// Client speaks the HTTP binding of the sink contract. It reports what the
// sink answered; it never retries (callers decide, reusing the idempotency key).
type Client struct {
	BaseURL string       // e.g. http://sink:8080
	HTTP    *http.Client // nil means http.DefaultClient
	// Token, if set, is sent as "Authorization: Bearer <Token>" on every
	// request (a sink that authenticates its writers).
	Token string
}

// Reply is what came back for one request: the status and the raw body,
// kept for reports that must say exactly what was sent and received.
type Reply struct {
	Status int
	Body   []byte
	// RetryAfter is the answer's Retry-After in whole seconds (0: none).
	RetryAfter time.Duration
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, hdr map[string]string) (Reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return Reply{}, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return Reply{}, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	if err != nil {
		return Reply{Status: resp.StatusCode}, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	if resp.StatusCode >= 400 && !hasResult(b) {
		// A refusal without a contract result is not the sink's: something
		// else holds the address on this connection (on kind, a Service's
		// address leaked to the host's gateway, which answered an empty 404
		// on every request of one kept-alive connection for minutes).
		// Dropping the idle connections makes the caller's retry dial again.
		c.httpClient().CloseIdleConnections()
	}
	return Reply{Status: resp.StatusCode, Body: b, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}, nil
}

// hasResult: b is a JSON object with a non-empty "result", the contract's
// answer to a write or a fence.
func hasResult(b []byte) bool {
	var v struct {
		Result string `json:"result"`
	}
	return json.Unmarshal(b, &v) == nil && v.Result != ""
}

// retryAfter reads a Retry-After of delay-seconds; an HTTP date or
// anything else is no advice (0).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, 3600)) * time.Second
}

// Put writes value under key with the given epoch. idemKey may be empty.
func (c *Client) Put(ctx context.Context, key string, value []byte, epoch uint64, idemKey string) (contract.WriteResponse, Reply, error) {
	return c.put(ctx, key, value, map[string]string{contract.HeaderEpoch: contract.FormatEpoch(epoch)}, idemKey)
}

// put sends a PUT with the headers h plus the idempotency key, if any.
func (c *Client) put(ctx context.Context, key string, value []byte, h map[string]string, idemKey string) (contract.WriteResponse, Reply, error) {
	if idemKey != "" {
		h[contract.HeaderIdempotencyKey] = idemKey
	}
	rep, err := c.do(ctx, http.MethodPut, contract.RecordPath(key), value, h)
	if err != nil {
		return contract.WriteResponse{}, rep, err
	}
	var wr contract.WriteResponse
	_ = json.Unmarshal(rep.Body, &wr) // a non-JSON body leaves Result empty; callers check Status
	return wr, rep, nil
}

// Fence raises the sink's floor to epoch (the new leader's barrier).
func (c *Client) Fence(ctx context.Context, epoch uint64) (contract.FenceResponse, Reply, error) {
	rep, err := c.do(ctx, http.MethodPost, contract.PathFence, nil, map[string]string{contract.HeaderEpoch: contract.FormatEpoch(epoch)})
	if err != nil {
		return contract.FenceResponse{}, rep, err
	}
	var fr contract.FenceResponse
	_ = json.Unmarshal(rep.Body, &fr)
	return fr, rep, nil
}

// Floor reads the sink's highest epoch.
func (c *Client) Floor(ctx context.Context) (uint64, Reply, error) {
	rep, err := c.do(ctx, http.MethodGet, contract.PathFence, nil, nil)
	if err != nil {
		return 0, rep, err
	}
	var fr contract.FenceResponse
	if err := json.Unmarshal(rep.Body, &fr); err != nil || rep.Status != http.StatusOK {
		return 0, rep, fmt.Errorf("GET %s: status %d body %q", contract.PathFence, rep.Status, rep.Body)
	}
	return fr.HighestEpoch, rep, nil
}

// Get reads one record; found is false on 404.
func (c *Client) Get(ctx context.Context, key string) (rec contract.Record, found bool, rep Reply, err error) {
	rep, err = c.do(ctx, http.MethodGet, contract.RecordPath(key), nil, nil)
	if err != nil {
		return contract.Record{}, false, rep, err
	}
	switch rep.Status {
	case http.StatusNotFound:
		return contract.Record{}, false, rep, nil
	case http.StatusOK:
		if err := json.Unmarshal(rep.Body, &rec); err != nil {
			return contract.Record{}, false, rep, fmt.Errorf("GET %s: bad body: %w", contract.RecordPath(key), err)
		}
		return rec, true, rep, nil
	}
	return contract.Record{}, false, rep, fmt.Errorf("GET %s: status %d body %q", contract.RecordPath(key), rep.Status, rep.Body)
}

// History fetches every attempt the sink recorded (reference sink only).
func (c *Client) History(ctx context.Context) ([]contract.Attempt, error) {
	as, _, err := c.HistoryWithDropped(ctx)
	return as, err
}

// HistoryWithDropped is History and how many attempts the sink says it
// left out (contract.HeaderHistoryDropped; 0 when it does not say).
func (c *Client) HistoryWithDropped(ctx context.Context) ([]contract.Attempt, uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+contract.PathHistory, nil)
	if err != nil {
		return nil, 0, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("GET %s: reading body: %w", contract.PathHistory, err)
	case resp.StatusCode != http.StatusOK:
		return nil, 0, fmt.Errorf("GET %s: status %d body %.200q", contract.PathHistory, resp.StatusCode, b)
	}
	var h contract.HistoryResponse
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, 0, fmt.Errorf("GET %s: bad body: %w", contract.PathHistory, err)
	}
	dropped, err := contract.ParseHistoryDropped(resp.Header.Get(contract.HeaderHistoryDropped))
	return h.Attempts, dropped, err
}
