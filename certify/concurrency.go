package certify

import (
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
	"github.com/fencecheck/fencecheck/fencemodel"
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

// The workload runs in loadRounds rounds, each with its own seed, keys and
// starting floor, and each round's history is checked on its own: more
// chances to catch a race than one long history, at the cost of a few
// porcupine runs. A round of check-then-act with no pause is caught about a
// third of the time, so 3 rounds caught it in only 40 of 60 runs (a vendor's
// racy sink would pass one certify in three); 8 caught it in 60 of 60, idle
// and with both cores busy (TestCalibrateConcurrency), for ~40 ms a round.
const loadRounds = 8

// Puts may carry an Idempotency-Key from a pool of idemSlots keys (each
// bound to one request, slotsPerWriter per writer), and writers retry
// their own earlier requests: the model tracks which keys committed.
const (
	idemSlots      = 64
	slotsPerWriter = 8
)

type opInput struct {
	kind  opKind
	key   int
	value string
	epoch uint64
	slot  int // idempotency key slot, -1 for none
	idem  string
	retry bool
}

type opOutput struct {
	status  int
	result  string
	epoch   uint64 // put: committed epoch; get: record epoch
	highest uint64 // 409 / fence / floor: the sink's floor
	value   string
	err     string // transport error or a non-contract answer: outcome unknown
}

// burstRounds are rounds aimed at a check-then-act window, each of
// burstsPerRound bursts. In a burst every writer is released at once on
// operations that conflict: the same keyed write from three writers, a
// fence one epoch up, a write to another key at the old epoch and a floor
// read. Once all have answered, the floor and both keys are read. A sink
// that decides on a state another request changes before it writes
// applies the keyed write twice, or puts the floor back under the fence,
// and the reads after the burst show it. A round of bursts takes about as
// long as a random round.
const (
	burstRounds    = 2
	burstsPerRound = 12
)

// loadRound is one round's history.
type loadRound struct {
	seed   int64
	burst  bool
	floor0 uint64
	keys   []string
	ops    []porcupine.Operation
}

type loadRun struct {
	err    error
	rounds []loadRound
}

// load runs the workload once per certify run.
func (s *session) load() *loadRun {
	if l := s.shared.load; l != nil {
		return l
	}
	l := &loadRun{}
	s.shared.load = l
	for r := range loadRounds + burstRounds {
		run := s.loadRound
		if r >= loadRounds {
			run = s.burstRound
		}
		round, err := run(s.cfg.Seed + int64(r)*7919)
		if err != nil {
			l.err = err
			return l
		}
		l.rounds = append(l.rounds, round)
	}
	return l
}

// burstRound runs burstsPerRound bursts (see burstRounds).
func (s *session) burstRound(seed int64) (loadRound, error) {
	e, err := s.base()
	if err != nil {
		return loadRound{}, err
	}
	rng := rand.New(rand.NewSource(seed))
	l := loadRound{seed: seed, burst: true, floor0: e - 1}
	for range numKeys {
		l.keys = append(l.keys, randKey(rng))
	}
	width := max(s.cfg.Writers, 6)
	fmt.Fprintf(s.cfg.Progress, "...  %d bursts of %d writers at once, seed %d\n", burstsPerRound, width, seed)
	rec := &recorder{s: s, l: &l, start: time.Now()}
	for b := range burstsPerRound {
		ep := e + uint64(2*b)
		dup := opInput{kind: opPut, key: b % numKeys, value: randValue(rng), epoch: ep, slot: b, idem: randIdem(rng)}
		other := (b + 1) % numKeys
		plan := make([]opInput, width)
		for w := range plan {
			switch w % 6 {
			case 0, 1, 2:
				plan[w] = dup
			case 3:
				plan[w] = opInput{kind: opFence, epoch: ep + 1, slot: -1}
			case 4:
				plan[w] = opInput{kind: opPut, key: other, value: randValue(rng), epoch: ep, slot: -1}
			default:
				plan[w] = opInput{kind: opFloor, slot: -1}
			}
		}
		release := make(chan struct{})
		var wg sync.WaitGroup
		for w, in := range plan {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-release // all at once
				rec.send(w, in)
			}()
		}
		close(release)
		wg.Wait()
		for _, in := range []opInput{{kind: opFloor, slot: -1}, {kind: opGet, key: dup.key, slot: -1}, {kind: opGet, key: other, slot: -1}} {
			rec.send(width, in)
		}
	}
	sort.Slice(l.ops, func(i, j int) bool { return l.ops[i].Call < l.ops[j].Call })
	return l, nil
}

func (s *session) loadRound(seed int64) (loadRound, error) {
	e, err := s.base()
	if err != nil {
		return loadRound{}, err
	}
	rng := rand.New(rand.NewSource(seed))
	l := loadRound{seed: seed, floor0: e - 1}
	for range numKeys {
		l.keys = append(l.keys, randKey(rng))
	}
	idems := make([]string, idemSlots)
	for i := range idems {
		idems[i] = randIdem(rng)
	}
	plans := make([][]opInput, s.cfg.Writers)
	for w := range plans {
		plans[w] = planWriter(rand.New(rand.NewSource(seed+int64(w)+1)), w, s.cfg.OpsPerWriter, e, idems)
	}
	fmt.Fprintf(s.cfg.Progress, "...  %d writers x %d ops, seed %d\n", s.cfg.Writers, s.cfg.OpsPerWriter, seed)
	rec := &recorder{s: s, l: &l, start: time.Now()}
	var wg sync.WaitGroup
	for w, plan := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, in := range plan {
				rec.send(w, in)
			}
		}()
	}
	wg.Wait()
	sort.Slice(l.ops, func(i, j int) bool { return l.ops[i].Call < l.ops[j].Call })
	return l, nil
}

// recorder sends a round's operations and keeps them as its history.
type recorder struct {
	s     *session
	l     *loadRound
	start time.Time
	mu    sync.Mutex
}

// send sends in for client and records it with its call and return times.
func (r *recorder) send(client int, in opInput) {
	call := time.Since(r.start).Nanoseconds()
	out := r.s.do(r.l.keys, in)
	ret := time.Since(r.start).Nanoseconds()
	r.mu.Lock()
	r.l.ops = append(r.l.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
}

// planWriter draws one writer's operations: fresh ones from genOp, some
// puts with an idempotency key, and retries of its own earlier keyed puts
// (the same request again, as after a lost answer).
func planWriter(rng *rand.Rand, w, n int, e uint64, idems []string) []opInput {
	var plan, keyed []opInput
	for j := range n {
		if len(keyed) > 0 && rng.Intn(100) < 12 {
			in := keyed[rng.Intn(len(keyed))]
			in.retry = true
			plan = append(plan, in)
			continue
		}
		in := genOp(rng, j, n, e)
		if in.kind == opPut && (w+1)*slotsPerWriter <= idemSlots && len(keyed) < slotsPerWriter && rng.Intn(100) < 40 {
			in.slot = w*slotsPerWriter + len(keyed)
			in.idem = idems[in.slot]
			keyed = append(keyed, in)
		}
		plan = append(plan, in)
	}
	return plan
}

// genOp draws one operation. Epochs climb through the run like successive
// leaders, and each writer lags or leads by a little, so at any moment some
// writers are stale: the mix a fenced sink must sort out.
func genOp(rng *rand.Rand, j, n int, e uint64) opInput {
	step := uint64(j * 8 / n)
	ep := e + step + 2
	ep = ep + uint64(rng.Intn(4)) - 2 // e+step .. e+step+3
	in := opInput{key: rng.Intn(numKeys), epoch: ep, slot: -1}
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
func (s *session) do(keys []string, in opInput) opOutput {
	var out opOutput
	var rep client.Reply
	var err error
	switch in.kind {
	case opPut:
		var wr contract.WriteResponse
		wr, rep, err = s.cl.Put(s.ctx, keys[in.key], []byte(in.value), in.epoch, in.idem)
		out = opOutput{status: rep.Status, result: wr.Result, epoch: wr.Epoch, highest: wr.HighestEpoch}
		okResult := wr.Result == contract.ResultOK || in.idem != "" && wr.Result == contract.ResultOKDup
		if err == nil && !(rep.Status == http.StatusOK && okResult || rep.Status == http.StatusConflict && wr.Result == contract.ResultRejectStale) {
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
		rec, found, rep, err = s.cl.Get(s.ctx, keys[in.key])
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
		if in.slot >= 0 {
			fmt.Fprintf(&b, " idem#%d", in.slot)
		}
		if in.retry {
			b.WriteString(" (retry)")
		}
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
	total := 0
	for _, r := range l.rounds {
		total += len(r.ops)
		for _, op := range r.ops {
			if out := op.Output.(opOutput); out.err != "" {
				bad = append(bad, fmt.Sprintf("seed %d: %s", r.seed, describeOp(op.Input.(opInput), out)))
			}
		}
	}
	if len(bad) > 0 {
		for _, b := range bad[:min(len(bad), 10)] {
			s.ex = append(s.ex, Exchange{Request: b})
		}
		return fmt.Errorf("%d of %d requests got no contract answer; first ones below", len(bad), total)
	}
	return nil
}

// modelOps is a round's history in fencemodel's terms: the one fenced
// register the conformance check `linearizable` uses too.
func modelOps(r loadRound) []porcupine.Operation {
	ops := make([]porcupine.Operation, len(r.ops))
	for i, op := range r.ops {
		in, out := op.Input.(opInput), op.Output.(opOutput)
		mi := fencemodel.Input{Kind: [...]fencemodel.Kind{fencemodel.Put, fencemodel.Fence, fencemodel.Get, fencemodel.Floor}[in.kind],
			Key: r.keys[in.key], Value: in.value, Epoch: in.epoch, Idem: in.idem}
		mo := fencemodel.Output{Unknown: out.err != "", Why: out.err, Status: out.status, Result: out.result,
			Epoch: out.epoch, Highest: out.highest, Value: out.value}
		ops[i] = porcupine.Operation{ClientId: op.ClientId, Input: mi, Call: op.Call, Output: mo, Return: op.Return}
	}
	return ops
}

// linearizeTimeout bounds porcupine; an undecided check is inconclusive,
// never passed.
const linearizeTimeout = 60 * time.Second

func checkLinearizable(s *session) error {
	l := s.load()
	if l.err != nil {
		return l.err
	}
	for _, r := range l.rounds {
		if err := s.linearizable(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *session) linearizable(r loadRound) error {
	model := fencemodel.Model(fencemodel.Start(r.floor0))
	res, info := porcupine.CheckOperationsVerbose(model, modelOps(r), linearizeTimeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return inconclusive("porcupine could not decide within %s on %d operations (seed %d)", linearizeTimeout, len(r.ops), r.seed)
	}
	for _, w := range staleWitnesses(r.ops) {
		s.ex = append(s.ex, Exchange{Request: w})
	}
	viz := ""
	if s.cfg.ReportDir != "" {
		path := filepath.Join(s.cfg.ReportDir, fmt.Sprintf("linearizable-seed%d.html", r.seed))
		if err := os.MkdirAll(s.cfg.ReportDir, 0o755); err != nil {
			viz = fmt.Sprintf("; writing porcupine's visualization failed: %v", err)
		} else if err := porcupine.VisualizePath(model, info, path); err != nil {
			viz = fmt.Sprintf("; writing porcupine's visualization failed: %v", err)
		} else {
			viz = "; porcupine's visualization: " + path
		}
	}
	kind := "round"
	if r.burst {
		kind = "burst round"
	}
	return fmt.Errorf("the history of %d concurrent operations (%s, seed %d, starting floor %d) is not linearizable against a fenced register%s; witnesses below (an answer that contradicts a floor already acknowledged)", len(r.ops), kind, r.seed, r.floor0, viz)
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
