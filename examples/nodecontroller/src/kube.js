'use strict';
// The Lease through the apiserver, in-cluster (MUST 1): the `kubernetes`
// Service's address and the ServiceAccount's token, no client library.
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const { request } = require('./http');

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

class Kube {
  constructor({ namespace, name, timeoutMs, saDir = SA_DIR, env = process.env }) {
    this.ns = namespace;
    this.name = name;
    this.timeoutMs = timeoutMs;
    this.saDir = saDir;
    if (env.NODECONTROLLER_TEST_APISERVER) {
      // Only for test-local/: a fake apiserver on the loopback, plain HTTP.
      this.base = env.NODECONTROLLER_TEST_APISERVER.replace(/\/+$/, '');
      this.testToken = 'test';
      this.ca = null;
      this.agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
      return;
    }
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT || '443';
    if (!host) throw new Error('KUBERNETES_SERVICE_HOST is not set: not running in a cluster');
    this.base = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.ca = fs.readFileSync(`${saDir}/ca.crt`);
    this.agent = new https.Agent({ keepAlive: true, ca: this.ca, maxSockets: 2 });
  }

  token() {
    if (this.testToken) return this.testToken;
    // Projected tokens rotate: read the file on every request.
    return fs.readFileSync(`${this.saDir}/token`, 'utf8').trim();
  }

  leasesPath() {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.ns)}/leases`;
  }

  async call(method, path, obj) {
    const headers = { Authorization: `Bearer ${this.token()}`, Accept: 'application/json' };
    let body = null;
    if (obj !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(obj);
    }
    const ans = await request(this.base + path, { method, headers, body, timeoutMs: this.timeoutMs, agent: this.agent, ca: this.ca });
    if (ans.body !== undefined) {
      try {
        ans.json = JSON.parse(ans.body);
      } catch (_) {
        ans.json = null;
      }
    }
    return ans;
  }

  getLease() {
    return this.call('GET', `${this.leasesPath()}/${encodeURIComponent(this.name)}`);
  }

  createLease(lease) {
    return this.call('POST', this.leasesPath(), lease);
  }

  replaceLease(lease) {
    // An Update (PUT) carrying the resourceVersion we read: optimistic concurrency.
    return this.call('PUT', `${this.leasesPath()}/${encodeURIComponent(this.name)}`, lease);
  }
}

// watchLease: follow the one Lease (SHOULD 6). Calls onObject(lease) for
// every version seen; resolves when the stream ends (any reason). The
// caller restarts it. `stop()` on the returned handle ends it.
Kube.prototype.watchLease = function watchLease(onObject, { idleMs = 90000 } = {}) {
  const u = new URL(
    `${this.base}${this.leasesPath()}?watch=1&timeoutSeconds=60&fieldSelector=${encodeURIComponent(`metadata.name=${this.name}`)}`,
  );
  const mod = u.protocol === 'https:' ? https : http;
  let req;
  const done = new Promise((resolve) => {
    try {
      req = mod.request(u, { method: 'GET', headers: { Authorization: `Bearer ${this.token()}`, Accept: 'application/json' }, ca: this.ca || undefined }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          res.on('end', () => resolve(`watch: ${res.statusCode}`));
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          buf += d;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (!line.trim()) continue;
            try {
              const ev = JSON.parse(line);
              if (ev && ev.object && ev.object.kind === 'Lease') onObject(ev.object, ev.type);
            } catch (_) {
              /* a line we cannot read: ignore */
            }
          }
        });
        res.on('end', () => resolve('watch: ended'));
        res.on('error', (e) => resolve(`watch: ${e.message}`));
        res.on('aborted', () => resolve('watch: aborted'));
      });
    } catch (e) {
      resolve(`watch: ${e.message}`);
      return;
    }
    req.setTimeout(idleMs, () => req.destroy(new Error('idle')));
    req.on('error', (e) => resolve(`watch: ${e.message}`));
    req.end();
  });
  return { done, stop: () => req && req.destroy() };
};

// microTime: metav1.MicroTime's wire form, RFC 3339 with 6 fractional digits.
function microTime(ms) {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

module.exports = { Kube, microTime };
