package certify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
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
	rng    *rand.Rand
	ex     []Exchange
	shared *sharedState
	// floor0 is the floor the check started from (fillers write at or
	// below it); fillerKeys are the keys fillers wrote.
	floor0     uint64
	floorKnown bool
	fillerKeys []string
	fillers    int
	vals       map[string]string
	runs       int // model sequence runs so far (names differ per run)
}

// sharedState carries results between checks of one run (the durability
// checks share one restart).
type sharedState struct {
	durable map[string]*durableSetup // by restart mode
	load    *loadRun
}

func runCheck(ctx context.Context, cfg Config, cl *client.Client, sh *sharedState, chk check) Result {
	s := &session{ctx: ctx, cfg: cfg, cl: cl, name: chk.name, shared: sh, rng: checkRand(cfg.Seed, chk.profile+"/"+chk.name)}
	start := time.Now()
	err := chk.run(s)
	res := Result{Profile: chk.profile, Name: chk.profile + "/" + chk.name, Summary: chk.summary, Verdict: Pass, Duration: time.Since(start)}
	var inc *inconclusiveError
	switch {
	case errors.As(err, &inc):
		res.Verdict = Inconclusive
	case err != nil:
		res.Verdict = Fail
	}
	if err != nil {
		res.Message = err.Error()
		res.Exchanges = s.ex
		if n := len(s.ex) - maxExchanges; n > 0 {
			res.Exchanges = append([]Exchange{{Request: fmt.Sprintf("(%d earlier exchanges not shown)", n)}}, s.ex[n:]...)
		}
		if s.fillers > 0 {
			res.Exchanges = append(res.Exchanges, Exchange{Request: fmt.Sprintf("(%d filler requests between the steps above are not shown; the seed reproduces them)", s.fillers)})
		}
	}
	return res
}

// maxExchanges bounds the transcript kept for a result (its last ones).
const maxExchanges = 40

// inconclusiveError marks a check that found no evidence either way.
type inconclusiveError struct{ msg string }

func (e *inconclusiveError) Error() string { return "INCONCLUSIVE: " + e.msg }

func inconclusive(format string, a ...any) error {
	return &inconclusiveError{msg: fmt.Sprintf(format, a...)}
}

// key returns a fresh record key, idem a fresh Idempotency-Key and value
// a value, all drawn from the seed.
func (s *session) key() string   { return randKey(s.rng) }
func (s *session) idem() string  { return randIdem(s.rng) }
func (s *session) value() string { return randValue(s.rng) }

// v is the random value a check calls by a name ("new-leader"), the same
// for the same name within the check.
func (s *session) v(name string) string {
	if s.vals == nil {
		s.vals = map[string]string{}
	}
	if _, ok := s.vals[name]; !ok {
		s.vals[name] = s.value()
	}
	return s.vals[name]
}

// traffic sends filler requests before a step, so that a check's writes hide
// among writes a sink cannot tell apart. Their answers are not evidence and
// are not judged; a transport error is, and ends the check.
func (s *session) traffic() error {
	if !s.floorKnown {
		return nil
	}
	for _, f := range nextFillers(s.rng, s.floor0, &s.fillerKeys) {
		s.fillers++
		var err error
		switch f.kind {
		case opPut:
			_, _, err = s.cl.Put(s.ctx, f.key, []byte(f.value), f.epoch, f.idem)
		case opGet:
			_, _, _, err = s.cl.Get(s.ctx, f.key)
			if err != nil && !isTransport(err) {
				err = nil // a read's answer is not judged here
			}
		case opFloor:
			_, _, err = s.cl.Floor(s.ctx)
			if err != nil && !isTransport(err) {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("a filler request between the steps failed: %w", err)
		}
	}
	return nil
}

func (s *session) record(req string, rep client.Reply, err error) {
	e := Exchange{Request: req, Status: rep.Status, Response: quote(string(rep.Body), 300)}
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
			fmt.Fprintf(&b, " %s: %s", h, quote(v, 60))
		}
	}
	fmt.Fprintf(&b, " body %s", quote(string(value), 40))
	return b.String()
}

// floor reads GET /v1/fence.
func (s *session) floor() (uint64, error) {
	f, rep, err := s.cl.Floor(s.ctx)
	s.record("GET "+contract.PathFence, rep, err)
	if err != nil {
		return 0, fmt.Errorf("reading the floor: %w", err)
	}
	if !s.floorKnown {
		s.floor0, s.floorKnown = f, true
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
	if err := s.traffic(); err != nil {
		return client.Reply{}, err
	}
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
	if err := s.traffic(); err != nil {
		return contract.WriteResponse{}, client.Reply{}, err
	}
	wr, rep, err := s.cl.Put(s.ctx, key, []byte(value), epoch, idem)
	hdr := map[string]string{contract.HeaderEpoch: contract.FormatEpoch(epoch)}
	if idem != "" {
		hdr[contract.HeaderIdempotencyKey] = idem
	}
	s.record(describePut(key, []byte(value), hdr), rep, err)
	return wr, rep, err
}

func (s *session) fence(epoch uint64) (contract.FenceResponse, client.Reply, error) {
	if err := s.traffic(); err != nil {
		return contract.FenceResponse{}, client.Reply{}, err
	}
	fr, rep, err := s.cl.Fence(s.ctx, epoch)
	s.record(fmt.Sprintf("POST %s %s: %d", contract.PathFence, contract.HeaderEpoch, epoch), rep, err)
	return fr, rep, err
}

func (s *session) get(key string) (contract.Record, bool, error) {
	if err := s.traffic(); err != nil {
		return contract.Record{}, false, err
	}
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
		return fmt.Errorf("PUT %s at epoch %d: want %d {result:%s epoch:%d}, got %d %s", key, epoch, status, result, wantEpoch, rep.Status, body(rep.Body))
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
			key, epoch, minFloor, contract.ResultRejectStale, minFloor, rep.Status, body(rep.Body))
	}
	return nil
}

func (s *session) fenceOK(epoch uint64) error {
	fr, rep, err := s.fence(epoch)
	if err != nil {
		return fmt.Errorf("POST fence at epoch %d: %w", epoch, err)
	}
	if rep.Status != http.StatusOK || fr.Result != contract.ResultOK || fr.HighestEpoch != epoch {
		return fmt.Errorf("POST fence at epoch %d: want 200 {result:OK highest_epoch:%d}, got %d %s", epoch, epoch, rep.Status, body(rep.Body))
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
		return fmt.Errorf("GET %s: 404, want value %s at epoch %d", key, quote(value, 40), epoch)
	case rec.Value != value || rec.Epoch != epoch:
		return fmt.Errorf("GET %s: value %s epoch %d, want value %s epoch %d", key, quote(rec.Value, 40), rec.Epoch, quote(value, 40), epoch)
	}
	return nil
}

func (s *session) absent(key string) error {
	rec, found, err := s.get(key)
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: %w", key, err)
	case found:
		return fmt.Errorf("GET %s: found value %s at epoch %d, but that write must not have been applied", key, quote(rec.Value, 40), rec.Epoch)
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

// isTransport reports whether err means no HTTP answer came back at all
// (client.Client reports non-contract answers as errors too).
func isTransport(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}
