'use strict';
// Retry spacing (MUST 5: "for example 100 ms doubling up to retry_period,
// and honour Retry-After") and the candidates' jitter (MUST 2: client-go
// waits between retry_period and 2.2 x retry_period).

// retryDelay: the wait before attempt number `attempt` + 1 (attempt counts
// from 1 for the first send), given the answer's Retry-After (ms or null).
// Retry-After wins when present, even when above the cap: the sink asked.
function retryDelay(attempt, retryAfterMs, { baseMs = 100, capMs = 1000 } = {}) {
  if (retryAfterMs !== null && retryAfterMs !== undefined && retryAfterMs >= 0) return retryAfterMs;
  const n = Math.max(0, attempt - 1);
  const d = baseMs * Math.pow(2, Math.min(n, 30));
  return Math.min(d, Math.max(baseMs, capMs));
}

// candidateWait: jittered wait between a candidate's tries.
function candidateWait(retryPeriodMs, rand = Math.random) {
  return retryPeriodMs * (1 + 1.2 * rand());
}

// sendAllowed: may an attempt of a write be sent now? `deadline` is the
// last moment a PUT of the term may be sent (null while the term is held).
function sendAllowed(now, deadline, aborted) {
  if (aborted) return false;
  return deadline === null || now < deadline;
}

module.exports = { retryDelay, candidateWait, sendAllowed };
