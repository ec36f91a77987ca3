'use strict';
// FCEVENT lines (the contract's MAY): one JSON object a line on stdout.

function toJSON(obj) {
  // BigInt terms: written as plain JSON integers, exact for the whole u64 range.
  return JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? `\u0000big:${v}` : v)).replace(
    /"\\u0000big:([0-9]+)"/g,
    '$1',
  );
}

function makeEventLog({ pod, write = (s) => process.stdout.write(s), clock = () => new Date() }) {
  let stopped = false;
  return function event(kind, fields = {}) {
    if (stopped) return;
    const obj = { time: clock().toISOString(), pod, kind, ...fields };
    write(`FCEVENT ${toJSON(obj)}\n`);
    if (kind === 'stopped') stopped = true; // the last line of the log
  };
}

function logLine(msg) {
  process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
}

module.exports = { toJSON, makeEventLog, logLine };
