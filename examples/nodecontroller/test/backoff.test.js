'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { retryDelay, candidateWait, sendAllowed } = require('../src/backoff');
const { parseDuration } = require('../src/duration');

test('retry spacing: 100 ms doubling up to retry_period', () => {
  const got = [1, 2, 3, 4, 5, 6, 50].map((a) => retryDelay(a, null, { baseMs: 100, capMs: 1000 }));
  assert.deepEqual(got, [100, 200, 400, 800, 1000, 1000, 1000]);
});

test('retry spacing: Retry-After wins, even above the cap', () => {
  assert.equal(retryDelay(1, 3000, { capMs: 1000 }), 3000);
  assert.equal(retryDelay(4, 0, { capMs: 1000 }), 0);
});

test('candidate jitter: between retry_period and 2.2 x retry_period', () => {
  assert.equal(candidateWait(1000, () => 0), 1000);
  assert.equal(Math.round(candidateWait(1000, () => 1)), 2200);
});

test('sendAllowed: before the deadline and not aborted', () => {
  assert.equal(sendAllowed(5, null, false), true);
  assert.equal(sendAllowed(5, 6, false), true);
  assert.equal(sendAllowed(6, 6, false), false);
  assert.equal(sendAllowed(5, null, true), false);
});

test('Go durations', () => {
  assert.equal(parseDuration('4s'), 4000);
  assert.equal(parseDuration('200ms'), 200);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('1m30s'), 90000);
  assert.equal(parseDuration('1h'), 3600000);
  assert.equal(parseDuration('1500us'), 1.5);
  assert.equal(parseDuration('1500µs'), 1.5);
  assert.equal(parseDuration('0'), 0);
  for (const bad of ['', '4', 's', '4x', '1.5', 'ms']) assert.throws(() => parseDuration(bad), undefined, bad);
});

test('flags: timing overrides and broken modes', () => {
  const { parseArgs, loadConfig } = require('../src/config');
  const a = parseArgs(['--lease-duration=6s', '--broken=no-fence,renew-bumps-term']);
  assert.deepEqual([...a.broken], ['no-fence', 'renew-bumps-term']);
  assert.equal(a.env.FENCECHECK_LEASE_DURATION, '6s');
  assert.throws(() => parseArgs(['--broken=nope']));
  assert.throws(() => parseArgs(['--what']));
  const env = {
    FENCECHECK_NAMESPACE: 'ns',
    FENCECHECK_LEASE_NAME: 'l',
    FENCECHECK_TERM_ANNOTATION: 'camel.io/leader-term',
    FENCECHECK_SINK_URL: 'http://witness:8080',
    FENCECHECK_POD_NAME: 'p',
    FENCECHECK_LEASE_DURATION: '4s',
    FENCECHECK_RENEW_DEADLINE: '3s',
    FENCECHECK_RETRY_PERIOD: '1s',
    FENCECHECK_DRAIN_TIMEOUT: '15s',
    FENCECHECK_WRITE_INTERVAL: '200ms',
    FENCECHECK_SINK_TOKEN_FILE: '/t',
  };
  const cfg = loadConfig({ ...env, ...a.env }, () => '  tok\n');
  assert.equal(cfg.leaseDurationMs, 6000);
  assert.equal(cfg.sinkToken, 'tok');
  assert.equal(cfg.drainTimeoutMs, 15000);
  assert.throws(() => loadConfig({ ...env, FENCECHECK_SINK_URL: '' }, () => 'x'));
});
