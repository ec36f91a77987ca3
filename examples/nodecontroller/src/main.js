#!/usr/bin/env node
'use strict';
// nodecontroller: a leader-elected controller that follows
// docs/controller-contract.md, with Node's standard library only.
const http = require('node:http');
const { parseArgs, loadConfig, BROKEN_MODES } = require('./config');
const { Kube } = require('./kube');
const { Sink } = require('./sink');
const { Elector } = require('./elector');
const { TermWriter } = require('./writer');
const { makeEventLog, logLine } = require('./events');

const READY_PORT = Number(process.env.NODECONTROLLER_READY_PORT || 8081);

function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    logLine(String(e.message || e));
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(
      'usage: node src/main.js [--lease-duration=D] [--renew-deadline=D] [--retry-period=D] [--drain-timeout=D] [--write-interval=D] [--broken=MODE[,MODE]]\n\n' +
        'Configuration comes from the FENCECHECK_* environment (docs/controller-contract.md); a timing flag overrides its variable.\nBroken modes (off by default):\n' +
        Object.entries(BROKEN_MODES).map(([k, v]) => `  ${k}: ${v}\n`).join(''),
    );
    return;
  }
  let cfg;
  let kube;
  try {
    cfg = loadConfig({ ...process.env, ...args.env });
    kube = new Kube({ namespace: cfg.namespace, name: cfg.leaseName, timeoutMs: cfg.apiTimeoutMs });
  } catch (e) {
    logLine(`nodecontroller: ${e.message || e}`);
    process.exit(2);
  }
  const event = makeEventLog({ pod: cfg.pod });
  const log = (m) => logLine(m);
  for (const w of cfg.warnings) log(`warning: ${w}`);
  for (const m of args.broken) log(`BROKEN MODE ${m}: ${BROKEN_MODES[m]}`);

  const sink = new Sink({ baseUrl: cfg.sinkUrl, token: cfg.sinkToken, timeoutMs: cfg.writeTimeoutMs });

  const writers = new Set();
  let current = null; // the writer of the term we hold
  let shuttingDown = false;
  let ready = false;

  const elector = new Elector({
    kube,
    cfg,
    pod: cfg.pod,
    log,
    broken: args.broken,
    hooks: {
      onAcquired({ term, identity }) {
        event('acquired', { identity, epoch: term });
        const w = new TermWriter({
          term,
          identity,
          cfg,
          sink,
          event,
          log,
          broken: args.broken,
          leaseRunsOutAt: () => (current === w ? elector.renewDeadlineAt() : null),
          onStale: () => {
            if (current === w && elector.leadingTerm !== null) {
              elector.lose(elector.leadingTerm, `the sink refused term ${term} with 409 (a later term fenced it)`);
            }
          },
        });
        writers.add(w);
        current = w;
        w.start();
      },
      beforeRecreate() {
        const w = current;
        if (!w) return Promise.resolve();
        const bound = Math.min(cfg.retryPeriodMs, 1000);
        log(`Lease deleted: quiescing term ${w.term} (at most ${bound} ms) before re-creating it`);
        return Promise.race([w.quiesce(bound), new Promise((r) => setTimeout(r, bound + 50))]);
      },
      onLost({ term, lossAt, reason, continuing }) {
        const w = current;
        current = null;
        if (!w) return;
        event('lost', { identity: w.identity, epoch: w.term, detail: reason });
        const joined = shuttingDown ? w.abort() : w.stopDrain(lossAt);
        joined.then(() => {
          writers.delete(w);
          if (!continuing && !shuttingDown) elector.stand({ newIdentity: true }); // stand again, new identity (MUST 1, 7)
        });
      },
    },
  });

  event('started', { identity: elector.identity });
  log(`nodecontroller: pod ${cfg.pod}, identity ${elector.identity}, Lease ${cfg.namespace}/${cfg.leaseName}, sink ${cfg.sinkUrl}`);

  // Readiness once we stand for election (SHOULD 3).
  const probe = http.createServer((req, res) => {
    const ok = req.url === '/healthz' || (req.url === '/readyz' && ready && !shuttingDown);
    res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' });
    res.end(ok ? 'ok\n' : 'not ready\n');
  });
  probe.listen(READY_PORT);

  elector.stand();
  ready = true;

  // Shutdown (SHOULD 4): abort every writer at once, then exit with `stopped` last.
  const shutdown = (sig) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log(`${sig}: aborting`);
    if (elector.leadingTerm !== null) elector.lose(elector.leadingTerm, `${sig}: shutting down`);
    elector.stop();
    const all = [...writers].map((w) => w.abort());
    const cap = new Promise((r) => setTimeout(r, 2000).unref());
    Promise.race([Promise.all(all), cap]).then(() => {
      event('stopped', { identity: elector.identity });
      probe.close();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('uncaughtException', (e) => {
    log(`uncaught: ${e && e.stack ? e.stack : e}`);
    event('stopped', { identity: elector.identity, detail: 'crashed' });
    process.exit(1);
  });
}

main();
