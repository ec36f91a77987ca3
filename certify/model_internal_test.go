package certify

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/certify/modelseq"
	"github.com/fencecheck/fencecheck/fencemodel"
)

// Answers are read strictly: an epoch is a u64 written as plain digits,
// a result a string, a record the one asked for; each other shape is
// named, not read as some number.
func TestDecodeAnswerIsStrict(t *testing.T) {
	put := modelseq.Request{Kind: fencemodel.Put, Key: "k", Value: "v", Epoch: 7}
	get := modelseq.Request{Kind: fencemodel.Get, Key: "k"}
	floor := modelseq.Request{Kind: fencemodel.Floor}
	for _, c := range []struct {
		req     modelseq.Request
		status  int
		body    string
		bad     string // "" for a good answer
		epoch   uint64
		highest uint64
	}{
		{put, 200, `{"result":"OK","epoch":7}`, "", 7, 0},
		{put, 200, `{"result":"OK"}`, "", 0, 0}, // omitempty: 0
		{put, 200, `{"result":"OK","epoch":18446744073709551615}`, "", 1<<64 - 1, 0},
		{put, 200, `{"result":"OK","epoch":18446744073709551616}`, "above 2^64-1", 0, 0},
		{put, 200, `{"result":"OK","epoch":1.8446744073709552e19}`, "plain digits", 0, 0},
		{put, 200, `{"result":"OK","epoch":9007199254740993.0}`, "plain digits", 0, 0},
		{put, 200, `{"result":"OK","epoch":-1}`, "plain digits", 0, 0},
		{put, 200, `{"result":"OK","epoch":"7"}`, "plain digits", 0, 0},
		{put, 200, `{"result":"OK","epoch":07}`, "not a JSON object", 0, 0},
		{put, 200, `{"epoch":7}`, `no "result"`, 0, 0},
		{put, 200, `{"result":1,"epoch":7}`, "not a string", 0, 0},
		{put, 200, `OK`, "not a JSON object", 0, 0},
		{put, 409, `{"result":"REJECT_STALE_EPOCH","highest_epoch":9}`, "", 0, 9},
		{put, 422, `{"result":"IDEMPOTENCY_CONFLICT"}`, "", 0, 0},
		{put, 500, `oops`, "", 0, 0}, // the status says it
		{put, 400, `not json`, "", 0, 0},
		{floor, 200, `{"highest_epoch":12}`, "", 0, 12},
		{get, 200, `{"key":"k","value":"v","epoch":3}`, "", 3, 0},
		{get, 200, `{"key":"j","value":"v","epoch":3}`, "the record of key", 0, 0},
		{get, 200, `{"key":"k","epoch":3}`, `no "value"`, 0, 0},
		{get, 404, ``, "", 0, 0},
	} {
		out, bad := decodeAnswer(c.req, c.status, []byte(c.body))
		switch {
		case c.bad == "" && bad != "":
			t.Errorf("%d %s: bad %q", c.status, c.body, bad)
		case c.bad != "" && !strings.Contains(bad, c.bad):
			t.Errorf("%d %s: bad %q, want it to say %q", c.status, c.body, bad, c.bad)
		case c.bad == "" && (out.Status != c.status || out.Epoch != c.epoch || out.Highest != c.highest):
			t.Errorf("%d %s: read %+v", c.status, c.body, out)
		}
	}
}
