'use strict';
// The per-term writer against an in-memory sink (no network): fence first,
// keyed retries until a definite answer, a 409 ends the term, the drain
// deadline and the abort stop every send.
const test = require('node:test');
const assert = require('node:assert/strict');
const { TermWriter } = require('../src/writer');

const cfg = { retryPeriodMs: 50, writeIntervalMs: 5, drainTimeoutMs: 400, drainMarginMs: 40, writeTimeoutMs: 1000 };

function fakeSink(answerPut, answerFence = () => ({ status: 200, body: '{"result":"OK","highest_epoch":1}' })) {
  const log = [];
  return {
    log,
    newAgent: () => ({ destroy() {} }),
    fence: async (term) => {
      log.push({ op: 'fence', term, t: Date.now() });
      return answerFence(log);
    },
    put: (term, key, value, idem, { signal }) =>
      new Promise((resolve) => {
        const e = { op: 'put', term, key, value, idem, t: Date.now() };
        log.push(e);
        const a = answerPut(e, log);
        if (a === 'hang') {
          signal.addEventListener('abort', () => resolve({ error: 'aborted' }));
          return;
        }
        setImmediate(() => resolve(a));
      }),
  };
}

function writer(sink, over = {}) {
  const events = [];
  const w = new TermWriter({
    term: 7n,
    identity: 'pod-a_0123abcd',
    cfg,
    sink,
    event: (kind, f) => events.push({ kind, ...f, t: Date.now() }),
    log: () => {},
    onStale: over.onStale || (() => {}),
    leaseRunsOutAt: over.leaseRunsOutAt || (() => null),
  });
  return { w, events };
}

const until = (cond, ms = 3000) =>
  new Promise((resolve, reject) => {
    const end = Date.now() + ms;
    const iv = setInterval(() => {
      if (cond()) {
        clearInterval(iv);
        resolve();
      } else if (Date.now() > end) {
        clearInterval(iv);
        reject(new Error('timeout'));
      }
    }, 2);
  });

test('fence first, then writes keyed <identity>.<term>.<seq>, one per row in order', async () => {
  const sink = fakeSink(() => ({ status: 200, body: '{"result":"OK","epoch":7}' }));
  const { w, events } = writer(sink);
  w.start();
  await until(() => sink.log.filter((e) => e.op === 'put').length >= 5);
  w.stopDrain(Date.now());
  await w.joined;
  assert.equal(sink.log[0].op, 'fence');
  const puts = sink.log.filter((e) => e.op === 'put');
  puts.forEach((p, i) => {
    assert.equal(p.idem, `pod-a_0123abcd.7.${i}`);
    assert.equal(p.key, `row-${String(i % 64).padStart(3, '0')}`);
    assert.equal(p.value, `gen-7-seq-${i}`);
    assert.equal(p.term, 7n);
  });
  const kinds = events.map((e) => e.kind);
  assert.equal(kinds[0], 'bridge_spawned');
  assert.deepEqual(kinds.slice(-2), ['bridge_drained', 'bridge_joined']);
  assert.match(events.at(-2).detail, /^enqueued=\d+$/);
});

test('no definite answer: the same request again, many times, honouring Retry-After', async () => {
  let n = 0;
  const sink = fakeSink((e) => {
    if (e.idem.endsWith('.0')) {
      n++;
      if (n <= 6) return n % 2 ? { error: 'ECONNREFUSED' } : { status: 503, headers: { 'retry-after': '0' }, body: '{"result":"ERROR"}' };
    }
    return { status: 200, body: '{"result":"OK","epoch":7}' };
  });
  const { w } = writer(sink);
  w.start();
  await until(() => sink.log.some((e) => e.op === 'put' && e.idem.endsWith('.1')));
  w.stopDrain(Date.now());
  await w.joined;
  const first = sink.log.filter((e) => e.op === 'put' && e.idem.endsWith('.0'));
  assert.equal(first.length, 7); // 6 without a definite answer, then OK
  for (const a of first) assert.deepEqual([a.key, a.value, a.term], ['row-000', 'gen-7-seq-0', 7n]);
});

test('a 409 ends the term: onStale, and the fence 409 means no write at all', async () => {
  let stale = 0;
  const sink = fakeSink(() => ({ status: 409, body: '{"result":"REJECT_STALE_EPOCH","highest_epoch":9}' }));
  const { w } = writer(sink, { onStale: () => stale++ });
  w.start();
  await until(() => stale > 0);
  w.stopDrain(Date.now());
  await w.joined;
  assert.ok(stale >= 1);

  let stale2 = 0;
  const sink2 = fakeSink(() => assert.fail('no write after a fence 409'), () => ({ status: 409, body: '{"result":"REJECT_STALE_EPOCH","highest_epoch":9}' }));
  const { w: w2, events } = writer(sink2, { onStale: () => stale2++ });
  w2.start();
  await until(() => stale2 > 0);
  w2.stopDrain(Date.now());
  await w2.joined;
  assert.equal(sink2.log.filter((e) => e.op === 'put').length, 0);
  assert.equal(events.find((e) => e.kind === 'bridge_drained').count, 0);
});

test('drain: nothing is sent after lossAt + drain_timeout - margin, even a write still retrying', async () => {
  const sink = fakeSink(() => ({ status: 500, body: '' }));
  const { w, events } = writer(sink);
  w.start();
  await until(() => sink.log.some((e) => e.op === 'put'));
  const lossAt = Date.now();
  w.stopDrain(lossAt);
  await w.joined;
  const last = sink.log.filter((e) => e.op === 'put').at(-1);
  assert.ok(last.t < lossAt + cfg.drainTimeoutMs - cfg.drainMarginMs, 'no send past the deadline');
  const joined = events.find((e) => e.kind === 'bridge_joined');
  assert.equal(joined.joined_in_time, true);
  assert.match(events.find((e) => e.kind === 'bridge_drained').detail, /gave_up=/);
});

test('the lease running out stops production even before the loss is declared', async () => {
  let runsOut = Date.now() + 60;
  const sink = fakeSink(() => ({ status: 200, body: '{"result":"OK","epoch":7}' }));
  const { w } = writer(sink, { leaseRunsOutAt: () => runsOut });
  w.start();
  await until(() => Date.now() > runsOut + 50);
  const n = w.enqueued;
  await until(() => Date.now() > runsOut + 100);
  assert.equal(w.enqueued, n);
  w.stopDrain(Date.now());
  await w.joined;
});

test('abort: stops at once, the attempt in flight is cut, nothing is sent after it', async () => {
  const sink = fakeSink((e) => (e.idem.endsWith('.3') ? 'hang' : { status: 200, body: '{"result":"OK","epoch":7}' }));
  const { w, events } = writer(sink);
  w.start();
  await until(() => sink.log.some((e) => e.op === 'put' && e.idem.endsWith('.3')));
  await until(() => w.buffer.length > 5);
  const abortAt = Date.now();
  w.abort();
  await w.joined;
  assert.ok(sink.log.every((e) => e.t <= abortAt));
  const ab = events.find((e) => e.kind === 'bridge_aborted');
  assert.ok(ab.count > 5);
  assert.ok(ab.duration_ms <= 500);
  assert.equal(events.at(-1).kind, 'bridge_joined');
});
