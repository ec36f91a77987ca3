'use strict';
// One HTTP(S) request with a deadline and an optional abort signal:
// resolves {status, headers, body} or {error} (no answer). Never rejects.
const http = require('node:http');
const https = require('node:https');

function request(url, { method = 'GET', headers = {}, body = null, timeoutMs = 5000, signal = null, agent, ca } = {}) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(v);
    };
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const opts = { method, headers: { ...headers }, agent };
    if (ca) opts.ca = ca;
    if (signal) opts.signal = signal;
    if (body !== null) opts.headers['Content-Length'] = Buffer.byteLength(body);
    let req;
    try {
      req = mod.request(u, opts, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => finish({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => finish({ error: e.message || String(e) }));
        res.on('aborted', () => finish({ error: 'response aborted' }));
      });
    } catch (e) {
      resolve({ error: e.message || String(e) });
      return;
    }
    const timer = setTimeout(() => {
      req.destroy(new Error(`timeout after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (e) => finish({ error: e.message || String(e) }));
    if (body !== null) req.end(body);
    else req.end();
  });
}

module.exports = { request };
