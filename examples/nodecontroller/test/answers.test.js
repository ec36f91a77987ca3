'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { classifyWrite, classifyFence, classifyLease, parseRetryAfter } = require('../src/answers');

const ans = (status, body, headers = {}) => ({ status, body: body === undefined ? '' : JSON.stringify(body), headers });

test('write answers: MUST 5 table', () => {
  assert.equal(classifyWrite(ans(200, { result: 'OK', epoch: 3 })).outcome, 'committed');
  const dup = classifyWrite(ans(200, { result: 'OK_DUP', epoch: 2 }));
  assert.equal(dup.outcome, 'committed');
  assert.equal(dup.duplicate, true);
  assert.equal(classifyWrite(ans(409, { result: 'REJECT_STALE_EPOCH', highest_epoch: 9 })).outcome, 'stale');
  for (const s of [422, 400, 413, 401, 404, 418]) assert.equal(classifyWrite(ans(s, { result: 'X' })).outcome, 'refused', String(s));
  const busy = classifyWrite(ans(503, { result: 'ERROR' }, { 'retry-after': '2' }));
  assert.deepEqual([busy.outcome, busy.retryAfterMs], ['retry', 2000]);
  const e500 = classifyWrite(ans(500, undefined, { 'retry-after': '2' }));
  assert.deepEqual([e500.outcome, e500.retryAfterMs], ['retry', null]);
  const none = classifyWrite({ error: 'ECONNRESET' });
  assert.deepEqual([none.outcome, none.result, none.status], ['retry', 'TRANSPORT_ERROR', 0]);
  assert.equal(classifyWrite(ans(200, undefined)).outcome, 'committed'); // a 200 without a body still committed
});

test('fence answers: MUST 6 table', () => {
  assert.equal(classifyFence(ans(200, { result: 'OK', highest_epoch: 4 })).outcome, 'fenced');
  assert.equal(classifyFence(ans(409, { result: 'REJECT_STALE_EPOCH', highest_epoch: 9 })).outcome, 'stale');
  assert.equal(classifyFence(ans(400, { result: 'BAD_REQUEST' })).outcome, 'defect');
  assert.equal(classifyFence(ans(401, { result: 'UNAUTHORIZED' })).outcome, 'defect');
  const busy = classifyFence(ans(503, { result: 'ERROR' }, { 'retry-after': '1' }));
  assert.deepEqual([busy.outcome, busy.retryAfterMs], ['retry', 1000]);
  assert.equal(classifyFence(ans(502)).outcome, 'retry');
  assert.equal(classifyFence({ error: 'timeout' }).outcome, 'retry');
});

test('lease answers: MUST 1 table', () => {
  assert.equal(classifyLease('get', ans(200, {})), 'ok');
  assert.equal(classifyLease('create', ans(201, {})), 'ok');
  assert.equal(classifyLease('get', ans(404, {})), 'missing');
  assert.equal(classifyLease('update', ans(404, {})), 'unknown');
  assert.equal(classifyLease('update', ans(409, {})), 'conflict');
  assert.equal(classifyLease('create', ans(409, {})), 'conflict');
  assert.equal(classifyLease('get', ans(403, {})), 'forbidden');
  assert.equal(classifyLease('update', ans(500, {})), 'unknown');
  assert.equal(classifyLease('update', { error: 'timeout' }), 'unknown');
});

test('Retry-After: seconds or an HTTP date', () => {
  assert.equal(parseRetryAfter('3'), 3000);
  assert.equal(parseRetryAfter(undefined), null);
  assert.equal(parseRetryAfter('soon'), null);
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now), 5000);
  assert.equal(parseRetryAfter('Wed, 31 Dec 2025 00:00:05 GMT', now), 0);
});
