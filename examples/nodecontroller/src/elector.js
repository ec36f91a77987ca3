'use strict';
// The term lock and elector (MUST 1, 2, 3, 7's moments (a) and (b)).
// One try every retry_period (a candidate: jittered up to 2.2x): read the
// Lease, decide (term.js), write it back with the resourceVersion read.
const crypto = require('node:crypto');
const { decide, observeLease, initialState, leaseDurationSeconds, parseTerm } = require('./term');
const { classifyLease } = require('./answers');
const { candidateWait } = require('./backoff');
const { microTime } = require('./kube');

function newIdentity(pod) {
  // <pod name>_<8 lowercase hex digits>, new in every process (MUST 1).
  return `${pod}_${crypto.randomBytes(4).toString('hex')}`;
}

class Elector {
  // hooks: onAcquired({term, identity, recreated}), onLost({term, lossAt, reason})
  constructor({ kube, cfg, pod, log, hooks, broken = new Set(), now = Date.now }) {
    this.kube = kube;
    this.cfg = cfg;
    this.pod = pod;
    this.log = log;
    this.hooks = hooks;
    this.broken = broken;
    this.now = now;
    this.st = initialState(newIdentity(pod));
    this.standing = false; // trying to acquire or renew
    this.stopped = false;
    this.timer = null;
    this.deadlineTimer = null;
    this.busy = false;
  }

  get identity() {
    return this.st.identity;
  }

  get leadingTerm() {
    return this.st.leading;
  }

  // lossMoment: if we lead, the moment our lease runs out by renew_deadline
  // (moment (a)), so that a writer can bound its sends even when our timers
  // ran late (a frozen process).
  renewDeadlineAt() {
    return this.st.leading === null ? null : this.st.lastOkSentAt + this.cfg.renewDeadlineMs;
  }

  // stand: start (or, after a loss, restart with a new identity) standing for election.
  stand({ newIdentity: fresh = false } = {}) {
    if (this.stopped) return;
    if (fresh) {
      const highestSeen = this.st.highestSeen;
      this.st = initialState(newIdentity(this.pod));
      this.st.highestSeen = highestSeen; // keep what we know of the terms
    }
    this.standing = true;
    this.follow();
    this.schedule(0);
  }

  // follow: watch the Lease (SHOULD 6) so that a term that lived between
  // two of our reads still counts as seen when we next create the Lease.
  follow() {
    if (this.following || this.stopped) return;
    this.following = true;
    const loop = () => {
      if (this.stopped) return;
      this.watch = this.kube.watchLease((lease) => this.noteTerm(lease));
      this.watch.done.then(() => {
        if (!this.stopped) this.watchTimer = setTimeout(loop, this.cfg.retryPeriodMs);
      });
    };
    loop();
  }

  noteTerm(lease) {
    const t = parseTerm(((lease.metadata || {}).annotations || {})[this.cfg.termAnnotation]);
    if (typeof t === 'bigint' && t > this.st.highestSeen) this.st.highestSeen = t;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.watchTimer);
    if (this.watch) this.watch.stop();
    this.standing = false;
    clearTimeout(this.timer);
    clearTimeout(this.deadlineTimer);
  }

  schedule(ms) {
    clearTimeout(this.timer);
    if (!this.standing || this.stopped) return;
    this.timer = setTimeout(() => this.tick(), ms);
  }

  nextWait() {
    return this.st.leading !== null ? this.cfg.retryPeriodMs : candidateWait(this.cfg.retryPeriodMs);
  }

  // lose: we lost term `term` (any of MUST 7's moments). Stops standing until
  // the caller's writer has drained; the caller then calls stand({newIdentity: true}).
  // With `continuing` (our own re-creation of the Lease: a new term follows
  // at once under the same identity) we keep standing.
  lose(term, reason, lossAt = this.now(), { continuing = false } = {}) {
    if (this.st.leading === null || this.st.leading !== term) return false;
    // Never later than the moment our renew deadline ran out (moment (a)):
    // a process whose timers ran late (frozen) notices late, not loses late.
    const runsOut = this.renewDeadlineAt();
    if (runsOut !== null && runsOut < lossAt) lossAt = runsOut;
    const held = this.st.leading;
    this.st.leading = null;
    clearTimeout(this.deadlineTimer);
    if (!continuing) {
      this.st.pendingTerm = null;
      this.standing = false;
      clearTimeout(this.timer);
    }
    this.log(`lost term ${held} as ${this.st.identity}: ${reason}`);
    this.hooks.onLost({ term: held, lossAt, reason, continuing });
    return true;
  }

  armRenewDeadline() {
    clearTimeout(this.deadlineTimer);
    const term = this.st.leading;
    const sentAt = this.st.lastOkSentAt;
    const at = sentAt + this.cfg.renewDeadlineMs;
    this.deadlineTimer = setTimeout(() => {
      if (this.st.leading === term && this.st.lastOkSentAt === sentAt) {
        this.lose(term, `no successful renew for renew_deadline (${this.cfg.renewDeadlineMs} ms)`, at);
      }
    }, Math.max(0, at - this.now()));
  }

  becomeLeader(term, sentAt, recreated) {
    const old = this.st.leading;
    this.st.leading = term;
    this.st.lastOkSentAt = sentAt;
    this.st.pendingTerm = null;
    if (term > this.st.highestSeen) this.st.highestSeen = term;
    this.armRenewDeadline();
    this.log(`acquired term ${term} as ${this.st.identity}${recreated ? ' (re-created the Lease)' : ''}`);
    this.hooks.onAcquired({ term, identity: this.st.identity, recreated, previousTerm: old });
  }

  leaseBody(base, holder, term, nowMs, { acquire }) {
    const lease = base ? JSON.parse(JSON.stringify(base)) : { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {}, spec: {} };
    lease.apiVersion = 'coordination.k8s.io/v1';
    lease.kind = 'Lease';
    lease.metadata = lease.metadata || {};
    if (!base) {
      lease.metadata = { name: this.cfg.leaseName, namespace: this.cfg.namespace };
    }
    lease.metadata.annotations = { ...(lease.metadata.annotations || {}), [this.cfg.termAnnotation]: term.toString() };
    const spec = lease.spec || {};
    const prevHolder = spec.holderIdentity || '';
    spec.holderIdentity = holder;
    spec.leaseDurationSeconds = leaseDurationSeconds(this.cfg.leaseDurationMs);
    spec.renewTime = microTime(nowMs);
    if (acquire) {
      spec.acquireTime = microTime(nowMs);
      spec.leaseTransitions = (spec.leaseTransitions || 0) + (base && prevHolder !== holder ? 1 : 0);
    }
    lease.spec = spec;
    return lease;
  }

  async tick() {
    if (!this.standing || this.stopped || this.busy) return;
    this.busy = true;
    try {
      await this.tryOnce();
    } catch (e) {
      this.log(`elector: ${e && e.stack ? e.stack : e}`);
    } finally {
      this.busy = false;
      this.schedule(this.nextWait());
    }
  }

  async tryOnce() {
    const identity = this.st.identity;
    const leadingAtStart = this.st.leading;
    const stale = () => this.stopped || !this.standing || this.st.identity !== identity || this.st.leading !== leadingAtStart;

    const got = await this.kube.getLease();
    if (stale()) return;
    const kind = classifyLease('get', got);
    let obs;
    if (kind === 'ok' && !(got.json && got.json.kind === 'Lease' && got.json.metadata)) {
      this.log(`get Lease: 200 without a Lease in the body: no answer this try`);
      return;
    }
    if (kind === 'ok') obs = observeLease(got.json, this.cfg.termAnnotation);
    else if (kind === 'missing') obs = { status: 'missing' };
    else {
      if (kind === 'forbidden') this.log(`get Lease: 403: the Role must allow get, update and create on leases (MUST 10): ${got.body}`);
      else this.log(`get Lease: ${got.error || got.status}: no answer this try`);
      return; // a leader counts it as a failed renew (the deadline timer decides)
    }

    const now = this.now();
    const d = decide(this.st, obs, now, this.cfg);
    Object.assign(this.st, d.up);
    switch (d.action) {
      case 'wait':
      case 'leave':
        if (d.action === 'leave') this.log(`leave the Lease alone: ${d.reason}`);
        return;
      case 'lost':
        this.lose(this.st.leading, d.reason, now);
        return;
      case 'rotate':
        this.st = Object.assign(initialState(newIdentity(this.pod)), { highestSeen: this.st.highestSeen });
        this.log(`${d.reason}: new identity ${this.st.identity}`);
        return;
      case 'adopt':
        if (this.st.leading !== null) this.lose(this.st.leading, `re-created the Lease with term ${d.term}`, now, { continuing: true });
        this.becomeLeader(d.term, this.st.pendingSentAt || now, false);
        return;
      case 'renew':
        return this.renew(got.json, d.term);
      case 'takeover':
        return this.acquire('update', got.json, d.term, false);
      case 'create':
        if (d.recreate && this.hooks.beforeRecreate) {
          // Quiesce the old term's writer first (bounded), then re-create.
          await this.hooks.beforeRecreate(this.st.leading);
          if (stale()) return;
        }
        return this.acquire('create', null, d.term, d.recreate);
      default:
        throw new Error(`unknown action ${d.action}`);
    }
  }

  async renew(base, term) {
    let writeTerm = term;
    if (this.broken.has('renew-bumps-term')) writeTerm = term + 1n; // BROKEN: MUST 3
    const sentAt = this.now();
    const body = this.leaseBody(base, this.st.identity, writeTerm, sentAt, { acquire: false });
    const leading = this.st.leading;
    const ans = await this.kube.replaceLease(body);
    if (this.stopped || this.st.leading !== leading) return;
    const kind = classifyLease('update', ans);
    if (kind !== 'ok') {
      this.log(`renew of term ${term}: ${ans.error || ans.status} (a failed renew)`);
      return;
    }
    if (writeTerm !== term) {
      // BROKEN mode: the lock now calls the bumped term its own; the writer
      // keeps the term it snapshotted (so only the Lease shows the bug).
      this.st.leading = writeTerm;
      if (writeTerm > this.st.highestSeen) this.st.highestSeen = writeTerm;
    }
    this.st.lastOkSentAt = sentAt;
    this.armRenewDeadline();
  }

  async acquire(op, base, term, recreated) {
    const sentAt = this.now();
    const body = this.leaseBody(base, this.st.identity, term, sentAt, { acquire: true });
    const identity = this.st.identity;
    const leading = this.st.leading;
    this.st.pendingTerm = term;
    this.st.pendingSentAt = sentAt;
    const ans = op === 'create' ? await this.kube.createLease(body) : await this.kube.replaceLease(body);
    if (this.stopped || this.st.identity !== identity || this.st.leading !== leading) return;
    const kind = classifyLease(op, ans);
    if (kind === 'ok') {
      if (recreated && leading !== null) {
        // The live holder's re-creation: a new term; the old one's writes stop (MUST 2).
        this.lose(leading, `re-created the deleted Lease with term ${term}`, sentAt, { continuing: true });
      }
      this.becomeLeader(term, sentAt, recreated);
      return;
    }
    if (kind === 'unknown') {
      // It may have committed: pendingTerm lets the next read adopt it.
      this.log(`${op} Lease with term ${term}: ${ans.error || ans.status}: unknown whether it happened`);
      return;
    }
    this.st.pendingTerm = null;
    if (kind === 'forbidden') this.log(`${op} Lease: 403: the Role must allow get, update and create on leases (MUST 10)`);
    else this.log(`${op} Lease with term ${term}: ${ans.status} (${kind}): not acquired`);
  }
}

module.exports = { Elector, newIdentity };
