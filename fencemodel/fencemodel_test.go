package fencemodel

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/contract"
)

func put(key, value string, epoch uint64, idem string) Input {
	return Input{Kind: Put, Key: key, Value: value, Epoch: epoch, Idem: idem}
}

var (
	ok      = func(e uint64) Output { return Output{Status: 200, Result: contract.ResultOK, Epoch: e} }
	dup     = func(e uint64) Output { return Output{Status: 200, Result: contract.ResultOKDup, Epoch: e} }
	staleAt = func(h uint64) Output { return Output{Status: 409, Result: contract.ResultRejectStale, Highest: h} }
	fenced  = func(h uint64) Output { return Output{Status: 200, Result: contract.ResultOK, Highest: h} }
	lost    = Output{Unknown: true, Why: "timeout"}
	missing = Output{Status: 404}
	found   = func(v string, e uint64) Output { return Output{Status: 200, Value: v, Epoch: e} }
)

// check runs ops one after the other (no overlap).
func check(ops ...any) bool {
	var h []porcupine.Operation
	for i := 0; i < len(ops); i += 2 {
		t := int64(i)
		h = append(h, porcupine.Operation{Input: ops[i], Output: ops[i+1], Call: t, Return: t + 1})
	}
	return porcupine.CheckOperations(Model(Start(0)), h)
}

func TestSequentialSpecification(t *testing.T) {
	cases := []struct {
		name string
		want bool
		ops  []any
	}{
		{"commit then read", true, []any{put("k", "a", 1, ""), ok(1), Input{Kind: Get, Key: "k"}, found("a", 1)}},
		{"read of nothing", true, []any{Input{Kind: Get, Key: "k"}, missing}},
		{"fence then stale put", true, []any{Input{Kind: Fence, Epoch: 3}, fenced(3), put("k", "a", 2, ""), staleAt(3)}},
		{"stale put names another floor", false, []any{Input{Kind: Fence, Epoch: 3}, fenced(3), put("k", "a", 2, ""), staleAt(4)}},
		{"ok below the floor", false, []any{Input{Kind: Fence, Epoch: 3}, fenced(3), put("k", "a", 2, ""), ok(2)}},
		{"fence below the floor acknowledged", false, []any{Input{Kind: Fence, Epoch: 3}, fenced(3), Input{Kind: Fence, Epoch: 2}, fenced(2)}},
		{"a put raises the floor", true, []any{put("k", "a", 5, ""), ok(5), Input{Kind: Floor}, Output{Status: 200, Highest: 5}}},
		{"a floor read that is not 200", false, []any{put("k", "a", 5, ""), ok(5), Input{Kind: Floor}, Output{Status: 500, Highest: 5}}},
		{"fence answer names the old floor", false, []any{put("k", "a", 5, ""), ok(5), Input{Kind: Fence, Epoch: 7}, fenced(5)}},
		{"OK_DUP with the retry's epoch", false, []any{put("k", "a", 1, "i"), ok(1), put("k", "a", 3, "i"), dup(3)}},
		{"409 names the request's epoch", false, []any{Input{Kind: Fence, Epoch: 3}, fenced(3), put("k", "a", 2, ""), staleAt(2)}},
		{"retry is OK_DUP with the first epoch, before the floor", true, []any{put("k", "a", 1, "i"), ok(1), Input{Kind: Fence, Epoch: 4}, fenced(4), put("k", "a", 1, "i"), dup(1)}},
		{"retry committed twice", false, []any{put("k", "a", 1, "i"), ok(1), put("k", "a", 1, "i"), ok(1)}},
		{"reuse for another value is 422", true, []any{put("k", "a", 1, "i"), ok(1), put("k", "b", 1, "i"), Output{Status: 422, Result: contract.ResultConflict}}},
		{"no epoch is 400", true, []any{Input{Kind: Put, Key: "k", NoEpoch: true}, Output{Status: 400, Result: contract.ResultBadRequest}}},
		{"no epoch committed", false, []any{Input{Kind: Put, Key: "k", NoEpoch: true}, ok(0)}},
		{"lost write applied later", true, []any{put("k", "a", 1, ""), lost, Input{Kind: Get, Key: "k"}, missing, Input{Kind: Get, Key: "k"}, found("a", 1)}},
		{"lost write never applied", true, []any{put("k", "a", 1, ""), lost, Input{Kind: Get, Key: "k"}, missing}},
		{"lost write lands after a later one", true, []any{put("k", "a", 1, ""), lost, put("k", "b", 1, ""), ok(1), Input{Kind: Get, Key: "k"}, found("a", 1)}},
		{"lost write cannot land after a higher fence", false, []any{put("k", "a", 1, ""), lost, Input{Kind: Fence, Epoch: 2}, fenced(2), Input{Kind: Get, Key: "k"}, missing, Input{Kind: Get, Key: "k"}, found("a", 1)}},
		{"lost write cannot come back after it was read applied", false, []any{put("k", "a", 1, ""), lost, Input{Kind: Get, Key: "k"}, found("a", 1), Input{Kind: Get, Key: "k"}, missing}},
		{"a value nobody wrote", false, []any{put("k", "a", 1, ""), ok(1), Input{Kind: Get, Key: "k"}, found("z", 1)}},
	}
	for _, c := range cases {
		if got := check(c.ops...); got != c.want {
			t.Errorf("%s: linearizable=%v, want %v", c.name, got, c.want)
		}
	}
}

func TestForgetSingleUse(t *testing.T) {
	ops := []porcupine.Operation{{Input: put("k", "a", 1, "once")}, {Input: put("k", "a", 1, "twice")}, {Input: put("k", "a", 1, "twice")}}
	ForgetSingleUse(ops)
	if ops[0].Input.(Input).Idem != "" || ops[1].Input.(Input).Idem != "twice" || ops[2].Input.(Input).Idem != "twice" {
		t.Errorf("got %+v", ops)
	}
}
