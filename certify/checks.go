package certify

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/contract"
)

// catalog lists every check in run order. Names are stable: tests and
// certificates refer to them.
func catalog() []check {
	return []check{
		{ProfileCore, "floor-readable", "GET /v1/fence answers 200 with highest_epoch", checkFloorReadable},
		{ProfileCore, "write-commits", "a write at an epoch above the floor commits and reads back", checkWriteCommits},
		{ProfileCore, "equal-epoch-commits", "writes at an epoch equal to the floor commit (same leader keeps writing)", checkEqualEpoch},
		{ProfileCore, "stale-write-rejected", "a write below the floor gets 409 REJECT_STALE_EPOCH and is not applied", checkStaleRejected},
		{ProfileCore, "floor-is-global", "one floor per sink: a stale write to a key the new leader never touched is rejected", checkFloorGlobal},
		{ProfileCore, "missing-epoch-rejected", "a write without the epoch header is refused (4xx) and not applied", checkMissingEpoch},
		{ProfileCore, "malformed-epoch-rejected", "epochs that are no uint64 (empty, -1, 2^64, text) are refused (4xx) and change nothing", checkMalformedEpoch},
		{ProfileCore, "fence-raises-floor", "POST /v1/fence raises the floor: later writes below it are rejected", checkFenceRaises},
		{ProfileCore, "fence-below-floor-rejected", "POST /v1/fence below the floor gets 409 and leaves the floor", checkFenceBelow},
		{ProfileCore, "fence-at-floor-ok", "POST /v1/fence at the floor is OK (a repeated barrier)", checkFenceAtFloor},
		{ProfileCore, "model-sequences", "seeded sequences of fences, writes, reads and floor reads at epochs around the floor and at every digit-length crossing below it: every field of every answer is the model's", checkModelSequences},
		{ProfileIdempotency, "retry-is-ok-dup", "a retry with the same Idempotency-Key, key and value answers OK_DUP with the first epoch", checkRetryDup},
		{ProfileIdempotency, "dup-not-reapplied", "an OK_DUP retry does not apply the value again", checkDupNotReapplied},
		{ProfileIdempotency, "dup-after-takeover", "a retry of a committed write after a takeover (fence, new leader's write) answers OK_DUP and is not applied", checkDupAfterTakeover},
		{ProfileIdempotency, "retry-after-many-writes", "a retry 300 writes (each with its own key) after the first commit still answers OK_DUP", checkRetryAfterMany},
		{ProfileIdempotency, "concurrent-retries-apply-once", "the same write sent by 8 writers at once: exactly one OK, the others OK_DUP", checkConcurrentRetries},
		{ProfileIdempotency, "retry-after-lost-answer", "a retry of a write whose answer was lost (the client hung up) is applied at most once", checkLostAnswer},
		{ProfileIdempotency, "key-reuse-conflicts", "the same Idempotency-Key with another value or key gets 422 and is not applied", checkKeyReuse},
		{ProfileIdempotency, "rejected-write-not-remembered", "a rejected write does not consume its Idempotency-Key", checkRejectedNotRemembered},
		{ProfileIdempotency, "model-retries", "seeded sequences of keyed writes and retries that differ (later epoch after a takeover, lower epoch, another value or record, after a refusal): every field of every answer is the model's", checkModelRetries},
		{ProfileDurability, "floor-survives-restart", "after a graceful restart the floor raised by a fence alone is kept", checkFloorSurvives(modeRestart)},
		{ProfileDurability, "records-survive-restart", "after a graceful restart all 200 acknowledged records read back", checkRecordsSurvive(modeRestart)},
		{ProfileDurability, "idempotency-survives-restart", "after a graceful restart the retries of all 200 committed writes (the same request, at a later and a lower epoch, with another value) get OK_DUP with the first epoch or 422, and a write refused before it commits", checkIdemSurvives(modeRestart)},
		{ProfileDurability, "floor-survives-kill", "after SIGKILL the floor raised by a fence alone is kept", checkFloorSurvives(modeKill)},
		{ProfileDurability, "records-survive-kill", "after SIGKILL all 200 acknowledged records read back", checkRecordsSurvive(modeKill)},
		{ProfileDurability, "idempotency-survives-kill", "after SIGKILL the retries of all 200 committed writes (the same request, at a later and a lower epoch, with another value) get OK_DUP with the first epoch or 422, and a write refused before it commits", checkIdemSurvives(modeKill)},
		{ProfileConcurrency, "answers-under-load", "many writers with mixed epochs at once: every request gets a contract answer", checkAnswersUnderLoad},
		{ProfileConcurrency, "linearizable", "the concurrent history is linearizable against a fenced register (porcupine)", checkLinearizable},
		{ProfileHygiene, "epoch-format-is-400", "a missing epoch and every epoch that is not plain decimal uint64 digits (+5, 1e3, 0x10...) get exactly 400", checkEpochFormat},
		{ProfileHygiene, "value-size-limit", "a 1 MiB value commits; a larger one gets 4xx and is not applied", checkValueLimit},
		{ProfileHygiene, "malformed-idempotency-key-rejected", "an Idempotency-Key that is not 1 to 255 printable ASCII gets 400", checkMalformedIdem},
		{ProfileDomain, "whole-range-walk", "a walk of the floor up to 2^64-1 through every representation edge (2^31, 2^32, 2^53, 2^63 and their neighbours) and digit-length crossing, with writes at, just below and far below the floor: every field of every answer is the model's", checkRangeWalk},
	}
}

// --- core ---

func checkFloorReadable(s *session) error {
	_, err := s.floor()
	return err
}

func checkWriteCommits(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k := s.key()
	return all(
		func() error { return s.putOK(k, s.v("v1"), e, "") },
		func() error { return s.recordIs(k, s.v("v1"), e) },
		func() error { return s.floorAtLeast(e) },
	)
}

func checkEqualEpoch(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k1, k2 := s.key(), s.key()
	return all(
		func() error { return s.putOK(k1, s.v("first"), e, "") },
		func() error { return s.putOK(k2, s.v("second"), e, "") },
		func() error { return s.putOK(k1, s.v("third"), e, "") },
		func() error { return s.recordIs(k1, s.v("third"), e) },
	)
}

func checkStaleRejected(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k := s.key()
	return all(
		func() error { return s.putOK(k, s.v("new-leader"), e+1, "") },
		func() error { return s.putStale(k, s.v("stale-leader"), e, "", e+1) },
		func() error { return s.recordIs(k, s.v("new-leader"), e+1) },
		func() error { return s.floorAtLeast(e + 1) },
	)
}

func checkFloorGlobal(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	touched, untouched := s.key(), s.key()
	return all(
		func() error { return s.putOK(touched, s.v("new-leader"), e+1, "") },
		func() error { return s.putStale(untouched, s.v("stale-leader"), e, "", e+1) },
		func() error { return s.absent(untouched) },
	)
}

func checkMissingEpoch(s *session) error {
	k := s.key()
	rep, err := s.rawPut(k, []byte(s.value()), nil)
	if err != nil {
		return fmt.Errorf("PUT without epoch: %w", err)
	}
	if rep.Status < 400 || rep.Status > 499 {
		return fmt.Errorf("PUT without %s: want a 4xx (400), got %d %s", contract.HeaderEpoch, rep.Status, body(rep.Body))
	}
	return s.absent(k)
}

// unusableEpochs cannot be read as any leader's epoch: accepting one means
// an unfenced write, or a floor moved to whatever the sink made of it.
var unusableEpochs = []string{"", "abc", "-1", "18446744073709551616", "99999999999999999999999"}

// strictEpochs could be misread as a number; refusing them with exactly
// 400 is wire hygiene. The HTTP layer trims surrounding spaces, so none of
// them relies on that.
var strictEpochs = []string{"+5", "1.0", "1e3", "0x10", "5 6", "007x"}

func checkMalformedEpoch(s *session) error { return sendMalformedEpochs(s, unusableEpochs, false) }

func checkEpochFormat(s *session) error {
	k := s.key()
	rep, err := s.rawPut(k, []byte(s.value()), nil)
	if err != nil {
		return fmt.Errorf("PUT without epoch: %w", err)
	}
	if rep.Status != http.StatusBadRequest {
		return fmt.Errorf("PUT without %s: want 400, got %d %s", contract.HeaderEpoch, rep.Status, body(rep.Body))
	}
	return sendMalformedEpochs(s, append(slices.Clone(unusableEpochs), strictEpochs...), true)
}

// sendMalformedEpochs sends each bad epoch in a PUT and a fence: each must
// be refused (exactly 400 when exact, any 4xx otherwise), apply nothing and
// leave the floor where it was.
func sendMalformedEpochs(s *session, bads []string, exact bool) error {
	f, err := s.floor()
	if err != nil {
		return err
	}
	refused := func(status int) bool {
		return status == http.StatusBadRequest || !exact && status >= 400 && status <= 499
	}
	want := "a 4xx (400)"
	if exact {
		want = "400"
	}
	for _, bad := range bads {
		k := s.key()
		rep, err := s.rawPut(k, []byte(s.value()), map[string]string{contract.HeaderEpoch: bad})
		if err != nil {
			return fmt.Errorf("PUT with epoch %q: %w", bad, err)
		}
		if !refused(rep.Status) {
			return fmt.Errorf("PUT with epoch %q: want %s, got %d %s", bad, want, rep.Status, body(rep.Body))
		}
		if err := s.absent(k); err != nil {
			return err
		}
		frep, err := s.raw(http.MethodPost, contract.PathFence, nil, map[string]string{contract.HeaderEpoch: bad})
		s.record(fmt.Sprintf("POST %s %s: %q", contract.PathFence, contract.HeaderEpoch, bad), frep, err)
		if err != nil {
			return fmt.Errorf("POST fence with epoch %q: %w", bad, err)
		}
		if !refused(frep.Status) {
			return fmt.Errorf("POST fence with epoch %q: want %s, got %d %s", bad, want, frep.Status, body(frep.Body))
		}
	}
	// A malformed epoch such as 99999999999999999999999 must not have
	// raised the floor to anything.
	now, err := s.floor()
	if err != nil {
		return err
	}
	if now != f {
		return fmt.Errorf("the floor moved from %d to %d while only malformed requests were sent", f, now)
	}
	return nil
}

func checkFenceRaises(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	below, at := s.key(), s.key()
	return all(
		func() error { return s.fenceOK(e + 5) },
		func() error { return s.floorAtLeast(e + 5) },
		func() error { return s.putStale(below, s.v("old-leader"), e+4, "", e+5) },
		func() error { return s.absent(below) },
		func() error { return s.putOK(at, s.v("new-leader"), e+5, "") },
	)
}

func checkFenceBelow(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	return all(
		func() error { return s.fenceOK(e + 2) },
		func() error {
			fr, rep, err := s.fence(e + 1)
			if err != nil {
				return fmt.Errorf("POST fence at epoch %d: %w", e+1, err)
			}
			if rep.Status != http.StatusConflict || fr.Result != contract.ResultRejectStale || fr.HighestEpoch < e+2 {
				return fmt.Errorf("POST fence at epoch %d below the floor %d: want 409 {result:%s highest_epoch>=%d}, got %d %s",
					e+1, e+2, contract.ResultRejectStale, e+2, rep.Status, body(rep.Body))
			}
			return nil
		},
		func() error { return s.floorAtLeast(e + 2) },
	)
}

func checkFenceAtFloor(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	return all(
		func() error { return s.fenceOK(e) },
		func() error { return s.fenceOK(e) },
	)
}

func checkValueLimit(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	okKey, bigKey := s.key(), s.key()
	max := randString(s.rng, keyChars, contract.MaxValueBytes, contract.MaxValueBytes)
	return all(
		func() error { return s.putOK(okKey, max, e, "") },
		func() error { return s.recordIs(okKey, max, e) },
		func() error {
			rep, err := s.rawPut(bigKey, []byte(max+"x"), map[string]string{contract.HeaderEpoch: contract.FormatEpoch(e)})
			if err != nil {
				return fmt.Errorf("PUT of %d bytes: %w", contract.MaxValueBytes+1, err)
			}
			if rep.Status < 400 || rep.Status > 499 {
				return fmt.Errorf("PUT of %d bytes: want a 4xx (413), got %d %s", contract.MaxValueBytes+1, rep.Status, body(rep.Body))
			}
			return nil
		},
		func() error { return s.absent(bigKey) },
	)
}

// --- idempotency ---

func checkRetryDup(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, i := s.key(), s.idem()
	return all(
		func() error { return s.putOK(k, s.v("once"), e, i) },
		func() error { return s.putExpect(k, s.v("once"), e, i, http.StatusOK, contract.ResultOKDup, e) },
		func() error { return s.recordIs(k, s.v("once"), e) },
	)
}

func checkDupNotReapplied(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, i1, i2 := s.key(), s.idem(), s.idem()
	return all(
		func() error { return s.putOK(k, s.v("v1"), e, i1) },
		func() error { return s.putOK(k, s.v("v2"), e+1, i2) },
		func() error { return s.putExpect(k, s.v("v1"), e, i1, http.StatusOK, contract.ResultOKDup, e) },
		func() error { return s.recordIs(k, s.v("v2"), e+1) },
	)
}

func checkDupAfterTakeover(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, i := s.key(), s.idem()
	return all(
		func() error { return s.putOK(k, s.v("landed"), e, i) },
		func() error { return s.fenceOK(e + 3) },
		func() error { return s.putOK(k, s.v("new-leader"), e+4, s.idem()) },
		func() error { return s.putExpect(k, s.v("landed"), e, i, http.StatusOK, contract.ResultOKDup, e) },
		func() error { return s.recordIs(k, s.v("new-leader"), e+4) },
	)
}

func checkKeyReuse(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, other, i := s.key(), s.key(), s.idem()
	return all(
		func() error { return s.putOK(k, s.v("v"), e, i) },
		func() error {
			return s.putExpect(k, s.v("w"), e, i, http.StatusUnprocessableEntity, contract.ResultConflict, 0)
		},
		func() error { return s.recordIs(k, s.v("v"), e) },
		func() error {
			return s.putExpect(other, s.v("v"), e, i, http.StatusUnprocessableEntity, contract.ResultConflict, 0)
		},
		func() error { return s.absent(other) },
	)
}

func checkRejectedNotRemembered(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	k, i := s.key(), s.idem()
	return all(
		func() error { return s.putOK(k, s.v("new-leader"), e+1, "") },
		func() error { return s.putStale(k, s.v("retried"), e, i, e+1) },
		func() error { return s.putOK(k, s.v("retried"), e+2, i) },
		func() error { return s.recordIs(k, s.v("retried"), e+2) },
	)
}

func checkMalformedIdem(s *session) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	for _, bad := range []string{strings.Repeat("i", contract.MaxIdempotencyKeyLen+1), "caf\u00e9"} {
		k := s.key()
		rep, err := s.rawPut(k, []byte(s.value()), map[string]string{contract.HeaderEpoch: contract.FormatEpoch(e), contract.HeaderIdempotencyKey: bad})
		if err != nil {
			return fmt.Errorf("PUT with Idempotency-Key %q: %w", truncate(bad, 20), err)
		}
		if rep.Status != http.StatusBadRequest {
			return fmt.Errorf("PUT with Idempotency-Key %q: want 400, got %d %s", truncate(bad, 20), rep.Status, body(rep.Body))
		}
		if err := s.absent(k); err != nil {
			return err
		}
	}
	// The longest valid key still works.
	return s.putOK(s.key(), s.value(), e, randString(s.rng, idemChars, contract.MaxIdempotencyKeyLen, contract.MaxIdempotencyKeyLen))
}
