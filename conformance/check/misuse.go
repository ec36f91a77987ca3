package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/witness/record"
)

// retryGrace is how long after an attempt without a definite answer its
// retry must start: the writer's backoff tops out at retry_period
// (docs/controller-contract.md, MUST 5), doubled for the jitter and the
// witness's own lag, plus a second; a 503 adds a Retry-After of up to
// retryAfterMax.
func retryGrace(c history.Config, status int) time.Duration {
	g := 2*c.RetryPeriod.D() + time.Second
	if status == 503 { // busy: Retry-After
		g += retryAfterMax
	}
	return g
}

// retryAfterMax is the longest Retry-After the check allows a sink.
const retryAfterMax = 10 * time.Second

// definite reports whether the client got an answer that settles the
// write: any 2xx or 4xx (MUST 5's table). No answer, a 5xx, or a write
// still in flight leave it unsettled: it must be retried.
func definite(o record.Operation) bool {
	return o.Type != record.Info && o.Type != record.Invoke && o.Status >= 200 && o.Status < 500
}

// checkIdempotencyMisuse judges, from the witness alone (and the Lease
// watch and pod addresses to know when a writer's right to send ended),
// how the controller uses Idempotency-Key (MUST 5):
//   - every PUT carries one;
//   - one key is one logical write: never sent with another record key
//     or value (the sink's 422 IDEMPOTENCY_CONFLICT is the same finding
//     from its side);
//   - a write is retried until it gets a definite answer: its last
//     attempt without one is followed by no retry although its sender
//     was still bound to retry it (its term not over, its pod not
//     deleted, the writers not stopped by the harness) past retryGrace
//     after that attempt.
func checkIdempotencyMisuse(s *history.Scenario) Verdict {
	var e evidence
	if s.Witness == nil {
		e.unknownf("no witness history: what the writers sent is unknown")
		return e.verdict()
	}
	byKey := map[string][]record.Operation{}
	var keys []string
	unkeyed := 0
	for _, o := range s.Witness.Operations {
		if o.Method != "PUT" || o.Harness != "" {
			continue
		}
		if o.IdempotencyKey == "" {
			if unkeyed == 0 {
				e.failf("%s has no Idempotency-Key: a write without one cannot be retried safely", describeOp(o))
			}
			unkeyed++
			continue
		}
		if _, ok := byKey[o.IdempotencyKey]; !ok {
			keys = append(keys, o.IdempotencyKey)
		}
		byKey[o.IdempotencyKey] = append(byKey[o.IdempotencyKey], o)
	}
	if unkeyed > 1 {
		e.addf("%d writes in all carry no Idempotency-Key", unkeyed)
	}
	if len(keys) == 0 {
		if unkeyed == 0 {
			e.unknownf("the witness saw no write: nothing to judge")
		}
		return e.verdict()
	}
	reused, conflicts, abandoned, excused := 0, 0, 0, 0
	for _, k := range keys {
		ops := byKey[k]
		if first, other, ok := anotherWrite(ops); ok {
			if reused == 0 {
				e.failf("Idempotency-Key %q names two logical writes: %s, then %s with another record key or value", k, describeWrite(first), describeWrite(other))
			}
			reused++
		}
		for _, o := range ops {
			if o.Result == contract.ResultConflict {
				if conflicts == 0 {
					e.failf("%s was answered 422 %s: its key had committed another record key or value (the keys are not unique)", describeOp(o), o.Result)
				}
				conflicts++
			}
		}
		last := ops[len(ops)-1]
		if definite(last) {
			continue
		}
		due := retryDue(s, last)
		end, why := sendingEnded(s, last)
		if !end.IsZero() && !end.After(due) {
			excused++
			continue
		}
		if abandoned == 0 {
			e.failf("%s got %s and was never retried (due by %s; its sender was still bound to retry it: %s)", describeOp(last), answerOf(last), ts(due), why)
		}
		abandoned++
	}
	if s.Witness.Dropped > 0 && abandoned > 0 {
		e.unknownf("the witness dropped %d operations past its limit: a retry may be among them", s.Witness.Dropped)
	}
	for _, c := range []struct {
		n    int
		what string
	}{{reused, "keys named two logical writes"}, {conflicts, "writes were answered 422"}, {abandoned, "writes were abandoned without a definite answer"}} {
		if c.n > 1 {
			e.addf("%d %s in all", c.n, c.what)
		}
	}
	if !e.fail {
		e.addf("%d keyed writes: each key one record key and value, no 422, every write retried to a definite answer while its sender was bound to retry it (%d left unanswered once it no longer was)", len(keys), excused)
	}
	return e.verdict()
}

// anotherWrite finds two attempts under one key that are not the same
// logical write: another record key, or another value (a hash that
// covers the whole body on both).
func anotherWrite(ops []record.Operation) (first, other record.Operation, ok bool) {
	first = ops[0]
	for _, o := range ops[1:] {
		if o.Key != first.Key {
			return first, o, true
		}
		if !o.ValuePartial && !first.ValuePartial && o.ValueSHA256 != "" && first.ValueSHA256 != "" && o.ValueSHA256 != first.ValueSHA256 {
			return first, o, true
		}
	}
	return first, record.Operation{}, false
}

func describeWrite(o record.Operation) string {
	v := o.ValueSHA256
	if len(v) > 12 {
		v = v[:12]
	}
	return fmt.Sprintf("witness op %d (put %s value sha256 %s, %d bytes, epoch %s at %s)", o.ID, o.Key, v, o.ValueLen, o.EpochHeader, ts(o.Invoked))
}

func answerOf(o record.Operation) string {
	switch {
	case o.Type == record.Invoke:
		return "no answer yet when the history was read"
	case o.Status == 0:
		return "no answer (" + strings.TrimSpace(o.Error) + ")"
	}
	return fmt.Sprintf("%d %s", o.Status, o.Result)
}

// answeredAt is when the client learned the attempt got no definite
// answer (when it was sent, for one still in flight).
func answeredAt(o record.Operation) time.Time {
	if o.Completed.IsZero() {
		return o.Invoked
	}
	return o.Completed
}

// retryDue is when o's retry must have started: retryGrace after its
// answer, plus the time in it that a fault on its sender froze the
// sender or kept its retries from the witness (fault.SilenceHides).
func retryDue(s *history.Scenario, o record.Operation) time.Time {
	from := answeredAt(o)
	due := from.Add(retryGrace(s.Config, o.Status))
	pod, _ := SenderOf(s, o)
	for _, w := range s.Chaos {
		f := faultOf(w)
		if f.Silences != fault.SilenceHides || !hitsSender(f, w, pod) || w.Recovered.Before(from) || w.Injected.After(due) {
			continue
		}
		start := w.Injected
		if start.Before(from) {
			start = from
		}
		due = due.Add(w.Recovered.Sub(start))
	}
	return due
}

// hitsSender reports whether window w of fault f acts on pod, the sender
// ("" when its address names no pod: any pod's window may be its).
func hitsSender(f fault.Fault, w history.ChaosWindow, pod string) bool {
	return f.Hits == fault.HitsEveryPod || pod == "" || w.Pod == pod
}

// sendingEnded is the first moment after o at which its sender was no
// longer bound to retry it: its term was over (termEnded), its pod was
// deleted, or the harness stopped every writer. Zero when none came; why
// says what the sender had then.
func sendingEnded(s *history.Scenario, o record.Operation) (end time.Time, why string) {
	earliest := func(t time.Time) {
		if !t.IsZero() && !t.Before(o.Invoked) && (end.IsZero() || t.Before(end)) {
			end = t
		}
	}
	if stopped, ok := writersStopped(s); ok {
		earliest(later(stopped, o.Invoked)) // sent while the harness stopped it: not owed a retry
	}
	if o.EpochValid() {
		if t := termEnded(s, o.Epoch); !t.IsZero() {
			earliest(later(t, o.Invoked)) // sent after its term ended: never bound to retry it
		}
	}
	pod, _ := SenderOf(s, o)
	for _, w := range s.Chaos {
		f := faultOf(w)
		switch {
		case f.Silences != fault.SilenceEnds || !hitsSender(f, w, pod):
		case pod != "" && w.Pod == pod:
			earliest(later(w.Injected, o.Invoked)) // sent while its pod was being deleted
		default:
			earliest(w.Injected) // every pod, in turn: only a deletion after the send
		}
	}
	switch {
	case end.IsZero():
		why = "its term never ended, its pod was never deleted, the writers were never stopped"
	default:
		why = "it had until " + ts(end)
	}
	return end, why
}

// termEnded is the earliest moment the Lease watch and the witness show
// term over for its writer (MUST 7's moments): renew_deadline after the
// last version of the Lease that carried it, the takeover that replaced
// it, or the first 409 the sink answered one of its requests. A writer
// may give up its unanswered writes from then on (retrying them until
// drain_timeout is allowed, never required: giving up is the safer
// choice). Zero when the term never ended.
func termEnded(s *history.Scenario, term uint64) time.Time {
	var end, last time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (end.IsZero() || t.Before(end)) {
			end = t
		}
	}
	replaced := false
	for _, t := range Takeovers(s) {
		if t.From != "" && t.FromTerm == term && t.ToTerm != term {
			earliest(t.Observed)
			replaced = true
			break
		}
	}
	for _, r := range s.Lease.Records {
		if r.Holder != "" && r.TermOK && r.Term == term && r.Event != "DELETED" {
			last = r.Observed
		}
	}
	if replaced && !last.IsZero() {
		earliest(last.Add(s.Config.RenewDeadline.D()))
	}
	for _, o := range s.Witness.Operations {
		if o.EpochValid() && o.Epoch == term && o.Result == contract.ResultRejectStale && !o.Completed.IsZero() {
			earliest(o.Completed)
			break
		}
	}
	return end
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
