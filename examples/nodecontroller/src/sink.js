'use strict';
// The sink through the witness (MUST 8): $FENCECHECK_SINK_URL + path,
// Authorization: Bearer <token>, x-camel-leader-epoch exactly once.
const http = require('node:http');
const { request } = require('./http');

class Sink {
  constructor({ baseUrl, token, timeoutMs }) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = token;
    this.timeoutMs = timeoutMs;
  }

  newAgent() {
    return new http.Agent({ keepAlive: true, maxSockets: 1 });
  }

  fence(term, { signal, agent, timeoutMs = this.timeoutMs } = {}) {
    return request(`${this.baseUrl}/v1/fence`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${this.token}`, 'x-camel-leader-epoch': term.toString() },
      body: '',
      timeoutMs,
      signal,
      agent,
    });
  }

  put(term, key, value, idempotencyKey, { signal, agent, timeoutMs = this.timeoutMs } = {}) {
    return request(`${this.baseUrl}/v1/records/${encodeURIComponent(key)}`, {
      method: 'PUT',
      headers: {
        Authorization: `Bearer ${this.token}`,
        'x-camel-leader-epoch': term.toString(),
        'Idempotency-Key': idempotencyKey,
        'Content-Type': 'text/plain; charset=utf-8',
      },
      body: value,
      timeoutMs,
      signal,
      agent,
    });
  }
}

module.exports = { Sink };
