package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client speaks the HTTP binding of the sink contract. It reports what the
// sink answered; it never retries (callers decide, reusing the idempotency key).
type Client struct {
	BaseURL string       // e.g. http://sink:8080
	HTTP    *http.Client // nil means http.DefaultClient
}

// Reply is what came back for one request: the status and the raw body,
// kept for reports that must say exactly what was sent and received.
type Reply struct {
	Status int
	Body   []byte
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
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Reply{Status: resp.StatusCode}, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	return Reply{Status: resp.StatusCode, Body: b}, nil
}

// RecordPath is the URL path of a record key (escaped).
func RecordPath(key string) string { return PathRecords + url.PathEscape(key) }

// Put writes value under key with the given epoch. idemKey may be empty.
func (c *Client) Put(ctx context.Context, key string, value []byte, epoch uint64, idemKey string) (WriteResponse, Reply, error) {
	h := map[string]string{HeaderEpoch: FormatEpoch(epoch)}
	if idemKey != "" {
		h[HeaderIdempotencyKey] = idemKey
	}
	rep, err := c.do(ctx, http.MethodPut, RecordPath(key), value, h)
	if err != nil {
		return WriteResponse{}, rep, err
	}
	var wr WriteResponse
	_ = json.Unmarshal(rep.Body, &wr) // a non-JSON body leaves Result empty; callers check Status
	return wr, rep, nil
}

// Fence raises the sink's floor to epoch (the new leader's barrier).
func (c *Client) Fence(ctx context.Context, epoch uint64) (FenceResponse, Reply, error) {
	rep, err := c.do(ctx, http.MethodPost, PathFence, nil, map[string]string{HeaderEpoch: FormatEpoch(epoch)})
	if err != nil {
		return FenceResponse{}, rep, err
	}
	var fr FenceResponse
	_ = json.Unmarshal(rep.Body, &fr)
	return fr, rep, nil
}

// Floor reads the sink's highest epoch.
func (c *Client) Floor(ctx context.Context) (uint64, Reply, error) {
	rep, err := c.do(ctx, http.MethodGet, PathFence, nil, nil)
	if err != nil {
		return 0, rep, err
	}
	var fr FenceResponse
	if err := json.Unmarshal(rep.Body, &fr); err != nil || rep.Status != http.StatusOK {
		return 0, rep, fmt.Errorf("GET %s: status %d body %q", PathFence, rep.Status, rep.Body)
	}
	return fr.HighestEpoch, rep, nil
}

// Get reads one record; found is false on 404.
func (c *Client) Get(ctx context.Context, key string) (rec Record, found bool, rep Reply, err error) {
	rep, err = c.do(ctx, http.MethodGet, RecordPath(key), nil, nil)
	if err != nil {
		return Record{}, false, rep, err
	}
	switch rep.Status {
	case http.StatusNotFound:
		return Record{}, false, rep, nil
	case http.StatusOK:
		if err := json.Unmarshal(rep.Body, &rec); err != nil {
			return Record{}, false, rep, fmt.Errorf("GET %s: bad body: %w", RecordPath(key), err)
		}
		return rec, true, rep, nil
	}
	return Record{}, false, rep, fmt.Errorf("GET %s: status %d body %q", RecordPath(key), rep.Status, rep.Body)
}

// History fetches every attempt the sink recorded (reference sink only).
func (c *Client) History(ctx context.Context) ([]Attempt, error) {
	rep, err := c.do(ctx, http.MethodGet, PathHistory, nil, nil)
	if err != nil {
		return nil, err
	}
	if rep.Status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d body %q", PathHistory, rep.Status, rep.Body)
	}
	var h HistoryResponse
	if err := json.Unmarshal(rep.Body, &h); err != nil {
		return nil, fmt.Errorf("GET %s: bad body: %w", PathHistory, err)
	}
	return h.Attempts, nil
}
