'use strict';
// Pure classification of the sink's answers (MUST 5, 6, 7, 8) and the
// apiserver's (MUST 1, 2).

function parseBody(text) {
  if (typeof text !== 'string' || text === '') return null;
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? v : null;
  } catch (_) {
    return null;
  }
}

// parseRetryAfter: a Retry-After header (delay-seconds or an HTTP date) in
// milliseconds, or null when absent or unreadable.
function parseRetryAfter(value, now = Date.now()) {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) value = value[0];
  const s = String(value).trim();
  if (/^[0-9]+$/.test(s)) return Number(s) * 1000;
  const t = Date.parse(s);
  if (Number.isNaN(t)) return null;
  return Math.max(0, t - now);
}

// classifyWrite: the answer to PUT /v1/records/{key}. `answer` is
// {status, headers, body} or {error} for no answer. Returns
//   {outcome: 'committed', result, epoch}           200 OK / OK_DUP: done
//   {outcome: 'stale', result, highestEpoch}        409: done, and the term is lost
//   {outcome: 'refused', result, defect}            422, 400, 401, 413, other 4xx: done, never retried
//   {outcome: 'retry', result, retryAfterMs}        503 (Retry-After), other 5xx, no answer
function classifyWrite(answer, now = Date.now()) {
  if (!answer || answer.error !== undefined || !answer.status) {
    return { outcome: 'retry', result: 'TRANSPORT_ERROR', status: 0, retryAfterMs: null };
  }
  const status = answer.status;
  const body = parseBody(answer.body) || {};
  const result = typeof body.result === 'string' ? body.result : '';
  if (status === 200) {
    return { outcome: 'committed', result: result || 'OK', status, epoch: body.epoch, duplicate: result === 'OK_DUP' };
  }
  if (status >= 200 && status < 300) {
    // Not in the contract's table; a 2xx is an acknowledgement.
    return { outcome: 'committed', result: result || `HTTP_${status}`, status, epoch: body.epoch, duplicate: false };
  }
  if (status === 409) {
    return { outcome: 'stale', result: result || 'REJECT_STALE_EPOCH', status, highestEpoch: body.highest_epoch };
  }
  if (status >= 500) {
    const retryAfterMs = status === 503 ? parseRetryAfter(header(answer.headers, 'retry-after'), now) : null;
    return { outcome: 'retry', result: result || 'ERROR', status, retryAfterMs };
  }
  const defect = {
    422: 'Idempotency-Key reused for another record: the key scheme is broken',
    400: 'malformed epoch, key or Idempotency-Key',
    401: 'missing or wrong sink token',
    413: 'value over 1 MiB',
  }[status] || `refused with ${status}`;
  return { outcome: 'refused', result: result || `HTTP_${status}`, status, defect };
}

// classifyFence: the answer to POST /v1/fence.
//   {outcome: 'fenced'}   200 OK: start writing
//   {outcome: 'stale'}    409: lost before we began
//   {outcome: 'defect'}   400, 401, other 4xx: a defect of ours; fencing again will not help
//   {outcome: 'retry', retryAfterMs}  503, other 5xx, no answer: fence again with the same term
function classifyFence(answer, now = Date.now()) {
  if (!answer || answer.error !== undefined || !answer.status) {
    return { outcome: 'retry', result: 'TRANSPORT_ERROR', status: 0, retryAfterMs: null };
  }
  const status = answer.status;
  const body = parseBody(answer.body) || {};
  const result = typeof body.result === 'string' ? body.result : '';
  if (status >= 200 && status < 300) return { outcome: 'fenced', result: result || 'OK', status, highestEpoch: body.highest_epoch };
  if (status === 409) return { outcome: 'stale', result: result || 'REJECT_STALE_EPOCH', status, highestEpoch: body.highest_epoch };
  if (status >= 500) {
    const retryAfterMs = status === 503 ? parseRetryAfter(header(answer.headers, 'retry-after'), now) : null;
    return { outcome: 'retry', result: result || 'ERROR', status, retryAfterMs };
  }
  return { outcome: 'defect', result: result || `HTTP_${status}`, status };
}

// classifyLease: the apiserver's answer to Get, Create or Update of the Lease.
//   ok | missing (404 on Get) | conflict (409) | forbidden (403) | unknown (5xx, no answer, anything else)
function classifyLease(op, answer) {
  if (!answer || answer.error !== undefined || !answer.status) return 'unknown';
  const s = answer.status;
  if (s === 200 || s === 201) return 'ok';
  if (s === 404 && op === 'get') return 'missing';
  if (s === 409) return 'conflict';
  if (s === 403) return 'forbidden';
  return 'unknown';
}

function header(headers, name) {
  if (!headers) return undefined;
  return headers[name] !== undefined ? headers[name] : headers[name.toLowerCase()];
}

module.exports = { parseBody, parseRetryAfter, classifyWrite, classifyFence, classifyLease };
