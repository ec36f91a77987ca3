package fencemodel

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fixtures/sink/fence"
)

// refSink is the reference sink's rule (fence.Decide) over an in-memory
// store: what boltstore and pgstore do in one transaction.
type refSink struct {
	floor uint64
	recs  map[string]Record
	idem  map[string]fence.Prior
}

func (r *refSink) do(in Input) Output {
	switch in.Kind {
	case Get:
		if rec, ok := r.recs[in.Key]; ok {
			return Output{Status: contract.StatusOK, Value: rec.Value, Epoch: rec.Epoch}
		}
		return Output{Status: contract.StatusNotFound}
	case Floor:
		return Output{Status: contract.StatusOK, Highest: r.floor}
	}
	req := fence.Request{Op: contract.OpPut, Key: in.Key, Value: []byte(in.Value), Epoch: in.Epoch, IdempotencyKey: in.Idem}
	if in.Kind == Fence {
		req = fence.Request{Op: contract.OpFence, Epoch: in.Epoch}
	}
	if in.NoEpoch {
		req.Epoch, req.EpochErr = 0, errors.New("missing")
	}
	st := fence.State{Floor: r.floor}
	if p, ok := r.idem[in.Idem]; ok && in.Idem != "" && in.Kind == Put {
		st.Prior = &p
	}
	d := fence.Decide(st, req)
	if d.Commit {
		r.recs[in.Key] = Record{Value: in.Value, Epoch: d.Epoch}
		if in.Idem != "" {
			r.idem[in.Idem] = fence.Prior{Key: in.Key, ValueHash: fence.Hash(req.Value), Epoch: d.Epoch}
		}
	}
	r.floor = d.Floor
	return Output{Status: d.Status, Result: d.Result, Epoch: d.Epoch, Highest: d.HighestEpoch}
}

// The model and the reference rule are one definition of the contract:
// on random sequences (small pools of keys, values and idempotency keys,
// epochs around the floor and at the ends of the u64 range) every answer
// of fence.Decide is the one Expect gives, field by field, and no other
// answer to the same request matches it.
func TestExpectIsTheReferenceRule(t *testing.T) {
	epochs := []uint64{0, 1, 2, 3, 1<<31 - 1, 1 << 31, 1<<53 + 1, 1<<63 - 1, 1 << 63, ^uint64(0) - 1, ^uint64(0)}
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ref := &refSink{recs: map[string]Record{}, idem: map[string]fence.Prior{}}
		st := Start(0)
		for i := range 60 {
			in := Input{Kind: Kind(rng.Intn(4)), Key: string(rune('a' + rng.Intn(3))), Value: string(rune('u' + rng.Intn(3)))}
			switch r := rng.Intn(10); {
			case r < 5:
				in.Epoch = st.Floor + uint64(rng.Intn(3)) - min(st.Floor, 1)
			case r < 9:
				in.Epoch = epochs[rng.Intn(len(epochs))]
			default:
				in.NoEpoch = true
			}
			if rng.Intn(2) == 0 {
				in.Idem = string(rune('i' + rng.Intn(3)))
			}
			got := ref.do(in)
			want, next := Expect(st, in)
			if !Matches(in, want, got) {
				t.Fatalf("seed %d step %d: %s, but the model expects %s", seed, i, Describe(in, got), Describe(in, want))
			}
			for _, other := range []Output{
				{Status: got.Status, Result: got.Result, Epoch: got.Epoch + 1, Highest: got.Highest, Value: got.Value},
				{Status: got.Status, Result: got.Result, Epoch: got.Epoch, Highest: got.Highest + 1, Value: got.Value},
				{Status: got.Status + 1, Result: got.Result, Epoch: got.Epoch, Highest: got.Highest, Value: got.Value},
			} {
				if Matches(in, want, other) && fixes(in, want, other, got) {
					t.Fatalf("seed %d step %d: %s matched the model's %s too", seed, i, Describe(in, other), Describe(in, want))
				}
			}
			if len(Step(st, in, got)) != 1 {
				t.Fatalf("seed %d step %d: porcupine's Step does not accept %s", seed, i, Describe(in, got))
			}
			st = next
			if st.Floor != ref.floor {
				t.Fatalf("seed %d step %d: model floor %d, reference floor %d", seed, i, st.Floor, ref.floor)
			}
		}
	}
}

// fixes reports whether the field other changes from got is one the
// contract fixes for this answer (the epoch of a put's 200 or a found
// record, the floor of a fence, a 409 or a floor read, the status always).
func fixes(in Input, want, other, got Output) bool {
	switch {
	case other.Status != got.Status:
		return true
	case want.Status == contract.StatusBadRequest, want.Status == contract.StatusNotFound, want.Result == contract.ResultConflict:
		return false
	case other.Epoch != got.Epoch:
		return in.Kind == Get || in.Kind == Put && want.Status == contract.StatusOK
	}
	return in.Kind == Fence || in.Kind == Floor || want.Status == contract.StatusConflict
}
