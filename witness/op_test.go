package witness

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status  int
		err     string
		notSent bool
		want    record.Type
	}{
		{200, "", false, record.OK},
		{201, "", false, record.OK},
		{204, "", false, record.OK},
		{299, "", false, record.OK},
		{307, "", false, record.Fail}, // a redirect did not write
		{400, "", false, record.Fail},
		{404, "", false, record.Fail},
		{409, "", false, record.Fail}, // REJECT_STALE_EPOCH
		{422, "", false, record.Fail}, // IDEMPOTENCY_CONFLICT
		{499, "", false, record.Fail},
		{500, "", false, record.Info}, // the store may have committed
		{503, "", false, record.Info},
		{504, "", false, record.Info},
		{0, "upstream: no answer: EOF", false, record.Info},
		{200, "client went away while the answer was passed back", false, record.Info},
		{409, "upstream: answer cut short", false, record.Info},
		{100, "", false, record.Info},
		{0, "upstream: no answer: dial tcp: connection refused", true, record.Fail}, // never sent
	} {
		if got := classify(answer{status: c.status, err: c.err, notSent: c.notSent}); got != c.want {
			t.Errorf("classify(%d, %q, not sent %v) = %s, want %s", c.status, c.err, c.notSent, got, c.want)
		}
	}
}

func req(method, target string, hdr map[string]string, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.RemoteAddr = "10.244.1.7:41234"
	return r
}

func TestRequestOp(t *testing.T) {
	r := req("PUT", "/v1/records/a%2Fb%20c?x=1", map[string]string{
		contract.HeaderEpoch: "7", contract.HeaderIdempotencyKey: "term-7-00001",
		"X-Forwarded-For": "1.2.3.4", // never identity
	}, "v")
	op := requestOp(r)
	want := record.Operation{
		Type: record.Invoke, Source: "10.244.1.7:41234", Method: "PUT",
		Path: "/v1/records/a%2Fb%20c?x=1", Key: "a/b c",
		EpochHeader: "7", Epoch: 7, IdempotencyKey: "term-7-00001",
	}
	if op != want {
		t.Errorf("requestOp =\n%+v\nwant\n%+v", op, want)
	}
	if !op.EpochValid() {
		t.Error("EpochValid false for a good epoch")
	}
}

func TestRequestOpEpochs(t *testing.T) {
	for _, c := range []struct {
		header  string
		epoch   uint64
		errPart string
	}{
		{"", 0, ""},
		{"12", 12, ""},
		{"-1", 0, "must be a decimal uint64"},
		{"0x10", 0, "must be a decimal uint64"},
		{"18446744073709551616", 0, "overflows"},
	} {
		hdr := map[string]string{}
		if c.header != "" {
			hdr[contract.HeaderEpoch] = c.header
		}
		op := requestOp(req("POST", contract.PathFence, hdr, ""))
		if op.EpochHeader != c.header || op.Epoch != c.epoch || !strings.Contains(op.EpochError, c.errPart) || (c.errPart == "") != (op.EpochError == "") {
			t.Errorf("header %q: got raw %q epoch %d error %q, want epoch %d error containing %q",
				c.header, op.EpochHeader, op.Epoch, op.EpochError, c.epoch, c.errPart)
		}
		if op.EpochValid() != (c.header != "" && c.errPart == "") {
			t.Errorf("header %q: EpochValid = %v", c.header, op.EpochValid())
		}
	}
}

func TestRecordKey(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/records/k1":        "k1",
		"/v1/records/a%2Fb":     "a/b",
		"/v1/records/%E2%82%AC": "€",
		"/v1/records/":          "",
		"/v1/records/bad%zz":    "",
		"/v1/fence":             "",
		"/v1/recordsX/k":        "",
	} {
		if got := recordKey(path); got != want {
			t.Errorf("recordKey(%q) = %q, want %q", path, got, want)
		}
	}
	if op := requestOp(req("POST", "/v1/records/k", nil, "")); op.Key != "" {
		t.Errorf("POST got key %q; only PUT and GET name a record", op.Key)
	}
}

func TestFinish(t *testing.T) {
	put := requestOp(req("PUT", "/v1/records/k", map[string]string{contract.HeaderEpoch: "3"}, "v"))
	fence := requestOp(req("POST", contract.PathFence, map[string]string{contract.HeaderEpoch: "4"}, ""))
	v := value{n: 1, sha256: "abc"}
	for _, c := range []struct {
		name string
		op   record.Operation
		a    answer
		want func(record.Operation) bool
	}{
		{"ok write", put, answer{status: 200, body: []byte(`{"result":"OK","epoch":3}`)}, func(o record.Operation) bool {
			return o.Type == record.OK && o.Result == contract.ResultOK && o.ResultEpoch == 3 && o.ValueSHA256 == "abc" && o.ValueLen == 1
		}},
		{"stale write", put, answer{status: 409, body: []byte(`{"result":"REJECT_STALE_EPOCH","highest_epoch":5}`)}, func(o record.Operation) bool {
			return o.Type == record.Fail && o.Result == contract.ResultRejectStale && o.HighestEpoch == 5 && o.Error == ""
		}},
		{"fence", fence, answer{status: 200, body: []byte(`{"result":"OK","highest_epoch":4}`)}, func(o record.Operation) bool {
			return o.Type == record.OK && o.Result == contract.ResultOK && o.HighestEpoch == 4
		}},
		{"not json", put, answer{status: 200, body: []byte("<html>hello</html>")}, func(o record.Operation) bool {
			return o.Type == record.OK && o.Result == "" && o.Status == 200
		}},
		{"truncated answer not parsed", put, answer{status: 200, body: []byte(`{"result":"OK"`), truncated: true}, func(o record.Operation) bool {
			return o.Type == record.OK && o.Result == ""
		}},
		{"5xx is info", put, answer{status: 503, body: []byte(`{"result":"ERROR"}`)}, func(o record.Operation) bool {
			return o.Type == record.Info && strings.Contains(o.Error, "503") && o.Status == 503
		}},
		{"no answer", put, answer{err: "upstream timeout after 10s: no answer"}, func(o record.Operation) bool {
			return o.Type == record.Info && o.Status == 0 && o.Error == "upstream timeout after 10s: no answer"
		}},
	} {
		if got := finish(c.op, v, c.a); !c.want(got) {
			t.Errorf("%s: got %+v", c.name, got)
		}
	}
	if got := finish(fence, value{n: 0, sha256: "e3b0"}, answer{status: 200}); got.ValueSHA256 != "" {
		t.Errorf("a bodiless POST got a value hash %q", got.ValueSHA256)
	}
}

func TestOpLogDropsPastMax(t *testing.T) {
	l := newOpLog(2)
	now := time.Unix(100, 0)
	var slots []int
	for i := 0; i < 4; i++ {
		op, slot := l.invoke(record.Operation{Type: record.Invoke}, now)
		if op.ID != uint64(i+1) {
			t.Fatalf("op %d got ID %d", i, op.ID)
		}
		slots = append(slots, slot)
	}
	if slots[2] != -1 || slots[3] != -1 {
		t.Fatalf("slots past the limit = %v, want -1", slots)
	}
	l.complete(slots[0], record.Operation{ID: 1, Type: record.OK})
	l.complete(-1, record.Operation{ID: 3, Type: record.OK}) // dropped: ignored
	ops, dropped := l.snapshot()
	if dropped != 2 || len(ops) != 2 {
		t.Fatalf("kept %d dropped %d, want 2 and 2", len(ops), dropped)
	}
	if ops[0].Type != record.OK || ops[1].Type != record.Invoke || ops[1].ID != 2 {
		t.Errorf("ops = %+v: want 1 ok, 2 still invoke", ops)
	}
}

func TestCapture(t *testing.T) {
	var c capture
	c.add([]byte(strings.Repeat("a", answerCap-1)))
	if c.truncated {
		t.Fatal("truncated below the cap")
	}
	c.add([]byte("bc"))
	if !c.truncated || len(c.buf) != answerCap {
		t.Errorf("len %d truncated %v, want %d true", len(c.buf), c.truncated, answerCap)
	}
}
