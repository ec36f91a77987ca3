package certify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/certify/modelseq"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fencemodel"
)

// Model-based checks: sequences drawn from the seed (package modelseq),
// sent one request at a time, every field of every answer compared with
// the contract's sequential model (fencemodel.Expect). A sequence that
// fails is shrunk to a short list of its steps that still fails, printed
// as a `--seed S --steps LIST` line that replays it.

// modelSequences is how many sequences a model check runs, by generator:
// sequence j has seed Config.Seed+j. The range walk climbs to 2^64-1, so
// there is one per run.
var modelSequences = map[string]int{modelseq.Fencing: 3, modelseq.Retries: 3, modelseq.Range: 1}

// generatorOf is the generator of the profiles that run sequences.
var generatorOf = map[string]string{ProfileCore: modelseq.Fencing, ProfileIdempotency: modelseq.Retries, ProfileDomain: modelseq.Range}

// shrinkBudget bounds the replays spent shrinking one failure.
var shrinkBudget = struct {
	runs int
	time time.Duration
}{200, 30 * time.Second}

func checkModelSequences(s *session) error { return s.modelCheck(modelseq.Fencing) }
func checkModelRetries(s *session) error   { return s.modelCheck(modelseq.Retries) }

// checkRangeWalk walks the floor to 2^64-1. With a reset command the walk
// starts from a fresh sink and the sink is made fresh again after it.
func checkRangeWalk(s *session) error {
	err := s.modelCheck(modelseq.Range)
	if s.cfg.Reset != nil {
		if rerr := s.fresh(modelseq.Range); rerr != nil {
			fmt.Fprintf(s.cfg.Progress, "...  the reset after the walk failed, the sink's floor may be 2^64-1: %v\n", rerr)
		}
	}
	return err
}

func (s *session) modelCheck(gen string) error {
	for j := range modelSequences[gen] {
		seq, err := modelseq.Generate(gen, s.cfg.Seed+int64(j), 0)
		if err != nil {
			return err
		}
		o, err := s.runModel(seq, modelseq.All(seq))
		if err != nil {
			s.ex = append(s.ex, transcript(o.Lines[max(0, len(o.Lines)-5):])...)
			return err
		}
		if o.Failed {
			return s.modelFailure(seq, o)
		}
	}
	return nil
}

// fresh resets the sink before a run of the range walk (its epochs are
// absolute: it means what it says only from a fresh sink) when a reset
// command is given; other runs need none.
func (s *session) fresh(gen string) error {
	if gen != modelseq.Range || s.cfg.Reset == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RestartTimeout)
	defer cancel()
	if err := s.cfg.Reset(ctx); err != nil {
		return inconclusive("the reset command failed: %v", err)
	}
	if _, err := s.waitAnswering(ctx); err != nil {
		return inconclusive("after the reset: %v", err)
	}
	return nil
}

// runModel runs steps of seq with fresh names (from a fresh sink for the
// range walk when a reset command is given). An error is a run that
// stopped without a verdict.
func (s *session) runModel(seq modelseq.Sequence, steps []int) (modelseq.Outcome, error) {
	if err := s.fresh(seq.Gen); err != nil {
		return modelseq.Outcome{}, err
	}
	o := modelseq.Run(s.ctx, httpSink{s}, seq, steps, s.bindNames(seq))
	if o.Err != nil {
		return o, fmt.Errorf("sequence seed %d (%s): %w", seq.Seed, seq.Gen, o.Err)
	}
	return o, nil
}

// modelFailure shrinks a failed run and says what failed and how to
// replay it.
func (s *session) modelFailure(seq modelseq.Sequence, o modelseq.Outcome) error {
	last := o.Lines[len(o.Lines)-1]
	msg := fmt.Sprintf("sequence seed %d (%s), step %d of %d: %s answered %s; the model answers %s (%s)",
		seq.Seed, seq.Gen, last.Step, len(seq.Steps), last.Request, last.Answer, last.Want, last.Bad)
	shrunk := modelseq.Shrunk{Steps: o.Steps(), Last: o}
	switch {
	case seq.Gen == modelseq.Range && s.cfg.Reset == nil:
		msg += "\nnot shrunk: a replay of the walk needs a fresh sink (--reset-cmd)"
	default:
		fmt.Fprintf(s.cfg.Progress, "...  shrinking the failing sequence (seed %d, %d steps)\n", seq.Seed, len(o.Lines))
		shrunk = modelseq.Shrink(s.ctx, o, func(ctx context.Context, steps []int) modelseq.Outcome {
			r, err := s.runModel(seq, steps)
			if err != nil {
				return modelseq.Outcome{}
			}
			return r
		}, modelseq.Budget{Runs: shrinkBudget.runs, Until: time.Now().Add(shrinkBudget.time)})
		how := "minimal: no step of it can go"
		if !shrunk.Minimal {
			how = "the shrinking budget ran out before it was minimal"
		}
		msg += fmt.Sprintf("\nshrunk to %d of those %d steps in %d replays (%s)", len(shrunk.Steps), len(o.Lines), shrunk.Runs, how)
	}
	where := "against this sink (epochs are relative to its floor; names are fresh on every run)"
	if seq.Gen == modelseq.Range {
		where = "against a fresh sink"
	}
	msg += fmt.Sprintf("\nreplay %s: %s", where, replayCommand(s.cfg, seq, shrunk.Steps))
	s.ex = transcript(shrunk.Last.Lines)
	return errors.New(msg)
}

// replayCommand is the command line that replays steps of seq.
func replayCommand(cfg Config, seq modelseq.Sequence, steps []int) string {
	profile := ""
	for p, g := range generatorOf {
		if g == seq.Gen {
			profile = p
		}
	}
	cmd := fmt.Sprintf("fencecheck certify --sink-url %s --profile %s --seed %d --steps %s", cfg.SinkURL, profile, seq.Seed, modelseq.FormatSteps(steps))
	if profile == ProfileDomain {
		cmd += " --disposable"
	}
	return cmd
}

// transcript renders a run's lines as exchanges with the model's answer.
func transcript(lines []modelseq.Line) []Exchange {
	out := make([]Exchange, 0, len(lines))
	for _, l := range lines {
		req := fmt.Sprintf("step %d: %s", l.Step, l.Request)
		if l.Note != "" {
			req += " (" + l.Note + ")"
		}
		out = append(out, Exchange{Request: req, Response: l.Answer, Want: l.Want, Error: l.Bad})
	}
	return out
}

// bindNames draws a run's record keys, values and Idempotency-Keys, of
// the shapes the other checks use, from the sequence's seed, the floor the
// run starts from and the number of runs so far: the same on a fresh sink
// for the same seed, fresh on a sink that has seen earlier runs. Keys the
// sink already holds are drawn again.
func (s *session) bindNames(seq modelseq.Sequence) func(uint64) modelseq.Names {
	return func(floor0 uint64) modelseq.Names {
		for try := 0; ; try++ {
			s.runs++
			rng := rand.New(rand.NewSource(seq.Seed ^ int64(floor0*0x9e3779b97f4a7c15) ^ int64(s.runs)<<40))
			var n modelseq.Names
			for range seq.Keys {
				n.Keys = append(n.Keys, randKey(rng))
			}
			for range seq.Values {
				n.Values = append(n.Values, randValue(rng))
			}
			for range seq.Idems {
				n.Idems = append(n.Idems, randIdem(rng))
			}
			if try == 3 || s.unused(n.Keys) {
				return n
			}
		}
	}
}

// unused reports whether the sink holds none of keys (a read that fails
// counts as none: the run will meet the failure).
func (s *session) unused(keys []string) bool {
	for _, k := range keys {
		if _, found, _, err := s.cl.Get(s.ctx, k); err == nil && found {
			return false
		}
	}
	return true
}

// httpSink sends a sequence's requests over the session's client and
// decodes the answers strictly.
type httpSink struct{ s *session }

func (h httpSink) Do(ctx context.Context, r modelseq.Request) modelseq.Answer {
	method, path := http.MethodGet, contract.PathFence
	var body io.Reader
	hdr := http.Header{}
	switch r.Kind {
	case fencemodel.Put:
		method, path, body = http.MethodPut, contract.RecordPath(r.Key), strings.NewReader(r.Value)
		hdr.Set(contract.HeaderEpoch, contract.FormatEpoch(r.Epoch))
		if r.Idem != "" {
			hdr.Set(contract.HeaderIdempotencyKey, r.Idem)
		}
	case fencemodel.Fence:
		method = http.MethodPost
		hdr.Set(contract.HeaderEpoch, contract.FormatEpoch(r.Epoch))
	case fencemodel.Get:
		path = contract.RecordPath(r.Key)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(h.s.cfg.SinkURL, "/")+path, body)
	if err != nil {
		return modelseq.Answer{Err: err}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := h.s.cfg.HTTP.Do(req)
	if err != nil {
		return modelseq.Answer{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return modelseq.Answer{Err: fmt.Errorf("reading the answer: %w", err)}
	}
	out, bad := decodeAnswer(r, resp.StatusCode, b)
	return modelseq.Answer{Out: out, Bad: bad, Text: fmt.Sprintf("%d %s", resp.StatusCode, quote(string(b), 300))}
}

// decodeAnswer reads an answer as the contract writes it: a JSON object
// whose result is a string and whose epochs are u64 integers written as
// plain digits. bad says what is not so, for the fields the contract
// fixes for this request and status. An epoch left out reads as 0, as the
// contract's Go types write it (omitempty); a result or a record's key or
// value left out is bad.
func decodeAnswer(r modelseq.Request, status int, b []byte) (fencemodel.Output, string) {
	out := fencemodel.Output{Status: status}
	var need []string
	switch {
	case status == contract.StatusBadRequest, status == contract.StatusNotFound && r.Kind == fencemodel.Get:
		return out, ""
	case r.Kind == fencemodel.Get && status == contract.StatusOK:
		need = []string{"key", "value", "epoch"}
	case r.Kind == fencemodel.Floor && status == contract.StatusOK:
		need = []string{"highest_epoch"}
	case r.Kind == fencemodel.Put && status == contract.StatusOK:
		need = []string{"result", "epoch"}
	case r.Kind == fencemodel.Put && status == contract.StatusUnprocessable:
		need = []string{"result"}
	case (r.Kind == fencemodel.Put || r.Kind == fencemodel.Fence) && (status == contract.StatusOK || status == contract.StatusConflict):
		need = []string{"result", "highest_epoch"}
	default:
		return out, "" // a status the contract never gives here: the status says it
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return out, "the body is not a JSON object"
	}
	for _, f := range need {
		raw, ok := fields[f]
		switch {
		case !ok && (f == "epoch" || f == "highest_epoch"):
			continue // 0
		case !ok:
			return out, fmt.Sprintf("no %q in the answer", f)
		}
		switch f {
		case "result", "key", "value":
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return out, fmt.Sprintf("%q is not a string", f)
			}
			switch f {
			case "result":
				out.Result = v
			case "value":
				out.Value = v
			case "key":
				if v != r.Key {
					return out, fmt.Sprintf("the record of key %s, not %s", quote(v, 60), quote(r.Key, 60))
				}
			}
		default:
			n, err := parseU64(raw)
			if err != nil {
				return out, fmt.Sprintf("%q %s: %v", f, quote(string(raw), 40), err)
			}
			if f == "epoch" {
				out.Epoch = n
			} else {
				out.Highest = n
			}
		}
	}
	return out, ""
}

// parseU64 reads a JSON number that is a u64 written as plain digits:
// no sign, no fraction, no exponent, no leading zero, at most 2^64-1.
func parseU64(raw json.RawMessage) (uint64, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || strings.Trim(s, "0123456789") != "" || len(s) > 1 && s[0] == '0' {
		return 0, errors.New("is not a u64 written as plain digits")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("is above 2^64-1")
	}
	return n, nil
}

// expectModel sends one request and checks every field of its answer
// against the model in *st, which it advances.
func (s *session) expectModel(st *fencemodel.State, r modelseq.Request, note string) error {
	in := fencemodel.Input{Kind: r.Kind, Key: r.Key, Value: r.Value, Epoch: r.Epoch, Idem: r.Idem}
	want, next := fencemodel.Expect(*st, in)
	a := httpSink{s}.Do(s.ctx, r)
	ex := Exchange{Request: modelseq.Describe(r) + " (" + note + ")", Response: a.Text, Want: modelseq.Render(in, want), Error: a.Bad}
	if a.Err != nil {
		ex.Error = a.Err.Error()
		s.ex = append(s.ex, ex)
		return fmt.Errorf("%s: %w", modelseq.Describe(r), a.Err)
	}
	if ex.Error == "" && !fencemodel.Matches(in, want, a.Out) {
		ex.Error = "not the model's answer"
	}
	s.ex = append(s.ex, ex)
	if ex.Error != "" {
		return fmt.Errorf("%s answered %s; the model answers %s (%s)", modelseq.Describe(r), a.Text, ex.Want, ex.Error)
	}
	*st = next
	return nil
}

// Replay sends the steps (1-based, ascending) of the sequence that
// cfg.Seed draws for the one profile in cfg.Profiles (core, idempotency
// or domain), each answer checked against the model, and returns the run
// as a result whose exchanges are every step with the sink's answer and
// the model's: Pass when every answer was the model's. This is what a
// failed model check's `--seed S --steps LIST` line runs. The error is
// non-nil only when it cannot start.
func Replay(ctx context.Context, cfg Config, steps []int) (Result, error) {
	if len(cfg.Profiles) != 1 || generatorOf[cfg.Profiles[0]] == "" {
		return Result{}, errors.New("--steps replays one profile's sequence: give --profile core, idempotency or domain")
	}
	if cfg.Seed == 0 || len(steps) == 0 {
		return Result{}, errors.New("--steps needs the --seed of the sequence and at least one step")
	}
	r, err := NewRunner(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	profile := cfg.Profiles[0]
	seq, err := modelseq.Generate(generatorOf[profile], cfg.Seed, steps[len(steps)-1])
	if err != nil {
		return Result{}, err
	}
	s := &session{ctx: ctx, cfg: r.cfg, cl: r.cl, name: "replay", shared: r.sh}
	start := time.Now()
	res := Result{Profile: profile, Name: profile + "/replay", Verdict: Pass,
		Summary: fmt.Sprintf("steps %s of the %s sequence with seed %d", modelseq.FormatSteps(steps), seq.Gen, seq.Seed)}
	o, err := s.runModel(seq, steps)
	res.Exchanges = append(s.ex, transcript(o.Lines)...)
	switch {
	case err != nil:
		res.Verdict, res.Message = Fail, err.Error()
		var inc *inconclusiveError
		if errors.As(err, &inc) {
			res.Verdict = Inconclusive
		}
	case o.Failed:
		last := o.Lines[len(o.Lines)-1]
		res.Verdict = Fail
		res.Message = fmt.Sprintf("step %d: %s answered %s; the model answers %s (%s)", last.Step, last.Request, last.Answer, last.Want, last.Bad)
	default:
		res.Message = fmt.Sprintf("all %d answers were the model's (the floor was %d at the start)", len(o.Lines), o.Floor0)
	}
	res.Duration = time.Since(start)
	return scrubResult(res), nil
}
