'use strict';
// The environment the suite injects ("What the suite gives you") and our flags.
const fs = require('node:fs');
const { parseDuration } = require('./duration');

const BROKEN_MODES = {
  'no-fence': 'never POST /v1/fence: writes of a new term land unfenced (expected to fail unfenced-writes)',
  'renew-bumps-term': 'every renew writes the term + 1 under the same holder (expected to fail term-step)',
};

// Timing flags: each overrides its FENCECHECK_* variable (the manifests pass
// them as $(FENCECHECK_...) so the suite's values reach us either way).
const TIMING_FLAGS = {
  '--lease-duration': 'FENCECHECK_LEASE_DURATION',
  '--renew-deadline': 'FENCECHECK_RENEW_DEADLINE',
  '--retry-period': 'FENCECHECK_RETRY_PERIOD',
  '--drain-timeout': 'FENCECHECK_DRAIN_TIMEOUT',
  '--write-interval': 'FENCECHECK_WRITE_INTERVAL',
};

function parseArgs(argv) {
  const out = { broken: new Set(), help: false, env: {} };
  for (const a of argv) {
    const eq = a.indexOf('=');
    const flag = eq > 0 ? a.slice(0, eq) : a;
    if (a === '-h' || a === '--help') out.help = true;
    else if (TIMING_FLAGS[flag] && eq > 0) out.env[TIMING_FLAGS[flag]] = a.slice(eq + 1);
    else if (a.startsWith('--broken=')) {
      for (const m of a.slice('--broken='.length).split(',').filter(Boolean)) {
        if (!BROKEN_MODES[m]) throw new Error(`--broken=${m}: unknown mode (one of ${Object.keys(BROKEN_MODES).join(', ')})`);
        out.broken.add(m);
      }
    } else throw new Error(`unknown argument ${JSON.stringify(a)} (try --help)`);
  }
  return out;
}

function loadConfig(env = process.env, readFile = (p) => fs.readFileSync(p, 'utf8')) {
  const need = (k) => {
    const v = env[k];
    if (v === undefined || v === '') throw new Error(`$${k} is not set (the suite sets it: docs/controller-contract.md)`);
    return v;
  };
  const dur = (k) => {
    const ms = parseDuration(need(k));
    if (!(ms > 0)) throw new Error(`$${k}=${env[k]}: want a positive duration`);
    return ms;
  };
  const cfg = {
    namespace: need('FENCECHECK_NAMESPACE'),
    leaseName: need('FENCECHECK_LEASE_NAME'),
    termAnnotation: need('FENCECHECK_TERM_ANNOTATION'),
    sinkUrl: need('FENCECHECK_SINK_URL'),
    pod: need('FENCECHECK_POD_NAME'),
    leaseDurationMs: dur('FENCECHECK_LEASE_DURATION'),
    renewDeadlineMs: dur('FENCECHECK_RENEW_DEADLINE'),
    retryPeriodMs: dur('FENCECHECK_RETRY_PERIOD'),
    drainTimeoutMs: dur('FENCECHECK_DRAIN_TIMEOUT'),
    writeIntervalMs: dur('FENCECHECK_WRITE_INTERVAL'),
    tokenFile: need('FENCECHECK_SINK_TOKEN_FILE'),
  };
  cfg.sinkToken = readFile(cfg.tokenFile).trim(); // the whole file, whitespace trimmed (MUST 8)
  // Leave a margin inside drain_timeout for the witness's view of "sent".
  cfg.drainMarginMs = Math.min(1000, cfg.drainTimeoutMs / 10);
  cfg.writeTimeoutMs = 5000; // our own timeout for one attempt (the witness gives up at 10 s)
  cfg.apiTimeoutMs = Math.max(1000, Math.min(cfg.renewDeadlineMs, 2 * cfg.retryPeriodMs));
  cfg.warnings = [];
  if (!(cfg.renewDeadlineMs < cfg.leaseDurationMs)) cfg.warnings.push('renew_deadline should be below lease_duration (SHOULD 1)');
  if (!(cfg.renewDeadlineMs > 1.2 * cfg.retryPeriodMs)) cfg.warnings.push('renew_deadline should be above 1.2 x retry_period (SHOULD 1)');
  return cfg;
}

module.exports = { parseArgs, loadConfig, BROKEN_MODES, TIMING_FLAGS };
