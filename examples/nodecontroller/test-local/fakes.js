'use strict';
// A fake apiserver (the one Lease, with resourceVersion) and a fake sink
// (sink-contract.md's PUT and fence), each listening on one loopback port
// per replica so that a request's port says which replica sent it and a
// replica can be "partitioned" alone. Only for test-local/.
const http = require('node:http');

function readBody(req) {
  return new Promise((r) => {
    const c = [];
    req.on('data', (d) => c.push(d));
    req.on('end', () => r(Buffer.concat(c).toString('utf8')));
  });
}

function send(res, status, obj, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(obj === undefined ? '' : JSON.stringify(obj));
}

class World {
  constructor({ annotation }) {
    this.annotation = annotation;
    this.lease = null; // the stored object
    this.rv = 0;
    this.leaseVersions = []; // {t, holder, term, deleted?}
    this.floor = 0n;
    this.records = new Map();
    this.idem = new Map(); // Idempotency-Key -> {key, value, epoch}
    this.sinkLog = []; // every request: {t, replica, op, epoch, key, value, idem, status, result}
    this.partitioned = new Set(); // replicas cut off from the apiserver
    this.loseAnswers = false;
    this.commits = 0;
    this.servers = [];
    this.watchers = new Set();
  }

  recordLease(type = 'MODIFIED') {
    const l = this.lease;
    for (const w of this.watchers) {
      if (this.partitioned.has(w.replica)) continue;
      w.res.write(JSON.stringify(l ? { type, object: l } : { type: 'DELETED', object: this.lastLease }) + '\n');
    }
    if (l) this.lastLease = l;
    this.leaseVersions.push(
      l
        ? { t: Date.now(), holder: l.spec.holderIdentity || '', term: (l.metadata.annotations || {})[this.annotation], rv: l.metadata.resourceVersion }
        : { t: Date.now(), deleted: true },
    );
  }

  deleteLease() {
    this.lease = null;
    this.recordLease();
  }

  async api(replica, req, res) {
    if (this.partitioned.has(replica)) return; // never answered: the client times out
    const body = await readBody(req);
    const path = req.url.split('?')[0];
    if (!path.startsWith('/apis/coordination.k8s.io/v1/namespaces/')) return send(res, 404, { reason: 'NotFound' });
    if (req.method === 'GET' && /[?&]watch=1/.test(req.url)) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (this.lease) res.write(JSON.stringify({ type: 'ADDED', object: this.lease }) + '\n');
      this.watchCount = (this.watchCount || 0) + 1;
      const w = { replica, res };
      this.watchers.add(w);
      res.on('close', () => this.watchers.delete(w));
      return;
    }
    if (req.method === 'GET') return this.lease ? send(res, 200, this.lease) : send(res, 404, { kind: 'Status', reason: 'NotFound' });
    const obj = JSON.parse(body);
    // metav1.MicroTime: RFC 3339 with exactly 6 fractional digits, as the apiserver parses it.
    for (const f of ['acquireTime', 'renewTime']) {
      const v = (obj.spec || {})[f];
      if (v !== undefined && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/.test(v)) {
        return send(res, 400, { kind: 'Status', reason: 'BadRequest', message: `spec.${f}: ${v}` });
      }
    }
    if (req.method === 'POST') {
      if (this.lease) return send(res, 409, { kind: 'Status', reason: 'AlreadyExists' });
      obj.metadata.resourceVersion = String(++this.rv);
      this.lease = obj;
      this.recordLease('ADDED');
      return send(res, 201, obj);
    }
    if (req.method === 'PUT') {
      if (!this.lease) return send(res, 404, { kind: 'Status', reason: 'NotFound' });
      if (obj.metadata.resourceVersion !== this.lease.metadata.resourceVersion) return send(res, 409, { kind: 'Status', reason: 'Conflict' });
      obj.metadata.resourceVersion = String(++this.rv);
      this.lease = obj;
      this.recordLease();
      return send(res, 200, obj);
    }
    send(res, 405, {});
  }

  async sink(replica, req, res) {
    const body = await readBody(req);
    const t = Date.now();
    const raw = req.headers['x-camel-leader-epoch'];
    const entry = { t, replica, epochRaw: raw, auth: req.headers.authorization };
    if (typeof raw === 'string' && /^[0-9]+$/.test(raw)) entry.epoch = BigInt(raw);
    this.sinkLog.push(entry);
    if (this.sinkMode === 'down') {
      entry.op = req.method === 'PUT' ? 'put' : 'fence';
      entry.idem = req.headers['idempotency-key'];
      entry.result = 'DOWN';
      return req.socket.destroy(); // a crashed sink: no answer
    }
    if (this.sinkMode === 'busy') {
      entry.op = req.method === 'PUT' ? 'put' : 'fence';
      entry.idem = req.headers['idempotency-key'];
      entry.result = 'BUSY';
      entry.status = 503;
      return send(res, 503, { result: 'ERROR', error: 'busy' }, { 'Retry-After': '1' });
    }
    if (req.headers.authorization !== 'Bearer s3cret') {
      entry.status = 401;
      return send(res, 401, { result: 'UNAUTHORIZED', error: 'missing or wrong bearer token' });
    }
    if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) {
      entry.status = 400;
      return send(res, 400, { result: 'BAD_REQUEST', error: 'epoch' });
    }
    const epoch = BigInt(raw);
    entry.epoch = epoch;
    if (req.method === 'POST' && req.url === '/v1/fence') {
      entry.op = 'fence';
      if (epoch < this.floor) {
        entry.status = 409;
        return send(res, 409, { result: 'REJECT_STALE_EPOCH', highest_epoch: Number(this.floor) });
      }
      this.floor = epoch;
      entry.status = 200;
      entry.result = 'OK';
      return send(res, 200, { result: 'OK', highest_epoch: Number(epoch) });
    }
    const m = /^\/v1\/records\/([^/]+)$/.exec(req.url);
    if (req.method !== 'PUT' || !m) return send(res, 404, {});
    entry.op = 'put';
    entry.key = decodeURIComponent(m[1]);
    entry.value = body;
    entry.idem = req.headers['idempotency-key'];
    const prev = entry.idem && this.idem.get(entry.idem);
    if (prev && prev.key === entry.key && prev.value === body) {
      entry.status = 200;
      entry.result = 'OK_DUP';
      return send(res, 200, { result: 'OK_DUP', epoch: Number(prev.epoch) });
    }
    if (prev) {
      entry.status = 422;
      return send(res, 422, { result: 'IDEMPOTENCY_CONFLICT', error: 'x' });
    }
    if (epoch < this.floor) {
      entry.status = 409;
      entry.result = 'REJECT_STALE_EPOCH';
      return send(res, 409, { result: 'REJECT_STALE_EPOCH', highest_epoch: Number(this.floor) });
    }
    this.floor = epoch;
    this.records.set(entry.key, { value: body, epoch });
    if (entry.idem) this.idem.set(entry.idem, { key: entry.key, value: body, epoch });
    entry.status = 200;
    entry.result = 'OK';
    this.commits++;
    if (this.loseAnswers && this.commits % 7 === 0) {
      entry.answerLost = true;
      return req.socket.destroy(); // committed, answer lost
    }
    return send(res, 200, { result: 'OK', epoch: Number(epoch) });
  }

  listen(kind, replica) {
    return new Promise((resolve) => {
      const s = http.createServer((req, res) => (kind === 'api' ? this.api(replica, req, res) : this.sink(replica, req, res)));
      s.listen(0, '127.0.0.1', () => resolve(s.address().port));
      this.servers.push(s);
    });
  }

  close() {
    for (const s of this.servers) {
      s.closeAllConnections();
      s.close();
    }
  }
}

module.exports = { World };
