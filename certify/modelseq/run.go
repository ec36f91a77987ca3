package modelseq

import (
	"context"
	"fmt"
	"strconv"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fencemodel"
)

// Request is a step with its names and epoch resolved.
type Request struct {
	Kind             fencemodel.Kind
	Key, Value, Idem string
	Epoch            uint64
}

// Answer is what the sink answered a request.
type Answer struct {
	// Out is the answer as decoded: status, result and numbers.
	Out fencemodel.Output
	// Bad says why the answer is not one the contract allows for this
	// request however its fields compare (a number that is not a u64, a
	// body that is not JSON, a record of another key); "" when it is.
	Bad string
	// Text is the answer as received, for transcripts (the caller escapes
	// and truncates it).
	Text string
	// Err: no answer at all (the request failed): the run stops without
	// a verdict on the contract.
	Err error
}

// Sink sends one request and reads its answer.
type Sink interface {
	Do(ctx context.Context, r Request) Answer
}

// Names bind a sequence's indices to strings for one run.
type Names struct{ Keys, Values, Idems []string }

// Line is one step of a run.
type Line struct {
	Step    int    // the step's number in its sequence (1-based)
	Note    string // why the generator chose it
	Request string
	Answer  string
	Want    string // the model's answer
	Bad     string // why the answer is not the model's ("" when it is)
}

// Outcome is a run.
type Outcome struct {
	Floor0 uint64 // the floor the run started from
	Lines  []Line
	// Failed: the last line's answer is not the model's.
	Failed bool
	// Err: the run stopped without a verdict (the floor could not be read,
	// a request got no answer).
	Err error
}

// Steps lists the step numbers of the lines run.
func (o Outcome) Steps() []int {
	out := make([]int, len(o.Lines))
	for i, l := range o.Lines {
		out[i] = l.Step
	}
	return out
}

// All is every step number of seq, in order.
func All(seq Sequence) []int {
	out := make([]int, len(seq.Steps))
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// Run reads the sink's floor, binds the sequence's names for it (bind
// must give names the sink has never seen), then sends the steps of seq
// numbered in steps, in that order, each checked against the model started
// from that floor with no records and no Idempotency-Keys. It stops at the
// first answer that is not the model's, or that is no answer.
func Run(ctx context.Context, sink Sink, seq Sequence, steps []int, bind func(floor0 uint64) Names) Outcome {
	var o Outcome
	floorReq := Request{Kind: fencemodel.Floor}
	a := sink.Do(ctx, floorReq)
	switch {
	case a.Err != nil:
		o.Err = fmt.Errorf("reading the floor: %w", a.Err)
		return o
	case a.Bad != "" || a.Out.Unknown || a.Out.Status != contract.StatusOK:
		o.Err = fmt.Errorf("reading the floor: %s %s", a.Text, a.Bad)
		return o
	}
	o.Floor0 = a.Out.Highest
	names := bind(o.Floor0)
	st := fencemodel.Start(o.Floor0)
	sent := map[int]uint64{}
	ran := map[int]bool{}
	for _, n := range steps {
		if n < 1 || n > len(seq.Steps) {
			o.Err = fmt.Errorf("no step %d: the sequence has %d", n, len(seq.Steps))
			return o
		}
		s := seq.Steps[n-1]
		req := Request{Kind: s.Kind, Epoch: s.Epoch.resolve(st.Floor, sent)}
		if s.Kind == fencemodel.Put || s.Kind == fencemodel.Get {
			req.Key = names.Keys[s.Key]
		}
		if s.Kind == fencemodel.Put {
			req.Value = names.Values[s.Value]
			if s.Idem >= 0 {
				req.Idem = names.Idems[s.Idem]
			}
		}
		in := fencemodel.Input{Kind: s.Kind, Key: req.Key, Value: req.Value, Epoch: req.Epoch, Idem: req.Idem}
		want, next := fencemodel.Expect(st, in)
		a := sink.Do(ctx, req)
		line := Line{Step: n, Note: s.Note, Request: Describe(req), Answer: a.Text, Want: Render(in, want)}
		if s.Of > 0 && !ran[s.Of] {
			line.Note += fmt.Sprintf("; step %d is not in this run", s.Of)
		}
		ran[n] = true
		if a.Err != nil {
			o.Lines = append(o.Lines, line)
			o.Err = fmt.Errorf("step %d, %s: no answer: %w", n, line.Request, a.Err)
			return o
		}
		switch {
		case a.Bad != "":
			line.Bad = a.Bad
		case !fencemodel.Matches(in, want, a.Out):
			line.Bad = "not the model's answer"
		}
		o.Lines = append(o.Lines, line)
		if line.Bad != "" {
			o.Failed = true
			return o
		}
		if s.Kind == fencemodel.Put || s.Kind == fencemodel.Fence {
			sent[n] = req.Epoch
		}
		st = next
	}
	return o
}

// Describe is a request in a line.
func Describe(r Request) string {
	switch r.Kind {
	case fencemodel.Put:
		s := fmt.Sprintf("PUT %s %s: %d", contract.RecordPath(r.Key), contract.HeaderEpoch, r.Epoch)
		if r.Idem != "" {
			s += fmt.Sprintf(" %s: %s", contract.HeaderIdempotencyKey, strconv.Quote(r.Idem))
		}
		return s + " body " + strconv.Quote(r.Value)
	case fencemodel.Fence:
		return fmt.Sprintf("POST %s %s: %d", contract.PathFence, contract.HeaderEpoch, r.Epoch)
	case fencemodel.Get:
		return "GET " + contract.RecordPath(r.Key)
	}
	return "GET " + contract.PathFence
}

// Render is the model's answer as the contract writes it.
func Render(in fencemodel.Input, out fencemodel.Output) string {
	q := strconv.Quote
	switch {
	case out.Status == contract.StatusNotFound:
		return "404"
	case out.Status == contract.StatusBadRequest:
		return fmt.Sprintf(`400 {"result":%s}`, q(contract.ResultBadRequest))
	case in.Kind == fencemodel.Get:
		return fmt.Sprintf(`200 {"key":%s,"value":%s,"epoch":%d}`, q(in.Key), q(out.Value), out.Epoch)
	case in.Kind == fencemodel.Floor:
		return fmt.Sprintf(`200 {"highest_epoch":%d}`, out.Highest)
	case out.Result == contract.ResultConflict:
		return fmt.Sprintf(`422 {"result":%s}`, q(out.Result))
	case in.Kind == fencemodel.Put && out.Status == contract.StatusOK:
		return fmt.Sprintf(`200 {"result":%s,"epoch":%d}`, q(out.Result), out.Epoch)
	}
	return fmt.Sprintf(`%d {"result":%s,"highest_epoch":%d}`, out.Status, q(out.Result), out.Highest)
}
