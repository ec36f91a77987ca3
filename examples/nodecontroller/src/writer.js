'use strict';
// One writer per term (the ADR's epoch bridge): fence, then a producer puts
// a logical write into a 128-deep buffer every write interval and one sender
// sends them in order, each retried with its Idempotency-Key until a
// definite answer (MUST 4, 5, 6, 7, 9).
const { classifyWrite, classifyFence } = require('./answers');
const { retryDelay, sendAllowed } = require('./backoff');

const CAPACITY = 128;
const ROWS = 64;

// wait: a timer for retry spacing that an abort cuts short.
function wait(ms, signal) {
  return new Promise((resolve) => {
    if (signal && signal.aborted) return resolve();
    const t = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(t);
      if (signal) signal.removeEventListener('abort', done);
      resolve();
    }
    if (signal) signal.addEventListener('abort', done, { once: true });
  });
}

class TermWriter {
  // leaseRunsOutAt(): while the lock holds this term, when its renew_deadline
  // runs out (null when it no longer holds it); onStale(): a 409 for this term.
  constructor({ term, identity, cfg, sink, event, log, onStale, leaseRunsOutAt, broken = new Set(), now = Date.now }) {
    this.term = term; // snapshotted once: never read from the Lease again (MUST 4)
    this.identity = identity;
    this.cfg = cfg;
    this.sink = sink;
    this.event = event;
    this.log = log;
    this.onStale = onStale;
    this.leaseRunsOutAt = leaseRunsOutAt;
    this.broken = broken;
    this.now = now;
    this.buffer = [];
    this.enqueued = 0;
    this.sent = 0;
    this.gaveUp = 0;
    this.stopping = false;
    this.aborted = false;
    this.deadline = null; // the last moment a PUT of this term may be sent
    this.abortAll = new AbortController(); // shutdown: cut everything at once
    this.inflight = null; // AbortController of the attempt in flight
    this.agent = sink.newAgent();
    this.wakeResolve = null;
    this.producer = null;
    this.joined = new Promise((r) => (this.resolveJoined = r));
  }

  start() {
    this.event('bridge_spawned', { identity: this.identity, epoch: this.term, capacity: CAPACITY });
    this.run().catch((e) => this.log(`writer ${this.term}: ${e && e.stack ? e.stack : e}`));
    return this;
  }

  notify() {
    const r = this.wakeResolve;
    this.wakeResolve = null;
    if (r) r();
  }

  sleepUntilWoken() {
    return new Promise((r) => (this.wakeResolve = r));
  }

  // effectiveDeadline: the explicit one once stopped; while producing, the
  // one implied by the lock's renew deadline (a frozen process whose timers
  // run late still never sends past drain_timeout after its loss).
  effectiveDeadline() {
    if (this.deadline !== null) return this.deadline;
    const runsOut = this.leaseRunsOutAt();
    return runsOut === null ? null : runsOut + this.cfg.drainTimeoutMs - this.cfg.drainMarginMs;
  }

  canSend() {
    return sendAllowed(this.now(), this.effectiveDeadline(), this.aborted);
  }

  leaseRunOut() {
    const runsOut = this.leaseRunsOutAt();
    return runsOut !== null && this.now() >= runsOut;
  }

  async run() {
    const fenced = await this.fence();
    if (fenced) {
      this.produce();
      this.producer = setInterval(() => this.produce(), Math.max(1, this.cfg.writeIntervalMs));
      await this.send();
    }
    while (!this.stopping && !this.aborted) await this.sleepUntilWoken();
    this.finish();
  }

  async fence() {
    if (this.broken.has('no-fence')) {
      this.log(`BROKEN no-fence: writing term ${this.term} without fencing`);
      return true;
    }
    for (let attempt = 1; !this.stopping && !this.aborted; attempt++) {
      const ctl = new AbortController();
      this.inflight = ctl;
      const ans = await this.sink.fence(this.term, { signal: ctl.signal, agent: this.agent });
      this.inflight = null;
      if (this.aborted) return false;
      const c = classifyFence(ans);
      this.event('fence', { identity: this.identity, epoch: this.term, result: c.result, status: c.status });
      if (c.outcome === 'fenced') return true;
      if (c.outcome === 'stale') {
        this.log(`fence of term ${this.term}: 409, floor ${c.highestEpoch}: stale before we began`);
        this.onStale();
        return false;
      }
      if (c.outcome === 'defect') {
        this.log(`fence of term ${this.term}: ${c.status} ${c.result}: a defect of ours (token or epoch); not fencing again`);
        return false;
      }
      await wait(c.retryAfterMs !== null ? c.retryAfterMs : this.cfg.retryPeriodMs, this.abortAll.signal);
    }
    return false;
  }

  produce() {
    if (this.stopping || this.aborted) return;
    if (this.leaseRunOut()) return; // the loss is due: produce nothing more of this term
    if (this.buffer.length >= CAPACITY) return; // full: the producer waits for room
    const seq = this.enqueued++;
    const row = `row-${String(seq % ROWS).padStart(3, '0')}`;
    this.buffer.push({
      seq,
      key: row,
      value: `gen-${this.term}-seq-${seq}`,
      idempotencyKey: `${this.identity}.${this.term}.${seq}`,
    });
    this.notify();
  }

  async send() {
    for (;;) {
      if (this.aborted) return;
      if (this.buffer.length === 0) {
        if (this.stopping) return;
        await this.sleepUntilWoken();
        continue;
      }
      const item = this.buffer[0]; // stays in the buffer (counts against its depth) until done
      const done = await this.sendLogical(item);
      if (this.aborted) return;
      this.buffer.shift();
      if (done === 'gave-up') {
        this.gaveUp += 1 + this.buffer.length; // the deadline passed: nothing more is sent
        this.buffer.length = 0;
        return;
      }
    }
  }

  // sendLogical: every attempt of one logical write, until a definite answer,
  // the deadline, or an abort. Returns 'done' or 'gave-up'.
  async sendLogical(item) {
    for (let attempt = 1; ; attempt++) {
      if (!this.canSend()) return this.aborted ? 'aborted' : 'gave-up';
      const deadline = this.effectiveDeadline();
      const timeoutMs = deadline === null ? this.cfg.writeTimeoutMs : Math.max(1, Math.min(this.cfg.writeTimeoutMs, deadline - this.now()));
      const ctl = new AbortController();
      this.inflight = ctl;
      const sentAt = this.now();
      this.sent++;
      const ans = await this.sink.put(this.term, item.key, item.value, item.idempotencyKey, { signal: ctl.signal, agent: this.agent, timeoutMs });
      this.inflight = null;
      const c = classifyWrite(ans);
      this.event('write', {
        identity: this.identity,
        key: item.key,
        value: item.value,
        idempotency_key: item.idempotencyKey,
        epoch: this.term,
        result: c.result,
        status: c.status,
        duration_ms: this.now() - sentAt,
      });
      if (this.aborted) return 'aborted';
      switch (c.outcome) {
        case 'committed':
          return 'done';
        case 'stale':
          this.onStale(); // a later term fenced the sink: this term is lost (MUST 7 (c))
          return 'done';
        case 'refused':
          this.log(`write ${item.idempotencyKey}: ${c.status} ${c.result}: ${c.defect}; not retried`);
          return 'done';
        default: {
          const d = retryDelay(attempt, c.retryAfterMs, { baseMs: 100, capMs: this.cfg.retryPeriodMs });
          const dl = this.effectiveDeadline();
          const until = dl === null ? d : Math.min(d, Math.max(0, dl - this.now()));
          await wait(until, this.abortAll.signal);
        }
      }
    }
  }

  // stopDrain: the Lease of this term was lost at lossAt: produce nothing
  // more, send what is buffered until lossAt + drain_timeout (less a margin).
  stopDrain(lossAt) {
    if (this.stopping || this.aborted) return this.joined;
    this.stopping = true;
    this.stopAt = this.now();
    clearInterval(this.producer);
    this.toDrain = this.buffer.length;
    const implied = this.effectiveDeadline();
    let dl = lossAt + this.cfg.drainTimeoutMs - this.cfg.drainMarginMs;
    if (implied !== null && implied < dl) dl = implied;
    this.deadline = dl;
    this.deadlineTimer = setTimeout(() => {
      // Nothing of this term is sent from now on: cut the attempt in flight.
      if (this.inflight) this.inflight.abort();
      this.abortAll.abort();
    }, Math.max(0, dl - this.now()));
    this.notify();
    return this.joined;
  }

  // quiesce: before our own re-creation of the deleted Lease grants the next
  // term: produce nothing more, start no new attempt (the buffered writes
  // are given up, never sent), and let the attempt in flight get its answer
  // for at most boundMs. So no write of this term can commit after the new
  // term is granted (no-stale-commit), which draining after it could.
  quiesce(boundMs) {
    if (this.stopping || this.aborted) return this.joined;
    this.stopping = true;
    this.stopAt = this.now();
    clearInterval(this.producer);
    this.toDrain = this.buffer.length;
    this.deadline = this.stopAt;
    this.abortAll.abort(); // cuts retry waits, not the attempt in flight
    this.deadlineTimer = setTimeout(() => {
      if (this.inflight) this.inflight.abort();
    }, Math.max(0, boundMs));
    this.notify();
    return this.joined;
  }

  // abort: shutdown (SHOULD 4): stop sending at once, drop what is not sent.
  abort() {
    if (this.aborted) return this.joined;
    this.aborted = true;
    this.abortAt = this.now();
    if (!this.stopping) this.stopAt = this.abortAt;
    this.stopping = true;
    clearInterval(this.producer);
    this.dropped = this.buffer.length;
    if (this.inflight) this.inflight.abort();
    this.abortAll.abort();
    this.notify();
    return this.joined;
  }

  finish() {
    clearTimeout(this.deadlineTimer);
    clearInterval(this.producer);
    this.agent.destroy();
    const now = this.now();
    if (this.aborted) {
      this.event('bridge_aborted', {
        identity: this.identity,
        epoch: this.term,
        count: this.dropped,
        duration_ms: now - this.abortAt,
        detail: `enqueued=${this.enqueued}`,
      });
    } else {
      this.event('bridge_drained', {
        identity: this.identity,
        epoch: this.term,
        count: this.toDrain,
        duration_ms: now - this.stopAt,
        detail: `enqueued=${this.enqueued}` + (this.gaveUp ? ` gave_up=${this.gaveUp}` : ''),
      });
    }
    const waited = now - this.stopAt;
    this.event('bridge_joined', {
      identity: this.identity,
      epoch: this.term,
      joined_in_time: waited <= this.cfg.drainTimeoutMs,
      duration_ms: waited,
      drain_timeout_ms: this.cfg.drainTimeoutMs,
    });
    this.resolveJoined({ aborted: this.aborted, gaveUp: this.gaveUp });
  }
}

module.exports = { TermWriter, CAPACITY, wait };
