'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseTerm, decide, initialState, observeLease, leaseDurationSeconds, U64_MAX } = require('../src/term');

const ANN = 'camel.io/leader-term';
const cfg = { leaseDurationMs: 4000 };
const lease = (holder, term, extra = {}) =>
  observeLease(
    {
      metadata: { annotations: term === undefined ? {} : { [ANN]: term } },
      spec: { holderIdentity: holder, leaseDurationSeconds: 4, renewTime: extra.renewTime || 't0', leaseTransitions: extra.transitions || 0 },
    },
    ANN,
  );
const apply = (st, d) => Object.assign(st, d.up);

test('parseTerm: plain decimal u64 only', () => {
  assert.equal(parseTerm('0'), 0n);
  assert.equal(parseTerm('42'), 42n);
  assert.equal(parseTerm('18446744073709551615'), U64_MAX);
  assert.equal(parseTerm('18446744073709551616'), 'invalid');
  for (const bad of ['', '-1', '+1', ' 1', '1 ', '0x10', '1e3', '1.0', 'abc']) assert.equal(parseTerm(bad), 'invalid', bad);
  assert.equal(parseTerm(undefined), null);
});

test('leaseDurationSeconds: whole seconds rounded down, at least 1', () => {
  assert.equal(leaseDurationSeconds(4000), 4);
  assert.equal(leaseDurationSeconds(4999), 4);
  assert.equal(leaseDurationSeconds(500), 1);
});

test('a candidate waits a lease duration on its own clock, then takes over with +1', () => {
  const st = initialState('pod-b_0000000b');
  let d = decide(st, lease('pod-a_0000000a', '7'), 1000, cfg);
  apply(st, d);
  assert.equal(d.action, 'wait');
  assert.equal(st.highestSeen, 7n);
  d = decide(st, lease('pod-a_0000000a', '7'), 4999, cfg);
  apply(st, d);
  assert.equal(d.action, 'wait');
  d = decide(st, lease('pod-a_0000000a', '7'), 5000, cfg);
  assert.equal(d.action, 'takeover');
  assert.equal(d.term, 8n);
});

test('a renew by the holder restarts the candidate clock', () => {
  const st = initialState('pod-b_0000000b');
  apply(st, decide(st, lease('pod-a_0000000a', '3', { renewTime: 'r1' }), 0, cfg));
  apply(st, decide(st, lease('pod-a_0000000a', '3', { renewTime: 'r2' }), 3000, cfg));
  const d = decide(st, lease('pod-a_0000000a', '3', { renewTime: 'r2' }), 6000, cfg);
  assert.equal(d.action, 'wait'); // only 3 s since r2 was first read
  assert.equal(decide(st, lease('pod-a_0000000a', '3', { renewTime: 'r2' }), 7000, cfg).action, 'takeover');
});

test('no holder: take over at once, above the highest term ever seen', () => {
  const st = initialState('me_00000001');
  st.highestSeen = 12n;
  const d = decide(st, lease('', '5'), 0, cfg);
  assert.equal(d.action, 'takeover');
  assert.equal(d.term, 13n);
});

test('a holder without the annotation counts as term 0', () => {
  const st = initialState('me_00000001');
  apply(st, decide(st, lease('other_00000002', undefined), 0, cfg));
  const d = decide(st, lease('other_00000002', undefined), 4000, cfg);
  assert.equal(d.action, 'takeover');
  assert.equal(d.term, 1n);
});

test('a term annotation that is not a decimal u64: leave the Lease alone', () => {
  const st = initialState('me_00000001');
  apply(st, decide(st, lease('other_00000002', '0x10'), 0, cfg));
  assert.equal(decide(st, lease('other_00000002', '0x10'), 10000, cfg).action, 'leave');
  assert.equal(decide(st, lease('', 'abc'), 10000, cfg).action, 'leave');
});

test('renew keeps the term (MUST 3)', () => {
  const st = initialState('me_00000001');
  st.leading = 4n;
  st.lastOkSentAt = 0;
  const d = decide(st, lease('me_00000001', '4'), 1000, cfg);
  assert.equal(d.action, 'renew');
  assert.equal(d.term, 4n);
});

test('the leader loses on another holder, a release, or another term under its name', () => {
  for (const [h, t] of [
    ['other_00000002', '5'],
    ['', '4'],
    ['me_00000001', '5'],
    ['me_00000001', 'zz'],
  ]) {
    const st = initialState('me_00000001');
    st.leading = 4n;
    assert.equal(decide(st, lease(h, t), 1000, cfg).action, 'lost', `${h} ${t}`);
  }
});

test('missing Lease: the live holder re-creates it at once with +1', () => {
  const st = initialState('me_00000001');
  st.leading = 4n;
  st.highestSeen = 4n;
  st.lastOkSentAt = 1000;
  const d = decide(st, { status: 'missing' }, 4999, cfg);
  assert.equal(d.action, 'create');
  assert.equal(d.recreate, true);
  assert.equal(d.term, 5n);
  // past lease_duration since the last successful send: no longer live
  assert.equal(decide(st, { status: 'missing' }, 5000, cfg).action, 'lost');
});

test('missing Lease: a non-holder waits one lease duration from its first 404', () => {
  const st = initialState('me_00000001');
  st.highestSeen = 9n;
  let d = decide(st, { status: 'missing' }, 100, cfg);
  apply(st, d);
  assert.equal(d.action, 'wait');
  d = decide(st, { status: 'missing' }, 4099, cfg);
  apply(st, d);
  assert.equal(d.action, 'wait');
  d = decide(st, { status: 'missing' }, 4100, cfg);
  assert.equal(d.action, 'create');
  assert.equal(d.term, 10n);
  assert.equal(d.recreate, false);
});

test('a fresh process that never saw a term creates term 1; the absence clock resets when the Lease reappears', () => {
  const st = initialState('me_00000001');
  apply(st, decide(st, { status: 'missing' }, 0, cfg));
  apply(st, decide(st, lease('x_00000003', '2'), 2000, cfg));
  assert.equal(st.missingSince, null);
  apply(st, decide(st, { status: 'missing' }, 3000, cfg));
  assert.equal(decide(st, { status: 'missing' }, 6999, cfg).action, 'wait');
  const d = decide(st, { status: 'missing' }, 7000, cfg);
  assert.equal(d.term, 3n);
  const fresh = initialState('new_00000004');
  apply(fresh, decide(fresh, { status: 'missing' }, 0, cfg));
  assert.equal(decide(fresh, { status: 'missing' }, 4000, cfg).term, 1n);
});

test('an acquiring write with no answer that did commit is adopted, never bumped under our own name', () => {
  const st = initialState('me_00000001');
  st.pendingTerm = 6n;
  assert.equal(decide(st, lease('me_00000001', '6'), 0, cfg).action, 'adopt');
  st.pendingTerm = null;
  assert.equal(decide(st, lease('me_00000001', '6'), 0, cfg).action, 'rotate');
});

test('no term above u64', () => {
  const st = initialState('me_00000001');
  assert.equal(decide(st, lease('', U64_MAX.toString()), 0, cfg).action, 'leave');
});

test('Lease times in metav1.MicroTime form: exactly 6 fractional digits', () => {
  const { microTime } = require('../src/kube');
  assert.equal(microTime(Date.parse('2026-01-02T15:04:05.123Z')), '2026-01-02T15:04:05.123000Z');
  assert.equal(microTime(Date.parse('2026-01-02T15:04:05Z')), '2026-01-02T15:04:05.000000Z');
});
