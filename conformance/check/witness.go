package check

import (
	"fmt"
	"sort"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// exchange is what both witnesses can say of one write or fence: the
// request (op, key, epoch, idempotency key, value hash) and the answer.
type exchange struct {
	op, key, idem, value string
	epoch                uint64
}

func (x exchange) String() string {
	if x.op == contract.OpFence {
		return fmt.Sprintf("fence epoch %d", x.epoch)
	}
	return fmt.Sprintf("put %s epoch %d idem %q value sha256 %.12s", x.key, x.epoch, x.idem, x.value)
}

// withoutValue is x with no value hash: a request the sink may have read
// only part of.
func (x exchange) withoutValue() exchange { x.value = ""; return x }

func sinkExchange(a contract.Attempt) exchange {
	if a.Op == contract.OpFence {
		return exchange{op: contract.OpFence, epoch: a.Epoch}
	}
	return exchange{op: contract.OpPut, key: a.Key, idem: a.IdempotencyKey, value: a.ValueHash(), epoch: a.Epoch}
}

// witnessExchange is the write or fence an operation sent; ok is false for
// reads and for requests that are neither.
func witnessExchange(o record.Operation) (exchange, bool) {
	switch {
	case o.Method == "PUT" && o.Key != "":
		return exchange{op: contract.OpPut, key: o.Key, idem: o.IdempotencyKey, value: o.ValueSHA256, epoch: o.Epoch}, true
	case o.Method == "POST" && o.Path == contract.PathFence:
		return exchange{op: contract.OpFence, epoch: o.Epoch}, true
	}
	return exchange{}, false
}

// checkWitnessAgrees cross-checks the sink's own history against the
// witness the harness owns: every answer a client saw is an attempt the
// sink recorded with the same request and result, and the sink records no
// attempt that no client sent. A sink whose history hides a commit, or
// whose answers differ from its records, fails here.
func checkWitnessAgrees(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history recorded")
		return e.verdict()
	}
	recorded := map[exchange]map[string]int{} // the sink's results per exchange
	sent := map[exchange]int{}                // the witness's operations that may have reached the sink
	for _, a := range s.Attempts {
		x := sinkExchange(a)
		if recorded[x] == nil {
			recorded[x] = map[string]int{}
		}
		recorded[x][a.Result]++
	}
	seen := map[exchange]map[string]int{} // the definite answers clients saw
	// Forwards that got no answer (the client went away, the upstream
	// failed) may have been cut mid-body: the sink then read a prefix and
	// refused it (BAD_REQUEST) under another value hash. Counted by the
	// request without its value, for those refusals only.
	cut := map[exchange]int{}
	answered, reached := 0, 0
	for _, o := range s.Witness.Operations {
		x, ok := witnessExchange(o)
		if !ok || o.ValuePartial {
			continue
		}
		if o.Type == record.Fail && o.Status == 0 {
			continue // never dialled: nothing reached the sink
		}
		sent[x]++
		reached++
		if o.Type == record.Info {
			cut[x.withoutValue()]++
		}
		if (o.Type == record.OK || o.Type == record.Fail) && o.Result != "" {
			if seen[x] == nil {
				seen[x] = map[string]int{}
			}
			seen[x][o.Result]++
			answered++
		}
	}
	for _, x := range sortedExchanges(seen) {
		for result, n := range seen[x] {
			if got := recorded[x][result]; got < n {
				e.failf("a client was answered %s %d time(s) for %s; the sink's history records it %d time(s)", result, n, x, got)
			}
		}
	}
	truncated := 0
	for _, x := range sortedExchanges(recorded) {
		total := 0
		for _, n := range recorded[x] {
			total += n
		}
		// A refusal of a body the sink got cut short is the cut forward's.
		for over := total - sent[x]; over > 0 && recorded[x][contract.ResultBadRequest] > 0 && cut[x.withoutValue()] > 0; over-- {
			recorded[x][contract.ResultBadRequest]--
			cut[x.withoutValue()]--
			total--
			truncated++
		}
		if total > sent[x] {
			e.failf("the sink's history has %d attempt(s) of %s; the witness saw %d sent", total, x, sent[x])
		}
	}
	if !e.fail {
		e.addf("%d writes and fences reached the sink through the witness, %d answered; the sink's %d attempts agree with them", reached, answered, len(s.Attempts))
		if truncated > 0 {
			e.addf("%d of them refused BAD_REQUEST with a body other than the one sent: forwards the witness got no answer for, cut mid-body", truncated)
		}
	}
	return e.verdict()
}

func sortedExchanges[V any](m map[exchange]V) []exchange {
	out := make([]exchange, 0, len(m))
	for x := range m {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
