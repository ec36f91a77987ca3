package witness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// The sink-crash nemesis: while the harness SIGKILLs and restarts the sink
// it closes the gate, so no client request reaches the restarted sink
// before the harness's probe has asked it whether it still knows its floor
// (a sink that forgot it would re-learn it from the first write of the
// current term). A refused request is never forwarded: the client's
// connection is broken, as the dead sink's would be, and the operation is
// recorded as a fail (certainly no effect) with the gate's reason.

// Admin paths of the nemesis (on the admin listener, never the proxied one).
const (
	PathGate  = record.PathGate
	PathProbe = record.PathProbe
)

// ProbeSource is the Source of the harness's probe operations: no client
// address, so no pod is ever credited with it.
const ProbeSource = "harness"

// The admin requests' types are in witness/record (GateRequest,
// GateState, ProbeRequest), so the harness needs no import of the proxy.
type (
	GateRequest  = record.GateRequest
	GateState    = record.GateState
	ProbeRequest = record.ProbeRequest
)

// gate refuses client requests while closed.
type gate struct {
	mu      sync.Mutex
	reason  string // "" while open
	refused uint64
}

func (g *gate) set(req GateRequest) GateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reason = ""
	if req.Closed {
		g.reason = "refused by the witness: " + req.Reason
		if req.Reason == "" {
			g.reason = "refused by the witness: gate closed by the harness"
		}
	}
	return GateState{Closed: g.reason != "", Refused: g.refused}
}

// closed returns the reason to refuse a request now, counting it, or "".
func (g *gate) closed() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reason != "" {
		g.refused++
	}
	return g.reason
}

// refused records r as refused when the gate is closed; the caller then
// breaks the client's connection (nothing is forwarded, nothing invented).
func (wt *Witness) refused(r *http.Request) bool {
	why := wt.gate.closed()
	if why == "" {
		return false
	}
	op, slot := wt.log.invoke(requestOp(r), time.Now())
	wt.met.inFlight.Inc()
	op = finish(op, newBodyTap(r.Body).value(), answer{err: why, notSent: true})
	op.Completed = time.Now()
	wt.log.complete(slot, op)
	wt.met.done(op, slot < 0)
	if wt.completed != nil {
		wt.completed(op)
	}
	return true
}

// Probe sends pr upstream as a PUT (past the gate), records it with
// Harness set to record.HarnessProbe, and returns the recorded operation.
func (wt *Witness) Probe(pr ProbeRequest) (record.Operation, error) {
	r, err := probeRequest(pr)
	if err != nil {
		return record.Operation{}, err
	}
	tap := newBodyTap(r.Body)
	op := requestOp(r)
	op.Harness = record.HarnessProbe
	op, slot := wt.log.invoke(op, time.Now())
	wt.met.inFlight.Inc()
	a := wt.forward(&answerBuffer{header: http.Header{}}, r, tap)
	op = finish(op, tap.value(), a)
	op.Harness = record.HarnessProbe
	op.Completed = time.Now()
	wt.log.complete(slot, op)
	wt.met.done(op, slot < 0)
	if wt.completed != nil {
		wt.completed(op)
	}
	return op, nil
}

// probeRequest is pr as the request a client would have sent.
func probeRequest(pr ProbeRequest) (*http.Request, error) {
	switch {
	case pr.Key == "":
		return nil, errors.New("probe: no key")
	case pr.IdempotencyKey != "" && contract.ValidIdempotencyKey(pr.IdempotencyKey) != nil:
		return nil, fmt.Errorf("probe: %w", contract.ValidIdempotencyKey(pr.IdempotencyKey))
	}
	body := []byte(pr.Value)
	r, err := http.NewRequest(http.MethodPut, "http://witness"+contract.RecordPath(pr.Key), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	r.RemoteAddr = ProbeSource
	r.Header.Set(contract.HeaderEpoch, strconv.FormatUint(pr.Epoch, 10))
	if pr.IdempotencyKey != "" {
		r.Header.Set(contract.HeaderIdempotencyKey, pr.IdempotencyKey)
	}
	if pr.Authorization != "" {
		r.Header.Set("Authorization", pr.Authorization)
	}
	return r, nil
}

// answerBuffer is the ResponseWriter of a probe: the harness reads the
// outcome from the recorded operation, so the body is only counted.
type answerBuffer struct {
	header http.Header
	n      int
}

func (b *answerBuffer) Header() http.Header         { return b.header }
func (b *answerBuffer) WriteHeader(int)             {}
func (b *answerBuffer) Write(p []byte) (int, error) { b.n += len(p); return len(p), nil }
func (b *answerBuffer) Flush()                      {}

// crashAdmin adds the nemesis's paths to the admin mux.
func (wt *Witness) crashAdmin(mux *http.ServeMux) {
	mux.HandleFunc("POST "+PathGate, func(w http.ResponseWriter, r *http.Request) {
		var req GateRequest
		if !decodeAdmin(w, r, &req) {
			return
		}
		writeAdmin(w, wt.gate.set(req))
	})
	mux.HandleFunc("POST "+PathProbe, func(w http.ResponseWriter, r *http.Request) {
		var req ProbeRequest
		if !decodeAdmin(w, r, &req) {
			return
		}
		op, err := wt.Probe(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeAdmin(w, op)
	})
}

// decodeAdmin reads a small JSON body into v, answering 400 when it is not one.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "bad request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeAdmin(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
