package certify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
)

// check is one entry of the catalog.
type check struct {
	profile, name, summary string
	run                    func(*session) error
}

// session is what a running check uses: contract calls that keep a
// transcript, fresh names, and expectations that explain themselves.
type session struct {
	ctx    context.Context
	cfg    Config
	cl     *client.Client
	name   string
	nKeys  int
	ex     []Exchange
	shared *sharedState
}

// sharedState carries results between checks of one run (the durability
// checks share one restart).
type sharedState struct {
	durable *durableSetup
	load    *loadRun
}

func runCheck(ctx context.Context, cfg Config, cl *client.Client, sh *sharedState, chk check) Result {
	s := &session{ctx: ctx, cfg: cfg, cl: cl, name: chk.name, shared: sh}
	start := time.Now()
	err := chk.run(s)
	res := Result{Profile: chk.profile, Name: chk.profile + "/" + chk.name, Summary: chk.summary, Passed: err == nil, Duration: time.Since(start)}
	if err != nil {
		res.Message = err.Error()
		res.Exchanges = s.ex
	}
	return res
}

// key returns a record key no earlier run or check has used.
func (s *session) key() string {
	s.nKeys++
	return fmt.Sprintf("certify-%s-%s-%d", s.cfg.RunID, s.name, s.nKeys)
}

func (s *session) idem(tag string) string {
	return fmt.Sprintf("certify-%s-%s-%s", s.cfg.RunID, s.name, tag)
}

func (s *session) record(req string, rep client.Reply, err error) {
	e := Exchange{Request: req, Status: rep.Status, Response: truncate(strings.TrimSpace(string(rep.Body)), 300)}
	if err != nil {
		e.Error = err.Error()
	}
	s.ex = append(s.ex, e)
}

func describePut(key string, value []byte, hdr map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "PUT %s", contract.RecordPath(key))
	for _, h := range []string{contract.HeaderEpoch, contract.HeaderIdempotencyKey} {
		if v, ok := hdr[h]; ok {
			fmt.Fprintf(&b, " %s: %q", h, truncate(v, 60))
		}
	}
	fmt.Fprintf(&b, " body %q", truncate(string(value), 40))
	return b.String()
}

// floor reads GET /v1/fence.
func (s *session) floor() (uint64, error) {
	f, rep, err := s.cl.Floor(s.ctx)
	s.record("GET "+contract.PathFence, rep, err)
	if err != nil {
		return 0, fmt.Errorf("reading the floor: %w", err)
	}
	return f, nil
}

// base returns an epoch above the current floor with room for the check.
func (s *session) base() (uint64, error) {
	f, err := s.floor()
	if err != nil {
		return 0, err
	}
	if f > ^uint64(0)-1_000_000 {
		return 0, fmt.Errorf("the sink's floor %d leaves no room for fresh epochs", f)
	}
	return f + 1, nil
}

// rawPut sends a PUT with exactly the given headers.
func (s *session) rawPut(key string, value []byte, hdr map[string]string) (client.Reply, error) {
	rep, err := s.raw(http.MethodPut, contract.RecordPath(key), value, hdr)
	s.record(describePut(key, value, hdr), rep, err)
	return rep, err
}

func (s *session) raw(method, path string, body []byte, hdr map[string]string) (client.Reply, error) {
	req, err := http.NewRequestWithContext(s.ctx, method, strings.TrimRight(s.cfg.SinkURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return client.Reply{}, err
	}
	for k, v := range hdr {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return client.Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return client.Reply{Status: resp.StatusCode, Body: b}, err
}

func (s *session) put(key, value string, epoch uint64, idem string) (contract.WriteResponse, client.Reply, error) {
	wr, rep, err := s.cl.Put(s.ctx, key, []byte(value), epoch, idem)
	hdr := map[string]string{contract.HeaderEpoch: contract.FormatEpoch(epoch)}
	if idem != "" {
		hdr[contract.HeaderIdempotencyKey] = idem
	}
	s.record(describePut(key, []byte(value), hdr), rep, err)
	return wr, rep, err
}

func (s *session) fence(epoch uint64) (contract.FenceResponse, client.Reply, error) {
	fr, rep, err := s.cl.Fence(s.ctx, epoch)
	s.record(fmt.Sprintf("POST %s %s: %d", contract.PathFence, contract.HeaderEpoch, epoch), rep, err)
	return fr, rep, err
}

func (s *session) get(key string) (contract.Record, bool, error) {
	rec, found, rep, err := s.cl.Get(s.ctx, key)
	s.record("GET "+contract.RecordPath(key), rep, err)
	return rec, found, err
}

// --- expectations: each returns an error that says what was wrong ---

func (s *session) putExpect(key, value string, epoch uint64, idem string, status int, result string, wantEpoch uint64) error {
	wr, rep, err := s.put(key, value, epoch, idem)
	if err != nil {
		return fmt.Errorf("PUT %s at epoch %d: %w", key, epoch, err)
	}
	if rep.Status != status || wr.Result != result || wr.Epoch != wantEpoch {
		return fmt.Errorf("PUT %s at epoch %d: want %d {result:%s epoch:%d}, got %d %s", key, epoch, status, result, wantEpoch, rep.Status, strings.TrimSpace(string(rep.Body)))
	}
	return nil
}

func (s *session) putOK(key, value string, epoch uint64, idem string) error {
	return s.putExpect(key, value, epoch, idem, http.StatusOK, contract.ResultOK, epoch)
}

// putStale expects 409 REJECT_STALE_EPOCH with highest_epoch >= minFloor.
func (s *session) putStale(key, value string, epoch uint64, idem string, minFloor uint64) error {
	wr, rep, err := s.put(key, value, epoch, idem)
	if err != nil {
		return fmt.Errorf("PUT %s at epoch %d: %w", key, epoch, err)
	}
	if rep.Status != http.StatusConflict || wr.Result != contract.ResultRejectStale || wr.HighestEpoch < minFloor {
		return fmt.Errorf("stale PUT %s at epoch %d (floor is %d): want 409 {result:%s highest_epoch>=%d}, got %d %s",
			key, epoch, minFloor, contract.ResultRejectStale, minFloor, rep.Status, strings.TrimSpace(string(rep.Body)))
	}
	return nil
}

func (s *session) fenceOK(epoch uint64) error {
	fr, rep, err := s.fence(epoch)
	if err != nil {
		return fmt.Errorf("POST fence at epoch %d: %w", epoch, err)
	}
	if rep.Status != http.StatusOK || fr.Result != contract.ResultOK || fr.HighestEpoch != epoch {
		return fmt.Errorf("POST fence at epoch %d: want 200 {result:OK highest_epoch:%d}, got %d %s", epoch, epoch, rep.Status, strings.TrimSpace(string(rep.Body)))
	}
	return nil
}

func (s *session) floorAtLeast(min uint64) error {
	f, err := s.floor()
	if err != nil {
		return err
	}
	if f < min {
		return fmt.Errorf("GET fence: highest_epoch %d, want at least %d", f, min)
	}
	return nil
}

func (s *session) recordIs(key, value string, epoch uint64) error {
	rec, found, err := s.get(key)
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: %w", key, err)
	case !found:
		return fmt.Errorf("GET %s: 404, want value %q at epoch %d", key, truncate(value, 40), epoch)
	case rec.Value != value || rec.Epoch != epoch:
		return fmt.Errorf("GET %s: value %q epoch %d, want value %q epoch %d", key, truncate(rec.Value, 40), rec.Epoch, truncate(value, 40), epoch)
	}
	return nil
}

func (s *session) absent(key string) error {
	rec, found, err := s.get(key)
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: %w", key, err)
	case found:
		return fmt.Errorf("GET %s: found value %q at epoch %d, but that write must not have been applied", key, truncate(rec.Value, 40), rec.Epoch)
	}
	return nil
}

// all runs steps in order and stops at the first error.
func all(steps ...func() error) error {
	for _, st := range steps {
		if err := st(); err != nil {
			return err
		}
	}
	return nil
}
