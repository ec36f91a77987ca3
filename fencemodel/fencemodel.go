// Package fencemodel is the sink contract's fenced register as a porcupine
// model: one floor for the sink, one record per key, and the committed
// idempotency keys. certify checks its concurrent workload against it and
// the conformance check `linearizable` checks the witness's history against
// it, so both judge by one specification. Values are opaque identities the
// caller chooses (the value itself, or its SHA-256).
package fencemodel

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/contract"
)

// Kind is what an operation does.
type Kind int

const (
	Put   Kind = iota // PUT /v1/records/{key}
	Fence             // POST /v1/fence
	Get               // GET /v1/records/{key}
	Floor             // GET /v1/fence
)

func (k Kind) String() string { return [...]string{"put", "fence", "get", "floor"}[k] }

// Input is one request.
type Input struct {
	Kind  Kind
	Key   string
	Value string // the value's identity (put)
	Epoch uint64
	// NoEpoch: the epoch header was missing or malformed; the contract
	// answers 400 and changes nothing.
	NoEpoch bool
	Idem    string // Idempotency-Key, "" for none
	// Label names the request in descriptions (e.g. the witness's op id);
	// it has no effect on the model.
	Label string
}

// Output is its answer.
type Output struct {
	// Unknown: no definite answer (lost, timed out, not a contract
	// answer); the operation may or may not have taken effect.
	Unknown bool
	Why     string // why Unknown, for descriptions
	Status  int
	Result  string
	Epoch   uint64 // put: the committed epoch (OK, OK_DUP); get: the record's
	Highest uint64 // 409, fence, floor: the sink's floor
	Value   string // get: the record's value identity
}

// Record is one key's current record.
type Record struct {
	Value string
	Epoch uint64
}

// prior is a committed idempotency key: the request it committed.
type prior struct {
	key, value string
	epoch      uint64
}

// State is the register. Its maps are never written after a State is made
// (each step copies what it changes), so states share them safely; h is an
// order-independent hash of their entries, kept up to date on each change,
// so Equal and Hash rarely walk the maps.
//
// pend are the writes and fences whose answer was lost and that may still
// take effect: before each later operation any of them may apply, in any
// order. Keeping them in the state (rather than leaving the operations
// open to the end of the history) lets porcupine track every outcome of a
// lost answer in one set of states instead of searching every place it
// could go, which is what keeps a violation quick to find.
type State struct {
	Floor uint64
	recs  map[string]Record
	idem  map[string]prior
	pend  []Input
	h     uint64
}

// Start is the state of a fresh sink with the given floor.
func Start(floor uint64) State { return State{Floor: floor} }

// Record returns key's record.
func (s State) Record(key string) (Record, bool) { r, ok := s.recs[key]; return r, ok }

func hashOf(parts ...any) uint64 {
	f := fnv.New64a()
	fmt.Fprint(f, parts...)
	return f.Sum64()
}

// commit is s with key's record set, the floor raised and idem remembered.
func (s State) commit(in Input) State {
	next := State{Floor: max(s.Floor, in.Epoch), recs: make(map[string]Record, len(s.recs)+1), idem: s.idem, pend: s.pend, h: s.h}
	for k, r := range s.recs {
		next.recs[k] = r
	}
	if old, ok := s.recs[in.Key]; ok {
		next.h ^= hashOf("r", in.Key, "\x00", old.Value, "\x00", old.Epoch)
	}
	next.recs[in.Key] = Record{in.Value, in.Epoch}
	next.h ^= hashOf("r", in.Key, "\x00", in.Value, "\x00", in.Epoch)
	if in.Idem != "" {
		next.idem = make(map[string]prior, len(s.idem)+1)
		for k, p := range s.idem {
			next.idem[k] = p
		}
		next.idem[in.Idem] = prior{in.Key, in.Value, in.Epoch}
		next.h ^= hashOf("i", in.Idem, "\x00", in.Key, "\x00", in.Value, "\x00", in.Epoch)
	}
	return next
}

func equal(a, b State) bool {
	if a.Floor != b.Floor || a.h != b.h || len(a.recs) != len(b.recs) || len(a.idem) != len(b.idem) || !samePending(a.pend, b.pend) {
		return false
	}
	for k, r := range a.recs {
		if o, ok := b.recs[k]; !ok || o != r {
			return false
		}
	}
	for k, p := range a.idem {
		if o, ok := b.idem[k]; !ok || o != p {
			return false
		}
	}
	return true
}

func (s State) hash() uint64 {
	h := s.h ^ hashOf("f", s.Floor)
	for _, p := range s.pend {
		h ^= pendHash(p)
	}
	return h
}

// samePending compares two small multisets.
func samePending(a, b []Input) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && x == y {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func pendHash(p Input) uint64 {
	return hashOf("p", p.Kind, "\x00", p.Key, "\x00", p.Value, "\x00", p.Epoch, "\x00", p.Idem)
}

// mayApply: in could still take effect in s, now or later (the floor
// never goes down, and a committed idempotency key stays committed).
func (s State) mayApply(in Input) bool {
	if in.NoEpoch || in.Epoch < s.Floor {
		return false
	}
	_, dup := s.idem[in.Idem]
	return in.Kind != Put || in.Idem == "" || !dup
}

// withPending is s with in pending, or s when in can never apply.
func (s State) withPending(in Input) State {
	if !s.mayApply(in) {
		return s
	}
	s.pend = append(append([]Input(nil), s.pend...), in)
	return s
}

// pruned is s without the pending operations that can no longer apply.
func (s State) pruned() State {
	keep := s.pend[:0:0]
	for _, p := range s.pend {
		if s.mayApply(p) {
			keep = append(keep, p)
		}
	}
	s.pend = keep
	return s
}

// settle is every state s can reach by applying pending operations.
func settle(s State) []State {
	if len(s.pend) == 0 {
		return []State{s}
	}
	out := []State{s.pruned()}
	for i := 0; i < len(out); i++ {
		cur := out[i]
		for j, p := range cur.pend {
			next := cur
			next.pend = append(append([]Input(nil), cur.pend[:j]...), cur.pend[j+1:]...)
			if p.Kind == Put {
				next = next.commit(p)
			} else {
				next = next.raise(p.Epoch)
			}
			next = next.pruned()
			seen := false
			for _, o := range out {
				if equal(o, next) {
					seen = true
					break
				}
			}
			if !seen {
				out = append(out, next)
			}
		}
	}
	return out
}

// raise is a fence's effect.
func (s State) raise(epoch uint64) State {
	s.Floor = max(s.Floor, epoch)
	return s
}

// Step is the contract's rule (fixtures/sink/fence.Decide) as transitions:
// every state the sink may be in after answering in with out, none if no
// sink following the contract could have answered so. Pending operations
// may apply first.
func Step(st State, in Input, out Output) []State {
	var next []State
	for _, s := range settle(st) {
		next = append(next, step(s, in, out)...)
	}
	return next
}

// step is one operation on a settled state. A write or fence with a lost
// answer becomes pending: it may apply before any later operation. A
// definite answer must be the one Expect gives, field by field.
func step(st State, in Input, out Output) []State {
	if out.Unknown {
		if in.Kind == Put || in.Kind == Fence {
			return []State{st.withPending(in)}
		}
		return []State{st}
	}
	want, next := Expect(st, in)
	if !Matches(in, want, out) {
		return nil
	}
	return []State{next}
}

// Expect is the sequential model: the answer the contract gives to in on a
// sink in state st, and the state after it (st's pending operations are
// ignored: settle them first). It is fixtures/sink/fence.Decide in the
// model's terms (a test holds the two together); certify checks every
// answer of its sequences against it, and Step, porcupine's model, accepts
// exactly the answers it gives.
//
// A write or fence without a usable epoch is refused with 400. A put whose
// Idempotency-Key is committed is answered before the floor is looked at:
// OK_DUP with the first commit's epoch for the same key and value, 422
// otherwise, and changes nothing. Else epoch < floor is 409 naming the
// floor, and epoch >= floor commits (a put: OK with its epoch; a fence: OK
// with the new floor).
func Expect(st State, in Input) (Output, State) {
	if in.NoEpoch && (in.Kind == Put || in.Kind == Fence) {
		return Output{Status: contract.StatusBadRequest, Result: contract.ResultBadRequest}, st
	}
	stale := Output{Status: contract.StatusConflict, Result: contract.ResultRejectStale, Highest: st.Floor}
	switch in.Kind {
	case Put:
		if p, ok := st.idem[in.Idem]; ok && in.Idem != "" {
			if p.key == in.Key && p.value == in.Value {
				return Output{Status: contract.StatusOK, Result: contract.ResultOKDup, Epoch: p.epoch}, st
			}
			return Output{Status: contract.StatusUnprocessable, Result: contract.ResultConflict}, st
		}
		if in.Epoch < st.Floor {
			return stale, st
		}
		return Output{Status: contract.StatusOK, Result: contract.ResultOK, Epoch: in.Epoch}, st.commit(in)
	case Fence:
		if in.Epoch < st.Floor {
			return stale, st
		}
		next := st.raise(in.Epoch)
		return Output{Status: contract.StatusOK, Result: contract.ResultOK, Highest: next.Floor}, next
	case Get:
		if r, ok := st.recs[in.Key]; ok {
			return Output{Status: contract.StatusOK, Value: r.Value, Epoch: r.Epoch}, st
		}
		return Output{Status: contract.StatusNotFound}, st
	}
	return Output{Status: contract.StatusOK, Highest: st.Floor}, st
}

// Matches reports whether got is the answer want to in, in every field the
// contract fixes for it: the status always; the result code of a write or
// a fence (but a 400's); a put's committed epoch (OK, OK_DUP); the floor
// that a fence, a 409 or a floor read names; a found record's value and
// epoch.
func Matches(in Input, want, got Output) bool {
	if got.Unknown || got.Status != want.Status {
		return false
	}
	switch {
	case want.Status == contract.StatusBadRequest, want.Status == contract.StatusNotFound:
		return true
	case in.Kind == Get:
		return got.Value == want.Value && got.Epoch == want.Epoch
	case in.Kind == Floor:
		return got.Highest == want.Highest
	case got.Result != want.Result:
		return false
	case want.Result == contract.ResultConflict:
		return true
	case in.Kind == Put && want.Status == contract.StatusOK:
		return got.Epoch == want.Epoch
	}
	return got.Highest == want.Highest
}

// Model is the porcupine model starting from init. Inputs and outputs are
// Input and Output values.
func Model(init State) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{init} },
		Step: func(state, input, output interface{}) []interface{} {
			next := Step(state.(State), input.(Input), output.(Output))
			out := make([]interface{}, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Equal:             func(a, b interface{}) bool { return equal(a.(State), b.(State)) },
		Hash:              func(s interface{}) uint64 { st := s.(State); return st.hash() },
		DescribeOperation: func(in, out interface{}) string { return Describe(in.(Input), out.(Output)) },
		DescribeState:     func(s interface{}) string { return s.(State).String() },
	}
	return m.ToModel()
}

// Describe is one operation in a line.
func Describe(in Input, out Output) string {
	var b strings.Builder
	if in.Label != "" {
		b.WriteString(in.Label + " ")
	}
	epoch := fmt.Sprint(in.Epoch)
	if in.NoEpoch {
		epoch = "none"
	}
	switch in.Kind {
	case Put:
		fmt.Fprintf(&b, "put %s=%s epoch %s", in.Key, short(in.Value, 24), epoch)
		if in.Idem != "" {
			fmt.Fprintf(&b, " idem %s", short(in.Idem, 24))
		}
	case Fence:
		fmt.Fprintf(&b, "fence epoch %s", epoch)
	case Get:
		fmt.Fprintf(&b, "get %s", in.Key)
	case Floor:
		b.WriteString("read floor")
	}
	if out.Unknown {
		b.WriteString(" -> unknown")
		if out.Why != "" {
			b.WriteString(": " + out.Why)
		}
		return b.String()
	}
	fmt.Fprintf(&b, " -> %d", out.Status)
	switch {
	case in.Kind == Get && out.Status == contract.StatusOK:
		fmt.Fprintf(&b, " value %s epoch %d", short(out.Value, 24), out.Epoch)
	case in.Kind == Get:
	case in.Kind == Put && out.Status == contract.StatusOK:
		fmt.Fprintf(&b, " %s epoch %d", out.Result, out.Epoch)
	default:
		fmt.Fprintf(&b, " %s highest_epoch %d", out.Result, out.Highest)
	}
	return b.String()
}

func (s State) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "floor %d", s.Floor)
	keys := make([]string, 0, len(s.recs))
	for k := range s.recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := s.recs[k]
		fmt.Fprintf(&b, ", %s=%s@%d", k, short(r.Value, 12), r.Epoch)
	}
	if len(s.idem) > 0 {
		fmt.Fprintf(&b, ", %d idempotency keys", len(s.idem))
	}
	for _, p := range s.pend {
		fmt.Fprintf(&b, ", pending: %s", Describe(p, Output{Unknown: true}))
	}
	return b.String()
}

func short(s string, n int) string {
	if len(s) > n {
		return fmt.Sprintf("%q...", s[:n])
	}
	return fmt.Sprintf("%q", s)
}

// ForgetSingleUse drops the idempotency key of every put whose key no
// other operation in ops carries. A key used once is never consulted
// again, and remembering it would keep states apart that are otherwise
// equal: each lost answer would double the states porcupine tracks.
func ForgetSingleUse(ops []porcupine.Operation) {
	uses := map[string]int{}
	for _, op := range ops {
		if in := op.Input.(Input); in.Idem != "" {
			uses[in.Idem]++
		}
	}
	for i, op := range ops {
		if in := op.Input.(Input); in.Idem != "" && uses[in.Idem] == 1 {
			in.Idem = ""
			ops[i].Input = in
		}
	}
}
