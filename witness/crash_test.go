package witness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fixtures/sink/boltstore"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
	"github.com/fencecheck/fencecheck/witness/record"
)

// A closed gate forwards nothing: the client's connection breaks and the
// operation is a fail (certainly no effect) carrying the gate's reason.
// The probe goes past the gate, carries the token it was handed upstream,
// and is recorded as harness traffic without it.
func TestGateRefusesAndProbePasses(t *testing.T) {
	var forwarded atomic.Int32
	var gotAuth atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		gotAuth.Store(r.Header.Get("Authorization"))
		w.Header().Set(contract.HeaderInstanceID, "sink-2")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"result":"REJECT_STALE_EPOCH","highest_epoch":7}`))
	}))
	t.Cleanup(up.Close)
	r := startRig(t, Config{Upstream: up.URL})
	admin := httptest.NewServer(r.wt.Admin())
	t.Cleanup(admin.Close)

	var st GateState
	postJSON(t, admin.URL+PathGate, GateRequest{Closed: true, Reason: "sink restarting"}, &st)
	if !st.Closed {
		t.Fatalf("gate state %+v, want closed", st)
	}
	req, _ := http.NewRequest(http.MethodPut, r.url+"/v1/records/row-001", strings.NewReader("v"))
	req.Header.Set(contract.HeaderEpoch, "7")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a refused request was answered %s; want a broken connection", resp.Status)
	}
	op := r.next(t)
	if op.Type != record.Fail || op.Status != 0 || !strings.Contains(op.Error, "sink restarting") || op.Harness != "" || forwarded.Load() != 0 {
		t.Fatalf("refused op %+v (forwarded %d), want a fail naming the gate, nothing forwarded", op, forwarded.Load())
	}

	var probe record.Operation
	postJSON(t, admin.URL+PathProbe, ProbeRequest{Key: "fencecheck-probe", Value: "below", Epoch: 6, Authorization: "Bearer s3cret"}, &probe)
	if probe.Harness != record.HarnessProbe || probe.Source != ProbeSource || probe.Type != record.Fail || probe.Status != 409 ||
		probe.Result != contract.ResultRejectStale || probe.HighestEpoch != 7 || probe.Epoch != 6 || probe.Key != "fencecheck-probe" || probe.SinkInstance != "sink-2" {
		t.Fatalf("probe op %+v", probe)
	}
	if gotAuth.Load() != "Bearer s3cret" {
		t.Errorf("upstream saw Authorization %q, want the token the probe was handed", gotAuth.Load())
	}
	r.next(t) // the probe, also seen by the completion hook
	postJSON(t, admin.URL+PathGate, GateRequest{Closed: false}, &st)
	if st.Closed || st.Refused != 1 {
		t.Fatalf("gate state %+v, want open after 1 refusal", st)
	}
	resp, err := http.Post(r.url+"/v1/fence", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r.next(t).Status != 409 || forwarded.Load() != 2 {
		t.Fatalf("an open gate must forward (forwarded %d)", forwarded.Load())
	}
	h := r.wt.History()
	b, _ := json.Marshal(h)
	if bytes.Contains(b, []byte("s3cret")) {
		t.Error("the history records the probe's token")
	}
	if len(h.Operations) != 3 {
		t.Errorf("history has %d operations, want refused + probe + fence", len(h.Operations))
	}
}

func TestProbeRejectsBadInput(t *testing.T) {
	r := startRig(t, Config{Upstream: "http://127.0.0.1:1"})
	admin := httptest.NewServer(r.wt.Admin())
	t.Cleanup(admin.Close)
	for _, body := range []string{`{"epoch":1}`, `{"key":"k","idempotency_key":"bad key\n"}`, `{"key":"k","bogus":1}`, `not json`} {
		resp, err := http.Post(admin.URL+PathProbe, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s %s, want 400", body, resp.Status, b)
		}
	}
	if n := len(r.wt.History().Operations); n != 0 {
		t.Errorf("bad probes recorded %d operations", n)
	}
}

func postJSON(t *testing.T, url string, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s", url, resp.Status, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// Against the real sink and its forget-floor control: after a restart on
// the same store the probe below the floor is refused by the reference
// sink and committed by the one that kept its floor in memory; both
// answer with a new instance id.
func TestProbeAfterRestartOfTheRealSink(t *testing.T) {
	for variant, want := range map[string]int{"": http.StatusConflict, "forget-floor": http.StatusOK} {
		t.Run("variant="+variant, func(t *testing.T) {
			dir := t.TempDir()
			sk := sinktest.Start(t, func(context.Context) (store.Store, error) { return boltstore.Open(dir) }, variant)
			r := startRig(t, Config{Upstream: sk.URL})
			c := &client.Client{BaseURL: r.url, HTTP: http.DefaultClient}
			ctx := context.Background()
			if _, _, err := c.Fence(ctx, 2); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Put(ctx, "row-000", []byte("v"), 2, "k1"); err != nil {
				t.Fatal(err)
			}
			before := r.next(t)
			r.next(t)
			r.wt.gate.set(GateRequest{Closed: true, Reason: "restarting"})
			if err := sk.Kill(ctx); err != nil {
				t.Fatal(err)
			}
			op, err := r.wt.Probe(ProbeRequest{Key: "fencecheck-probe", Value: "p", Epoch: 1, IdempotencyKey: "probe.1"})
			if err != nil {
				t.Fatal(err)
			}
			r.next(t)
			if op.Status != want || op.SinkInstance == "" || op.SinkInstance == before.SinkInstance {
				t.Fatalf("probe %+v (before: instance %s), want status %d from a new instance", op, before.SinkInstance, want)
			}
		})
	}
}
