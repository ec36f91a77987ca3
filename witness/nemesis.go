package witness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// The witness's nemesis: faults of the network between the reconcilers and
// the sink, injected by the harness's own proxy and recorded in the
// operations they touch (record.Fault). Off by default; a witness without
// it pays one nil check per request.

// NemesisConfig switches the faults on (the zero value: none).
type NemesisConfig struct {
	// HoldAfter > 0: once HoldAfter PUTs were answered with a fresh OK,
	// hold every PUT whose epoch is at most E (the highest epoch committed
	// by then) until a fence above E arrives, then deliver them: a write
	// sent before the takeover that reaches the sink after the new
	// leader's fence. One hold per witness: it does not arm again.
	HoldAfter int
	// RaceLag > 0: release the held writes before that fence is forwarded,
	// and forward it RaceLag later, so a write and the fence that should
	// stop it are at the sink at once in a known order. 0: release them
	// once the sink has answered the fence OK.
	RaceLag time.Duration
	// MaxHold bounds a hold no fence releases (0: DefaultMaxHold); such a
	// write is sent anyway and marked expired.
	MaxHold time.Duration
	// LoseEvery > 0: of the PUTs answered with a fresh OK, lose the answer
	// of every LoseEvery-th: read it, then close the client's connection.
	LoseEvery int
	// Runtime: the harness may arm a hold and set LoseEvery while the
	// witness runs (POST record.PathNemesis), so one run can mix these
	// faults with others at the moments its schedule chooses.
	Runtime bool
}

// DefaultMaxHold bounds a hold that no fence releases.
const DefaultMaxHold = 60 * time.Second

// maxHeldBody bounds a held request body (kept in memory while held).
const maxHeldBody = 1 << 20

// On reports whether any fault is switched on.
func (c NemesisConfig) On() bool { return c.HoldAfter > 0 || c.LoseEvery > 0 || c.Runtime }

// Validate rejects settings that cannot mean anything.
func (c NemesisConfig) Validate() error {
	switch {
	case c.HoldAfter < 0 || c.LoseEvery < 0:
		return fmt.Errorf("witness: hold-after and lose-every must not be negative (%d, %d)", c.HoldAfter, c.LoseEvery)
	case c.RaceLag < 0 || c.MaxHold < 0:
		return fmt.Errorf("witness: race lag and max hold must not be negative (%s, %s)", c.RaceLag, c.MaxHold)
	case c.RaceLag > 0 && c.HoldAfter == 0:
		return errors.New("witness: a race lag needs held writes (hold-after > 0)")
	}
	return nil
}

// nemesis is the faults' state. Its decisions (hold, answered, take,
// expire) are pure bookkeeping under one lock; nemesis_test.go drives them
// without sockets.
type nemesis struct {
	cfg NemesisConfig

	mu       sync.Mutex
	okPuts   int    // PUTs answered with a fresh OK
	highOK   uint64 // the highest epoch among them
	armed    bool   // holding writes of epoch <= epoch
	released bool   // the one hold is over
	epoch    uint64
	held     []*heldWrite
	// slow: answers are held back by a seeded delay in [0, slowMax].
	slowMax time.Duration
	slowRNG *rand.Rand
}

func newNemesis(cfg NemesisConfig) *nemesis {
	if cfg.MaxHold == 0 {
		cfg.MaxHold = DefaultMaxHold
	}
	return &nemesis{cfg: cfg}
}

// heldWrite is one write the witness keeps from the sink.
type heldWrite struct {
	id          uint64
	release     chan struct{} // closed when a fence releases it
	answered    chan struct{} // closed once the upstream answered (or failed)
	by          uint64        // the releasing fence's operation id
	beforeFence bool
	taken       bool // released or expired (under nemesis.mu)
}

// hold decides whether the PUT op is held, and registers it if so.
func (n *nemesis) hold(op record.Operation) (*heldWrite, uint64) {
	if !op.EpochValid() {
		return nil, 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.armed || n.released || op.Epoch > n.epoch {
		return nil, 0
	}
	h := &heldWrite{id: op.ID, release: make(chan struct{}), answered: make(chan struct{})}
	n.held = append(n.held, h)
	return h, n.epoch
}

// answered counts a PUT's answer (arming the hold at the HoldAfter-th
// fresh OK) and says whether to lose it.
func (n *nemesis) answered(status int, result string, epoch uint64) (lose bool) {
	if status < 200 || status > 299 || result != contract.ResultOK {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.okPuts++
	n.highOK = max(n.highOK, epoch)
	if n.cfg.HoldAfter > 0 && !n.armed && n.okPuts >= n.cfg.HoldAfter {
		n.armed, n.epoch = true, n.highOK
	}
	return n.cfg.LoseEvery > 0 && n.okPuts%n.cfg.LoseEvery == 0
}

// losing reports whether answers are being lost (LoseEvery > 0).
func (n *nemesis) losing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cfg.LoseEvery > 0
}

// set applies a run-time request: arm a hold at the highest epoch
// committed so far (refused while one is armed, or before any commit),
// and set how often answers are lost.
func (n *nemesis) set(req record.NemesisRequest) (record.NemesisState, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if req.LoseEvery != nil && *req.LoseEvery < 0 {
		return n.state(), fmt.Errorf("lose_every %d must not be negative", *req.LoseEvery)
	}
	if req.Hold {
		switch {
		case n.armed && !n.released:
			return n.state(), fmt.Errorf("a hold of epochs <= %d is armed already", n.epoch)
		case n.highOK == 0:
			return n.state(), errors.New("no fresh commit yet: no epoch to hold")
		}
		n.armed, n.released, n.epoch, n.held = true, false, n.highOK, nil
	}
	if req.Slow != nil && req.Slow.Max < 0 {
		return n.state(), fmt.Errorf("slow max %v must not be negative", req.Slow.Max)
	}
	if req.LoseEvery != nil {
		n.cfg.LoseEvery = *req.LoseEvery
	}
	if req.Slow != nil {
		n.slowMax, n.slowRNG = req.Slow.Max, rand.New(rand.NewPCG(req.Slow.Seed, req.Slow.Seed^0x5eed))
	}
	return n.state(), nil
}

// delay is the next answer's delay (0: answers are not slowed), the
// seeded PRNG's next draw in [0, slowMax].
func (n *nemesis) delay() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.slowMax <= 0 {
		return 0
	}
	return time.Duration(n.slowRNG.Int64N(int64(n.slowMax) + 1))
}

// state is the nemesis as the harness sees it (under n.mu).
func (n *nemesis) state() record.NemesisState {
	return record.NemesisState{Holding: n.armed && !n.released, HoldEpoch: n.epoch, LoseEvery: n.cfg.LoseEvery, FreshOK: n.okPuts, SlowMax: n.slowMax}
}

// holding reports whether a hold is armed and not yet released.
func (n *nemesis) holding() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.armed && !n.released
}

// take ends the hold for a fence of epoch above E: it returns the held
// writes, marked released by fence (nil if the fence does not release).
func (n *nemesis) take(fence, epoch uint64, beforeFence bool) []*heldWrite {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.armed || n.released || epoch <= n.epoch {
		return nil
	}
	n.released = true
	hs := n.held
	n.held = nil
	for _, h := range hs {
		h.taken, h.by, h.beforeFence = true, fence, beforeFence
	}
	return hs
}

// expire gives up on h after the hold limit; false if a fence took it first.
func (n *nemesis) expire(h *heldWrite) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h.taken {
		return false
	}
	h.taken = true
	for i, x := range n.held {
		if x == h {
			n.held = append(n.held[:i:i], n.held[i+1:]...)
			break
		}
	}
	return true
}

// serve runs one request through the faults; requests they leave alone
// are forwarded as ever.
func (n *nemesis) serve(wt *Witness, w http.ResponseWriter, r *http.Request, tap *bodyTap, op *record.Operation) answer {
	switch {
	case op.Method == http.MethodPut && op.Key != "":
		if h, e := n.hold(*op); h != nil {
			return n.serveHeld(wt, w, r, tap, op, h, e)
		}
		if n.losing() {
			return n.serveLosable(wt, w, r, tap, op)
		}
		if d := n.delay(); d > 0 {
			return n.serveSlow(wt, w, r, tap, op, d, true)
		}
		a := wt.forward(w, r, tap)
		var wr contract.WriteResponse
		if a.err == "" && !a.truncated && json.Unmarshal(a.body, &wr) == nil {
			n.answered(a.status, wr.Result, wr.Epoch)
		}
		return a
	case op.Method == http.MethodPost && op.Path == contract.PathFence && op.EpochValid() && n.holding():
		return n.serveFence(wt, w, r, tap, op)
	}
	if d := n.delay(); d > 0 {
		return n.serveSlow(wt, w, r, tap, op, d, false)
	}
	return wt.forward(w, r, tap)
}

// serveSlow forwards the request and holds the sink's whole answer back
// for d before it passes it on (a slow sink: the sink acted at once, the
// client hears late); a PUT's answer still counts for the hold and the
// lost answers.
func (n *nemesis) serveSlow(wt *Witness, w http.ResponseWriter, r *http.Request, tap *bodyTap, op *record.Operation, d time.Duration, put bool) answer {
	ctx, cancel := context.WithTimeout(r.Context(), wt.timeout)
	defer cancel()
	f := &record.Fault{Delayed: d}
	op.Nemesis = f
	return wt.sendBuffered(ctx, w, r, tap, wt.outbound(ctx, r, tap), f, func(a answer) bool {
		if put {
			var wr contract.WriteResponse
			if !a.truncated && json.Unmarshal(a.body, &wr) == nil {
				n.answered(a.status, wr.Result, wr.Epoch)
			}
		}
		// The delay is the fault's shape (how slow the sink is), not a
		// wait for an event.
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return false
	})
}

// serveHeld keeps the write until a fence releases it (or the limit
// passes), then sends it, even if its client has gone: a write in flight
// reaches the sink whatever its sender does meanwhile.
func (n *nemesis) serveHeld(wt *Witness, w http.ResponseWriter, r *http.Request, tap *bodyTap, op *record.Operation, h *heldWrite, e uint64) answer {
	f := &record.Fault{Held: true, HoldEpoch: e}
	op.Nemesis = f
	defer close(h.answered)
	body, err := io.ReadAll(io.LimitReader(tap, maxHeldBody+1))
	if err == nil && len(body) > maxHeldBody {
		err = fmt.Errorf("body over %d bytes", maxHeldBody)
	}
	if err != nil {
		n.expire(h)
		return answer{err: "witness: could not hold the write: " + err.Error(), notSent: true}
	}
	timer := time.NewTimer(n.cfg.MaxHold)
	select {
	case <-h.release:
	case <-timer.C:
		if !n.expire(h) {
			<-h.release
		}
	}
	timer.Stop()
	if h.by != 0 {
		f.ReleasedBy, f.ReleasedBeforeFence = h.by, h.beforeFence
	} else {
		f.Expired = true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), wt.timeout)
	defer cancel()
	out := wt.outbound(ctx, r, tap)
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	return wt.sendBuffered(ctx, w, r, tap, out, f, nil)
}

// serveLosable forwards a PUT and holds its answer back: a fresh OK whose
// turn it is is lost (the client's connection is closed), any other answer
// passes back.
func (n *nemesis) serveLosable(wt *Witness, w http.ResponseWriter, r *http.Request, tap *bodyTap, op *record.Operation) answer {
	ctx, cancel := context.WithTimeout(r.Context(), wt.timeout)
	defer cancel()
	f := &record.Fault{}
	return wt.sendBuffered(ctx, w, r, tap, wt.outbound(ctx, r, tap), f, func(a answer) bool {
		var wr contract.WriteResponse
		if a.truncated || json.Unmarshal(a.body, &wr) != nil || !n.answered(a.status, wr.Result, wr.Epoch) {
			return false
		}
		f.LostAnswer = true
		op.Nemesis = f
		return true
	})
}

// serveFence forwards a fence while writes are held. A fence above E
// releases them: after the sink answered it OK (or, with a race lag,
// before it is forwarded); either way its answer passes back only once
// they were answered, so the new leader's first write comes after them.
func (n *nemesis) serveFence(wt *Witness, w http.ResponseWriter, r *http.Request, tap *bodyTap, op *record.Operation) answer {
	ctx, cancel := context.WithTimeout(r.Context(), wt.timeout)
	defer cancel()
	f := &record.Fault{}
	var hs []*heldWrite
	release := func(beforeFence bool) {
		hs = n.take(op.ID, op.Epoch, beforeFence)
		for _, h := range hs {
			f.Releases = append(f.Releases, h.id)
			close(h.release)
		}
		if len(hs) > 0 {
			op.Nemesis = f
		}
	}
	if n.cfg.RaceLag > 0 {
		release(true)
		if len(hs) > 0 {
			// The lag is the fault's shape (the fence trails the writes
			// into the sink's check-then-act window), not a wait for an event.
			t := time.NewTimer(n.cfg.RaceLag)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
	return wt.sendBuffered(ctx, w, r, tap, wt.outbound(ctx, r, tap), f, func(a answer) bool {
		if n.cfg.RaceLag == 0 && a.status == http.StatusOK {
			var fr contract.FenceResponse
			if !a.truncated && json.Unmarshal(a.body, &fr) == nil && fr.Result == contract.ResultOK {
				release(false)
			}
		}
		for _, h := range hs {
			<-h.answered // bounded: a released write's exchange has wt.timeout
		}
		return false
	})
}

// sendBuffered sends out upstream and reads the whole answer before any of
// it goes back; then lose (nil: never) decides whether to pass it back or
// to close the client's connection. f gets the upstream's times.
func (wt *Witness) sendBuffered(ctx context.Context, w http.ResponseWriter, r *http.Request, tap *bodyTap,
	out *http.Request, f *record.Fault, lose func(answer) bool) answer {
	f.Sent = time.Now()
	resp, foreign, err := wt.roundTrip(out)
	if err != nil {
		f.Answered = time.Now()
		return answer{err: wt.why(ctx, r, tap, "no answer", err), notSent: dialFailed(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHeldBody+1))
	f.Answered = time.Now()
	a := answer{status: resp.StatusCode, instance: resp.Header.Get(contract.HeaderInstanceID), bodyLen: int64(len(body)), foreign: foreign}
	var c capture
	c.add(body)
	a.body, a.truncated = c.buf, c.truncated
	switch {
	case err != nil:
		a.err = wt.why(ctx, r, tap, "answer cut short", err)
		return a
	case len(body) > maxHeldBody:
		a.err = fmt.Sprintf("witness: answer over %d bytes, not passed back", maxHeldBody)
		return a
	}
	if lose != nil && lose(a) {
		a.lost = true
		return a
	}
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	removeHopByHop(h)
	w.WriteHeader(resp.StatusCode)
	if _, werr := w.Write(body); werr != nil {
		a.err = "client went away while the answer was passed back: " + werr.Error()
	} else if ferr := http.NewResponseController(w).Flush(); ferr != nil {
		a.err = "client went away while the answer was passed back: " + ferr.Error()
	}
	return a
}

// nemesisAdmin adds POST record.PathNemesis to the admin mux: 409 unless
// the witness was started with the run-time nemesis (NemesisConfig.Runtime).
func (wt *Witness) nemesisAdmin(mux *http.ServeMux) {
	mux.HandleFunc("POST "+record.PathNemesis, func(w http.ResponseWriter, r *http.Request) {
		var req record.NemesisRequest
		if !decodeAdmin(w, r, &req) {
			return
		}
		if wt.nem == nil || !wt.nem.cfg.Runtime {
			http.Error(w, "the run-time nemesis is off (start the witness with --nemesis-runtime)", http.StatusConflict)
			return
		}
		st, err := wt.nem.set(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		writeAdmin(w, st)
	})
}
