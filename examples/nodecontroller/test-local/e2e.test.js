'use strict';
// A local run of three replicas against fake apiserver and sink on the
// loopback (no cluster): steady writes, a partition of the leader, a Lease
// deleted under its holder, lost answers, a frozen leader, a SIGTERM. The
// checks are simplified versions of the contract's: term +1 per holder
// change and per re-creation, unchanged on renew; every write stamped and
// keyed; no key applied twice; first commit of a term after its fence; no
// PUT of a term later than drain_timeout after the takeover; `stopped` last.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { World } = require('./fakes');

const ANN = 'camel.io/leader-term';
const T = { lease: 2000, renew: 1500, retry: 400, drain: 4000, write: 50 };
const MAIN = path.join(__dirname, '..', 'src', 'main.js');

function waitFor(what, cond, ms) {
  // Polls a condition with a deadline (the test's own clock, not the controller's).
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + ms;
    const iv = setInterval(() => {
      let v;
      try {
        v = cond();
      } catch (e) {
        clearInterval(iv);
        return reject(e);
      }
      if (v) {
        clearInterval(iv);
        resolve(v);
      } else if (Date.now() > deadline) {
        clearInterval(iv);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      }
    }, 50);
  });
}

test('three replicas through faults, judged by the fakes', { timeout: 120000 }, async () => {
  const world = new World({ annotation: ANN });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodecontroller-'));
  const tokenFile = path.join(dir, 'token');
  fs.writeFileSync(tokenFile, '  s3cret\n');
  const procs = [];
  const start = async (i) => {
    const apiPort = await world.listen('api', i);
    const sinkPort = await world.listen('sink', i);
    const env = {
      PATH: process.env.PATH,
      FENCECHECK_NAMESPACE: 'ns1',
      FENCECHECK_LEASE_NAME: 'fencecheck-reconciler',
      FENCECHECK_TERM_ANNOTATION: ANN,
      FENCECHECK_SINK_URL: `http://127.0.0.1:${sinkPort}`,
      FENCECHECK_POD_NAME: `pod-${i}`,
      FENCECHECK_LEASE_DURATION: `${T.lease}ms`,
      FENCECHECK_RENEW_DEADLINE: `${T.renew}ms`,
      FENCECHECK_RETRY_PERIOD: `${T.retry}ms`,
      FENCECHECK_DRAIN_TIMEOUT: `${T.drain}ms`,
      FENCECHECK_WRITE_INTERVAL: `${T.write}ms`,
      FENCECHECK_SINK_TOKEN_FILE: tokenFile,
      NODECONTROLLER_TEST_APISERVER: `http://127.0.0.1:${apiPort}`,
      NODECONTROLLER_READY_PORT: '0',
    };
    const extra = (process.env.NODECONTROLLER_E2E_ARGS || '').split(' ').filter(Boolean);
    const p = spawn(process.execPath, [MAIN, ...extra], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const st = { i, p, out: '', err: '', exited: null };
    p.stdout.on('data', (d) => (st.out += d));
    p.stderr.on('data', (d) => (st.err += d));
    p.on('exit', (code) => (st.exited = code));
    procs[i] = st;
  };
  const holder = () => (world.lease ? world.lease.spec.holderIdentity : '');
  const leaderIdx = () => {
    const h = holder();
    const m = /^pod-(\d+)_[0-9a-f]{8}$/.exec(h);
    return m ? Number(m[1]) : -1;
  };
  const termNow = () => (world.lease ? BigInt(world.lease.metadata.annotations[ANN]) : -1n);
  const commitsOfTerm = (term) => world.sinkLog.filter((e) => e.op === 'put' && e.result === 'OK' && e.epoch === term).length;
  const commitsAfter = (t0) => world.sinkLog.filter((e) => e.op === 'put' && e.result === 'OK' && e.t > t0).length;

  try {
    for (let i = 0; i < 3; i++) await start(i);

    // steady: a leader, term 1, 5 commits
    await waitFor('a leader with 5 commits', () => leaderIdx() >= 0 && commitsOfTerm(termNow()) >= 5, 20000);
    assert.equal(termNow(), 1n);

    // partition the leader from the apiserver for 2.5 x the lease
    let old = leaderIdx();
    let oldTerm = termNow();
    world.partitioned.add(old);
    await waitFor('a takeover after the partition', () => leaderIdx() >= 0 && leaderIdx() !== old, 15000);
    assert.equal(termNow(), oldTerm + 1n);
    await waitFor('5 commits of the new term', () => commitsOfTerm(termNow()) >= 5, 15000);
    await waitFor('partition length', () => Date.now() - world.leaseVersions.at(-1).t > 1000, 10000).catch(() => {});
    world.partitioned.delete(old);
    await waitFor('the old leader drained', () => procs[old].out.includes('"kind":"bridge_joined"'), T.drain + 5000);

    // delete the Lease under its holder: it re-creates it with +1 under the same identity
    const h = holder();
    const before = termNow();
    world.deleteLease();
    await waitFor('the holder re-creates the Lease', () => world.lease !== null, 10000);
    assert.equal(holder(), h);
    assert.equal(termNow(), before + 1n);
    await waitFor('5 commits of the re-created term', () => commitsOfTerm(termNow()) >= 5, 15000);

    // lost answers: every 7th commit's answer dropped for 3 s
    world.loseAnswers = true;
    const t3 = Date.now();
    await waitFor('lost answers', () => Date.now() - t3 > 3000 && world.sinkLog.filter((e) => e.answerLost).length >= 2, 15000);
    world.loseAnswers = false;
    await waitFor('5 commits after lost answers', () => commitsAfter(Date.now() - 500) >= 5 || commitsAfter(t3 + 3000) >= 5, 10000);

    // a busy sink (503, Retry-After: 1) for 2.5 s, then a crashed one (no answer) for 3 s
    world.sinkMode = 'busy';
    await new Promise((r) => setTimeout(r, 2500));
    world.sinkMode = 'down';
    await new Promise((r) => setTimeout(r, 3000));
    world.sinkMode = undefined;
    const t5 = Date.now();
    await waitFor('5 commits after the sink is back', () => commitsAfter(t5) >= 5, 10000);

    // freeze the leader past the lease, then thaw it
    old = leaderIdx();
    oldTerm = termNow();
    procs[old].p.kill('SIGSTOP');
    await waitFor('a takeover from the frozen leader', () => leaderIdx() >= 0 && leaderIdx() !== old, 15000);
    await waitFor('5 commits of the term after the freeze', () => commitsOfTerm(termNow()) >= 5, 15000);
    procs[old].p.kill('SIGCONT');
    await waitFor('the thawed leader joined', () => (procs[old].out.match(/"kind":"bridge_joined"/g) || []).length >= 2 || procs[old].out.split('\n').filter((l) => l.includes(`"epoch":${oldTerm}`) && l.includes('bridge_joined')).length >= 1, T.drain + 5000);

    // SIGTERM the leader: its bridge aborts, it ends with `stopped`, someone takes over
    old = leaderIdx();
    const termBefore = termNow();
    procs[old].p.kill('SIGTERM');
    await waitFor('the SIGTERMed leader exits', () => procs[old].exited !== null, 5000);
    await waitFor('a takeover after SIGTERM', () => leaderIdx() >= 0 && leaderIdx() !== old && commitsOfTerm(termNow()) >= 5, 20000);
    assert.equal(termNow(), termBefore + 1n);

    // settle: let every drain window pass, then stop everyone
    await new Promise((r) => setTimeout(r, T.drain + 500));
  } finally {
    for (const s of procs) if (s && s.exited === null) s.p.kill('SIGCONT');
    for (const s of procs) if (s && s.exited === null) s.p.kill('SIGTERM');
    await waitFor('every replica exits', () => procs.every((s) => !s || s.exited !== null), 10000).catch(() => {
      for (const s of procs) if (s && s.exited === null) s.p.kill('SIGKILL');
    });
    world.close();
  }

  const summary = {
    leaseVersions: world.leaseVersions.length,
    watches: world.watchCount,
    holders: world.leaseVersions.filter((v, i, a) => !v.deleted && i > 0 && !a[i - 1].deleted && v.holder !== a[i - 1].holder).map((v) => `${v.holder}@${v.term}`),
    puts: world.sinkLog.filter((e) => e.op === 'put').length,
    byResult: world.sinkLog.reduce((m, e) => ((m[`${e.op}:${e.status}:${e.result || ''}`] = (m[`${e.op}:${e.status}:${e.result || ''}`] || 0) + 1), m), {}),
    events: procs.map((s) => (s.out.match(/"kind":"[a-z_]+"/g) || []).reduce((m, k) => ((m[k.slice(8, -1)] = (m[k.slice(8, -1)] || 0) + 1), m), {})),
  };
  process.stderr.write(`summary: ${JSON.stringify(summary, (k, v) => (typeof v === 'bigint' ? String(v) : v))}\n`);
  if (process.env.NODECONTROLLER_E2E_LOG) {
    fs.writeFileSync(process.env.NODECONTROLLER_E2E_LOG, procs.map((s) => `--- pod-${s.i}\n${s.err}\n${s.out}`).join('\n'));
  }
  const report = () => procs.map((s) => `--- pod-${s.i} stderr\n${s.err.slice(-3000)}`).join('\n');

  // Lease: +1 per holder change and per re-creation, unchanged otherwise (term-step)
  let prev = null;
  let deletedSince = false;
  for (const v of world.leaseVersions) {
    if (v.deleted) {
      deletedSince = true;
      continue;
    }
    assert.match(v.term, /^[0-9]+$/, 'every version carries a term');
    if (prev) {
      const changed = v.holder !== prev.holder || deletedSince;
      const want = changed && v.holder !== '' ? BigInt(prev.term) + 1n : BigInt(prev.term);
      assert.equal(BigInt(v.term), want, `term step at ${JSON.stringify(v)} after ${JSON.stringify(prev)}\n${report()}`);
    }
    prev = v;
    deletedSince = false;
  }

  const puts = world.sinkLog.filter((e) => e.op === 'put');
  assert.ok(puts.length > 50, 'writes happened');
  // unfenced-writes: every PUT stamped; the first commit of a term after a fence of it
  for (const e of world.sinkLog) assert.equal(e.auth, 'Bearer s3cret');
  for (const e of puts) assert.ok(typeof e.epoch === 'bigint', 'stamped');
  for (const e of puts) assert.ok(e.idem && e.idem.length <= 255, 'keyed');
  const terms = [...new Set(puts.filter((e) => e.result === 'OK').map((e) => e.epoch))];
  for (const term of terms) {
    const firstCommit = world.sinkLog.findIndex((e) => e.op === 'put' && e.result === 'OK' && e.epoch === term);
    const fence = world.sinkLog.findIndex((e) => e.op === 'fence' && e.result === 'OK' && e.epoch === term);
    assert.ok(fence >= 0 && fence < firstCommit, `term ${term} fenced before its first commit`);
  }
  // idempotency: no key committed twice; every lost answer retried and answered OK_DUP
  const okByKey = new Map();
  for (const e of puts.filter((e) => e.result === 'OK')) okByKey.set(e.idem, (okByKey.get(e.idem) || 0) + 1);
  for (const [k, n] of okByKey) assert.equal(n, 1, `key ${k} applied ${n} times`);
  const lost = puts.filter((e) => e.answerLost);
  assert.ok(lost.length >= 2);
  for (const e of lost) {
    assert.ok(
      puts.some((r) => r.idem === e.idem && r.result === 'OK_DUP' && r.value === e.value && r.key === e.key && r.epoch === e.epoch),
      `lost answer of ${e.idem} retried with its key and answered OK_DUP`,
    );
  }
  // keys `<identity>.<term>.<seq>`, stamped with the term in the key
  for (const e of puts) assert.equal(e.idem.split('.').at(-2), e.epoch.toString());
  // old-leader-steps-down: no PUT of the previous term later than drain_timeout after each takeover
  let p2 = null;
  for (const v of world.leaseVersions) {
    if (v.deleted) continue;
    if (p2 && v.holder !== p2.holder && v.holder !== '') {
      const late = puts.filter((e) => e.epoch === BigInt(p2.term) && e.t > v.t + T.drain);
      assert.equal(late.length, 0, `PUTs of term ${p2.term} after ${T.drain} ms from the takeover: ${late.length}\n${report()}`);
    }
    p2 = v;
  }
  // no-stale-commit (by time): no commit of a term below one the Lease granted before it
  for (const v of world.leaseVersions) {
    if (v.deleted) continue;
    const stale = puts.filter((e) => e.result === 'OK' && e.epoch < BigInt(v.term) && e.t > v.t);
    assert.equal(stale.length, 0, `commits below term ${v.term} after it was granted at ${v.t}: ${JSON.stringify(stale.map((e) => [e.idem, e.t]))}`);
  }
  // Retry-After honoured: a write answered 503 Retry-After: 1 is not sent again within 1 s
  const byIdem = new Map();
  for (const e of puts) byIdem.set(e.idem, [...(byIdem.get(e.idem) || []), e]);
  let busySeen = 0;
  for (const [, attempts] of byIdem) {
    for (let i = 0; i + 1 < attempts.length; i++) {
      if (attempts[i].result === 'BUSY') {
        busySeen++;
        assert.ok(attempts[i + 1].t - attempts[i].t >= 990, `retry after ${attempts[i + 1].t - attempts[i].t} ms despite Retry-After: 1`);
      }
    }
  }
  assert.ok(busySeen >= 1, 'a 503 was retried');
  // no write abandoned: every key sent while the sink was busy or down got a definite answer later
  for (const [idem, attempts] of byIdem) {
    if (!attempts.some((a) => a.result === 'BUSY' || a.result === 'DOWN')) continue;
    assert.ok(attempts.some((a) => ['OK', 'OK_DUP', 'REJECT_STALE_EPOCH'].includes(a.result)), `${idem} was abandoned: ${attempts.map((a) => a.result)}`);
  }
  // events: valid JSON, `stopped` last in every log
  for (const s of procs) {
    const lines = s.out.split('\n').filter((l) => l.includes('FCEVENT '));
    assert.ok(lines.length > 0);
    const evs = lines.map((l) => JSON.parse(l.slice(l.indexOf('FCEVENT ') + 8)));
    assert.equal(evs.at(-1).kind, 'stopped', `pod-${s.i} ends with stopped`);
    assert.ok(evs.some((e) => e.kind === 'started'));
  }
  const aborted = procs.flatMap((s) => s.out.split('\n')).filter((l) => l.includes('"kind":"bridge_aborted"'));
  assert.ok(aborted.length >= 1, 'the SIGTERMed leader aborted its bridge');
  for (const l of aborted) assert.ok(JSON.parse(l.slice(8)).duration_ms <= 500);
});
