package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fencemodel"
	"github.com/fencecheck/fencecheck/witness/record"
)

// linearizeTimeout bounds porcupine; a test makes it tiny to see the
// undecided case, which is INCONCLUSIVE, never a pass.
var linearizeTimeout = 30 * time.Second

// linHistory is a scenario's witness history and final reads as porcupine
// operations against fencemodel, the register certify checks too.
type linHistory struct {
	ops     []porcupine.Operation
	unknown []string // why the history cannot be judged
}

// linOps builds the history. Times are nanoseconds since the witness
// started. A write or fence with no definite answer (info) is pending in
// the model once the witness gave up on it, so it may still take effect
// before any later operation; one still in flight when the witness was
// read ends there. The witness is read after the writers stopped, so the
// sink is at rest by then: the final records come after everything, one
// GET per key written or read.
func linOps(s *history.Scenario) linHistory {
	var h linHistory
	w := s.Witness
	base := w.Started
	if len(w.Operations) > 0 && (base.IsZero() || w.Operations[0].Invoked.Before(base)) {
		base = w.Operations[0].Invoked
	}
	ns := func(t time.Time) int64 { return t.Sub(base).Nanoseconds() }
	end := ns(w.Read)
	for _, o := range w.Operations {
		end = max(end, ns(o.Invoked), ns(o.Completed))
	}
	clients := map[string]int{}
	keys := map[string]bool{}
	for _, o := range w.Operations {
		in, out, ok := linOp(o)
		if !ok {
			continue
		}
		if o.ValuePartial && in.Kind == fencemodel.Put && o.Type != record.Fail {
			h.unknown = append(h.unknown, fmt.Sprintf("op #%d sent a value the witness did not read to its end: what it may have written is unknown", o.ID))
			continue
		}
		c, seen := clients[o.Source]
		if !seen {
			c = len(clients)
			clients[o.Source] = c
		}
		if in.Kind == fencemodel.Put || in.Kind == fencemodel.Get {
			keys[in.Key] = true
		}
		call, ret := ns(o.Invoked), end
		if !o.Completed.IsZero() {
			ret = ns(o.Completed)
		}
		call, ret = upstreamInterval(o, call, ret, ns)
		h.ops = append(h.ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
	}
	final := map[string]contract.Record{}
	for _, r := range s.FinalRecords {
		final[r.Key] = r
		keys[r.Key] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for i, k := range sorted {
		out := fencemodel.Output{Status: contract.StatusNotFound}
		if r, ok := final[k]; ok {
			sum := sha256.Sum256([]byte(r.Value))
			out = fencemodel.Output{Status: contract.StatusOK, Value: hex.EncodeToString(sum[:]), Epoch: r.Epoch}
		}
		at := end + 1 + 2*int64(i)
		h.ops = append(h.ops, porcupine.Operation{ClientId: len(clients), Input: fencemodel.Input{Kind: fencemodel.Get, Key: k, Label: "final read"},
			Call: at, Output: out, Return: at + 1})
	}
	return h
}

// linOp is one witness operation in the model's terms; ok is false for
// what the register does not speak of: a request never sent (dial
// failed), other paths, reads whose answer the witness does not keep (a
// found record's value) and reads that failed.
func linOp(o record.Operation) (fencemodel.Input, fencemodel.Output, bool) {
	in := fencemodel.Input{Key: o.Key, Value: o.ValueSHA256, Epoch: o.Epoch, NoEpoch: !o.EpochValid(), Idem: o.IdempotencyKey, Label: fmt.Sprintf("#%d", o.ID)}
	out := fencemodel.Output{Status: o.Status, Result: o.Result, Epoch: o.ResultEpoch, Highest: o.HighestEpoch}
	if o.Type == record.Info || o.Type == record.Invoke {
		out = fencemodel.Output{Unknown: true, Why: string(o.Type) + " " + o.Error}
	}
	if o.Type == record.Fail && o.Status == 0 {
		return in, out, false
	}
	switch {
	case o.Method == "PUT" && o.Key != "":
		in.Kind = fencemodel.Put
	case o.Method == "POST" && o.Path == contract.PathFence:
		in.Kind = fencemodel.Fence
	case o.Method == "GET" && o.Path == contract.PathFence && o.Type == record.OK:
		in.Kind = fencemodel.Floor
	case o.Method == "GET" && o.Key != "" && o.Status == contract.StatusNotFound:
		in.Kind = fencemodel.Get
	default:
		return in, out, false
	}
	if in.Kind == fencemodel.Put || in.Kind == fencemodel.Fence {
		switch {
		case o.Type == record.OK && o.Result == "":
			// 2xx, but the body did not parse: OK or OK_DUP, the
			// model cannot tell, so the outcome is unknown.
			out = fencemodel.Output{Unknown: true, Why: "answer body not parsed"}
		case o.Type == record.Fail && !ruled(in, o):
			// Turned away before the fencing rule (413, 401, a body
			// that did not parse): no effect, nothing said of the floor.
			return in, out, false
		}
	}
	return in, out, true
}

// ruled: a definite refusal the contract's rule gives (409, 422, or 400
// for a missing or malformed epoch), which the model judges.
func ruled(in fencemodel.Input, o record.Operation) bool {
	switch {
	case o.Result == "":
		return false
	case o.Status == contract.StatusConflict, o.Status == contract.StatusUnprocessable:
		return true
	}
	return o.Status == contract.StatusBadRequest && in.NoEpoch
}

// checkLinearizable: the witness's history plus the final reads is
// linearizable against the fenced register of the contract, starting
// from a fresh sink (floor 0, no records).
func checkLinearizable(s *history.Scenario) Verdict {
	v, _ := linearize(s)
	return v
}

// linearize judges s and returns porcupine's HTML visualization when the
// history is not linearizable.
func linearize(s *history.Scenario) (Verdict, []byte) {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history recorded")
		return e.verdict(), nil
	}
	h := linOps(s)
	for _, u := range h.unknown {
		e.unknownf("%s", u)
	}
	if e.fail {
		return e.verdict(), nil
	}
	fencemodel.ForgetSingleUse(h.ops)
	model := fencemodel.Model(fencemodel.Start(0))
	res, info := porcupine.CheckOperationsVerbose(model, h.ops, linearizeTimeout)
	switch res {
	case porcupine.Ok:
		// No timing here: a verdict judged again must read the same.
		e.addf("%d operations (witness and final reads) are linearizable against a fenced register (porcupine)", len(h.ops))
		return e.verdict(), nil
	case porcupine.Unknown:
		e.unknownf("porcupine could not decide on %d operations within %v", len(h.ops), linearizeTimeout)
		return e.verdict(), nil
	}
	e.failf("%d operations (witness and final reads) are not linearizable against a fenced register; porcupine's visualization: %s", len(h.ops), LinearizabilityFile(s.Name))
	lines, witnesses := blocked(h.ops, info)
	for _, line := range lines {
		e.failf("%s", line)
	}
	// Mark the same operations on porcupine's page, on a row of their own.
	var marks []porcupine.Annotation
	for i, w := range witnesses {
		op := h.ops[w]
		desc, color := "left out", "#ffcdd2"
		if i == 0 {
			desc, color = "last explained", "#c8e6c9"
		}
		marks = append(marks, porcupine.Annotation{Tag: "witnesses", Start: op.Call, End: op.Return, Description: desc,
			Details: describeLin(op), BackgroundColor: color})
	}
	info.AddAnnotations(marks)
	var b bytes.Buffer
	if err := porcupine.Visualize(model, info, &b); err != nil {
		e.addf("rendering porcupine's visualization failed: %v", err)
		return e.verdict(), nil
	}
	return e.verdict(), b.Bytes()
}

// blocked names the operations that witness the violation: the longest
// order porcupine could explain, and the first operations to finish of
// those it leaves out (the one that cannot follow is among them, or
// overlaps them).
func blocked(ops []porcupine.Operation, info porcupine.LinearizationInfo) ([]string, []int) {
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	done := map[int]bool{}
	for _, i := range longest {
		done[i] = true
	}
	var lines []string
	var witnesses []int
	if n := len(longest); n > 0 {
		last := longest[n-1]
		lines = append(lines, fmt.Sprintf("the longest order porcupine can explain covers %d of %d operations and ends with %s", n, len(ops), describeLin(ops[last])))
		witnesses = append(witnesses, last)
	}
	var rest []int
	for i := range ops {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	sort.SliceStable(rest, func(a, b int) bool { return ops[rest[a]].Return < ops[rest[b]].Return })
	for _, i := range rest[:min(len(rest), 3)] {
		lines = append(lines, "left out, first to finish: "+describeLin(ops[i]))
		witnesses = append(witnesses, i)
	}
	return lines, witnesses
}

func describeLin(op porcupine.Operation) string {
	return fencemodel.Describe(op.Input.(fencemodel.Input), op.Output.(fencemodel.Output))
}

// LinearizabilityFile is the name a report gives porcupine's visualization
// of a scenario that is not linearizable.
func LinearizabilityFile(scenario string) string { return "linearizable-" + scenario + ".html" }

// LinearizabilityHTML judges s again and, when its history is not
// linearizable, renders porcupine's visualization (an HTML page); ok is
// false when there is nothing to show (linearizable, or not decided).
func LinearizabilityHTML(s *history.Scenario) ([]byte, bool, error) {
	v, html := linearize(s)
	if v.Status == StatusPass || v.Status == StatusInconclusive {
		return nil, false, nil
	}
	if html == nil {
		return nil, false, fmt.Errorf("linearizable: %s: porcupine's visualization could not be rendered", s.Name)
	}
	return html, true, nil
}
