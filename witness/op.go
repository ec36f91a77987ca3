package witness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// The pure half of the witness: an operation from a request, and its
// outcome from what came back. No sockets; op_test.go drives it directly.

// answerCap bounds how much of an answer body is kept for parsing: write
// and fence answers are tiny, and a record read needs no parsing here.
const answerCap = 8 << 10

// requestOp is the invocation half of r's operation (ID and Invoked are
// stamped by the log, the value by the body tap).
func requestOp(r *http.Request) record.Operation {
	op := record.Operation{
		Type:           record.Invoke,
		Source:         r.RemoteAddr,
		Method:         r.Method,
		Path:           r.URL.EscapedPath(),
		EpochHeader:    r.Header.Get(contract.HeaderEpoch),
		IdempotencyKey: r.Header.Get(contract.HeaderIdempotencyKey),
	}
	if r.URL.RawQuery != "" {
		op.Path += "?" + r.URL.RawQuery
	}
	if r.Method == http.MethodPut || r.Method == http.MethodGet {
		op.Key = recordKey(r.URL.EscapedPath())
	}
	if op.EpochHeader != "" {
		e, err := contract.ParseEpoch(op.EpochHeader)
		if err != nil {
			op.EpochError = err.Error()
		} else {
			op.Epoch = e
		}
	}
	return op
}

// recordKey is the unescaped {key} of /v1/records/{key}, "" for any other
// path or an escaping that does not decode (the sink rejects those).
func recordKey(escapedPath string) string {
	rest, ok := strings.CutPrefix(escapedPath, contract.PathRecords)
	if !ok || rest == "" {
		return ""
	}
	k, err := url.PathUnescape(rest)
	if err != nil {
		return ""
	}
	return k
}

// answer is what the proxy saw come back for one request.
type answer struct {
	status    int    // the upstream's status, 0 if no answer came
	body      []byte // the answer body's first bytes, at most answerCap
	bodyLen   int64  // bytes of answer body passed back
	truncated bool   // body is only a prefix of the answer
	err       string // why there is no definite answer; "" when there is
	instance  string // the sink's contract.HeaderInstanceID, if it sent one
	foreign   string // the peer that answered without one (see roundTrip)
	// notSent: the upstream could not be reached (dial failed), so the
	// request certainly took no effect.
	notSent bool
	// lost: a definite answer the nemesis did not pass back (it closes the
	// client's connection instead); the operation keeps its type.
	lost bool
}

// value is what the body tap saw of the request body.
type value struct {
	n       int64
	sha256  string
	partial bool
}

// classify is the Jepsen type of an exchange. A 5xx is info, not fail: a
// sink that failed or timed out may have committed before it answered. A
// request that never left is fail: nothing can have taken effect.
func classify(a answer) record.Type {
	switch {
	case a.notSent:
		return record.Fail
	case a.err != "":
		return record.Info
	case a.status >= 200 && a.status < 300:
		return record.OK
	case a.status >= 300 && a.status < 500:
		return record.Fail
	}
	return record.Info
}

// finish fills in the outcome half of op.
func finish(op record.Operation, v value, a answer) record.Operation {
	op.ValueLen = v.n
	op.ValuePartial = v.partial
	if op.Method == http.MethodPut || v.n > 0 {
		op.ValueSHA256 = v.sha256
	}
	op.Status = a.status
	op.SinkInstance = a.instance
	op.ForeignPeer = a.foreign
	op.AnswerLen = a.bodyLen
	op.Error = a.err
	op.Type = classify(a)
	if op.Type == record.Info && a.err == "" {
		op.Error = fmt.Sprintf("upstream answered %d: outcome unknown", a.status)
	}
	if a.status != 0 && !a.truncated {
		parseResult(&op, a.body)
	}
	return op
}

// parseResult copies the result code and epochs of a write or fence answer.
// A body that is not JSON leaves them empty: Status still says what came.
func parseResult(op *record.Operation, body []byte) {
	switch {
	case op.Method == http.MethodPut && op.Key != "":
		var wr contract.WriteResponse
		if json.Unmarshal(body, &wr) == nil {
			op.Result, op.ResultEpoch, op.HighestEpoch = wr.Result, wr.Epoch, wr.HighestEpoch
		}
	case op.Path == contract.PathFence:
		var fr contract.FenceResponse
		if json.Unmarshal(body, &fr) == nil {
			op.Result, op.HighestEpoch = fr.Result, fr.HighestEpoch
		}
	}
}
