package certify

import (
	"fmt"
	"math/rand"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/contract"
)

// The concurrency profile runs one workload (many writers, mixed epochs,
// fences and reads at once) and checks the client-side history two ways.

type opKind int

const (
	opPut opKind = iota
	opFence
	opGet
	opFloor
)

func (k opKind) String() string { return [...]string{"put", "fence", "get", "floor"}[k] }

// numKeys is small on purpose: contention on few keys is where races show.
const numKeys = 3

type opInput struct {
	kind  opKind
	key   int
	value string
	epoch uint64
}

type opOutput struct {
	status  int
	result  string
	epoch   uint64 // put: committed epoch; get: record epoch
	highest uint64 // 409 / fence / floor: the sink's floor
	value   string
	err     string // transport error or a non-contract answer: outcome unknown
}

type loadRun struct {
	done   bool
	err    error
	floor0 uint64
	keys   []string
	ops    []porcupine.Operation
	seed   int64
}

// load runs the workload once per certify run.
func (s *session) load() *loadRun {
	if l := s.shared.load; l != nil {
		return l
	}
	l := &loadRun{done: true, seed: s.cfg.Seed}
	s.shared.load = l
	e, err := s.base()
	if err != nil {
		l.err = err
		return l
	}
	l.floor0 = e - 1
	for range numKeys {
		l.keys = append(l.keys, s.key())
	}
	fmt.Fprintf(s.cfg.Progress, "...  %d writers x %d ops, seed %d\n", s.cfg.Writers, s.cfg.OpsPerWriter, l.seed)
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range s.cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(l.seed + int64(w)))
			for j := range s.cfg.OpsPerWriter {
				in := genOp(rng, w, j, s.cfg.OpsPerWriter, e)
				call := time.Since(start).Nanoseconds()
				out := s.do(l, in)
				ret := time.Since(start).Nanoseconds()
				mu.Lock()
				l.ops = append(l.ops, porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(l.ops, func(i, j int) bool { return l.ops[i].Call < l.ops[j].Call })
	return l
}

// genOp draws one operation. Epochs climb through the run like successive
// leaders, and each writer lags or leads by a little, so at any moment some
// writers are stale: the mix a fenced sink must sort out.
func genOp(rng *rand.Rand, w, j, n int, e uint64) opInput {
	step := uint64(j * 8 / n)
	ep := e + step + 2
	ep = ep + uint64(rng.Intn(4)) - 2 // e+step .. e+step+3
	in := opInput{key: rng.Intn(numKeys), epoch: ep}
	switch r := rng.Intn(100); {
	case r < 55:
		in.kind = opPut
		in.value = randValue(rng)
	case r < 70:
		in.kind = opFence
	case r < 85:
		in.kind = opGet
	default:
		in.kind = opFloor
	}
	return in
}

// do sends one operation and classifies the answer.
func (s *session) do(l *loadRun, in opInput) opOutput {
	var out opOutput
	var rep contract.Reply
	var err error
	switch in.kind {
	case opPut:
		var wr contract.WriteResponse
		wr, rep, err = s.cl.Put(s.ctx, l.keys[in.key], []byte(in.value), in.epoch, "")
		out = opOutput{status: rep.Status, result: wr.Result, epoch: wr.Epoch, highest: wr.HighestEpoch}
		if err == nil && !(rep.Status == http.StatusOK && wr.Result == contract.ResultOK || rep.Status == http.StatusConflict && wr.Result == contract.ResultRejectStale) {
			out.err = "not a contract answer to a put"
		}
	case opFence:
		var fr contract.FenceResponse
		fr, rep, err = s.cl.Fence(s.ctx, in.epoch)
		out = opOutput{status: rep.Status, result: fr.Result, highest: fr.HighestEpoch}
		if err == nil && !(rep.Status == http.StatusOK && fr.Result == contract.ResultOK || rep.Status == http.StatusConflict && fr.Result == contract.ResultRejectStale) {
			out.err = "not a contract answer to a fence"
		}
	case opGet:
		var rec contract.Record
		var found bool
		rec, found, rep, err = s.cl.Get(s.ctx, l.keys[in.key])
		out = opOutput{status: rep.Status, value: rec.Value, epoch: rec.Epoch}
		if found {
			out.status = http.StatusOK
		}
	case opFloor:
		out.highest, rep, err = s.cl.Floor(s.ctx)
		out.status = rep.Status
	}
	if err != nil {
		out.err = err.Error()
	}
	if out.err != "" {
		out.err += fmt.Sprintf(" (status %d body %s)", rep.Status, quote(string(rep.Body), 120))
	}
	return out
}

func describeOp(in opInput, out opOutput) string {
	var b strings.Builder
	switch in.kind {
	case opPut:
		fmt.Fprintf(&b, "put key%d=%s epoch %d", in.key, quote(in.value, 24), in.epoch)
	case opFence:
		fmt.Fprintf(&b, "fence epoch %d", in.epoch)
	case opGet:
		fmt.Fprintf(&b, "get key%d", in.key)
	case opFloor:
		fmt.Fprintf(&b, "read floor")
	}
	if out.err != "" {
		fmt.Fprintf(&b, " -> unknown: %s", out.err)
		return b.String()
	}
	fmt.Fprintf(&b, " -> %d", out.status)
	switch {
	case in.kind == opGet && out.status == http.StatusOK:
		fmt.Fprintf(&b, " value %s epoch %d", quote(out.value, 40), out.epoch)
	case in.kind == opPut && out.status == http.StatusOK:
		fmt.Fprintf(&b, " %s epoch %d", quote(out.result, 40), out.epoch)
	case in.kind != opGet:
		fmt.Fprintf(&b, " %s highest_epoch %d", quote(out.result, 40), out.highest)
	}
	return b.String()
}

func checkAnswersUnderLoad(s *session) error {
	l := s.load()
	if l.err != nil {
		return l.err
	}
	var bad []string
	for _, op := range l.ops {
		if out := op.Output.(opOutput); out.err != "" {
			bad = append(bad, describeOp(op.Input.(opInput), out))
		}
	}
	if len(bad) > 0 {
		for _, b := range bad[:min(len(bad), 10)] {
			s.ex = append(s.ex, Exchange{Request: b})
		}
		return fmt.Errorf("%d of %d requests got no contract answer (seed %d); first ones below", len(bad), len(l.ops), l.seed)
	}
	return nil
}

// regState is the fenced register: one floor for the sink, one record per key.
type regState struct {
	floor uint64
	vals  [numKeys]struct {
		v  string
		e  uint64
		ok bool
	}
}

// fencedRegister is the sequential specification the history must match.
// Operations with an unknown outcome may or may not have taken effect.
var fencedRegister = porcupine.NondeterministicModel{
	Init: func() []interface{} { return nil }, // replaced per run with the starting floor
	Step: func(state, input, output interface{}) []interface{} {
		st, in, out := state.(regState), input.(opInput), output.(opOutput)
		unknown := out.err != ""
		switch in.kind {
		case opPut:
			applies := in.epoch >= st.floor
			next := st
			next.floor = max(st.floor, in.epoch)
			next.vals[in.key].v, next.vals[in.key].e, next.vals[in.key].ok = in.value, in.epoch, true
			switch {
			case unknown && applies:
				return []interface{}{st, next}
			case unknown:
				return []interface{}{st}
			case out.status == http.StatusOK && applies && out.epoch == in.epoch:
				return []interface{}{next}
			case out.status == http.StatusConflict && !applies && out.highest == st.floor:
				return []interface{}{st}
			}
			return nil
		case opFence:
			applies := in.epoch >= st.floor
			next := st
			next.floor = max(st.floor, in.epoch)
			switch {
			case unknown && applies:
				return []interface{}{st, next}
			case unknown:
				return []interface{}{st}
			case out.status == http.StatusOK && applies && out.highest == next.floor:
				return []interface{}{next}
			case out.status == http.StatusConflict && !applies && out.highest == st.floor:
				return []interface{}{st}
			}
			return nil
		case opGet:
			r := st.vals[in.key]
			switch {
			case unknown:
				return []interface{}{st}
			case out.status == http.StatusNotFound && !r.ok:
				return []interface{}{st}
			case out.status == http.StatusOK && r.ok && r.v == out.value && r.e == out.epoch:
				return []interface{}{st}
			}
			return nil
		case opFloor:
			if unknown || out.highest == st.floor {
				return []interface{}{st}
			}
			return nil
		}
		return nil
	},
}

// linearizeTimeout bounds porcupine; an undecided check fails, it is not skipped.
const linearizeTimeout = 60 * time.Second

func checkLinearizable(s *session) error {
	l := s.load()
	if l.err != nil {
		return l.err
	}
	m := fencedRegister
	floor0 := l.floor0
	m.Init = func() []interface{} { return []interface{}{regState{floor: floor0}} }
	switch porcupine.CheckOperationsTimeout(m.ToModel(), l.ops, linearizeTimeout) {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("porcupine could not decide within %s on %d operations (seed %d)", linearizeTimeout, len(l.ops), l.seed)
	}
	for _, w := range staleWitnesses(l.ops) {
		s.ex = append(s.ex, Exchange{Request: w})
	}
	return fmt.Errorf("the history of %d concurrent operations (seed %d, starting floor %d) is not linearizable against a fenced register; witnesses below (an answer that contradicts a floor already acknowledged)", len(l.ops), l.seed, l.floor0)
}

// staleWitnesses finds easy-to-read evidence: operations whose answer
// contradicts a floor that an earlier, already finished operation reported.
func staleWitnesses(ops []porcupine.Operation) []string {
	var out []string
	for _, op := range ops {
		in, o := op.Input.(opInput), op.Output.(opOutput)
		if o.err != "" {
			continue
		}
		var known uint64
		var by string
		for _, prev := range ops {
			if prev.Return >= op.Call {
				continue
			}
			pi, po := prev.Input.(opInput), prev.Output.(opOutput)
			if po.err != "" {
				continue
			}
			f := po.highest
			if pi.kind == opPut && po.status == http.StatusOK {
				f = pi.epoch
			}
			if f > known {
				known, by = f, describeOp(pi, po)
			}
		}
		stale := (in.kind == opPut || in.kind == opFence) && o.status == http.StatusOK && in.epoch < known ||
			in.kind == opFloor && o.highest < known
		if stale {
			out = append(out, fmt.Sprintf("%s, although earlier (finished before this call) %s", describeOp(in, o), by))
			if len(out) == 5 {
				break
			}
		}
	}
	return out
}
