'use strict';
// Go duration strings (time.Duration.String() and time.ParseDuration's
// input): "4s", "200ms", "1.5s", "1m30s", "-2h", "0". Returns milliseconds
// as a Number (fractions kept: "1500us" is 1.5).

const UNIT_MS = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3, // U+00B5 micro sign
  'μs': 1e-3, // U+03BC greek mu
  ms: 1,
  s: 1000,
  m: 60 * 1000,
  h: 60 * 60 * 1000,
};

function parseDuration(text) {
  if (typeof text !== 'string') throw new TypeError('duration: not a string');
  let s = text.trim();
  if (s === '') throw new Error('duration: empty');
  let sign = 1;
  if (s[0] === '-' || s[0] === '+') {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new Error(`duration ${JSON.stringify(text)}: no number`);
  const re = /^([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)/;
  let total = 0;
  while (s.length > 0) {
    const m = re.exec(s);
    if (!m || m[1] === '' || m[1] === '.') {
      throw new Error(`duration ${JSON.stringify(text)}: want numbers with units ns, us, ms, s, m, h`);
    }
    total += parseFloat(m[1]) * UNIT_MS[m[2]];
    s = s.slice(m[0].length);
  }
  return sign * total;
}

module.exports = { parseDuration };
