'use strict';
// Pure term decisions for the Lease lock (docs/controller-contract.md, MUST 1-3).
// Terms are BigInt: the contract's term is an unsigned 64-bit integer.

const U64_MAX = (1n << 64n) - 1n;

// parseTerm: the annotation's value -> BigInt, null when absent, or the
// string 'invalid' when it is not plain decimal digits within u64.
function parseTerm(raw) {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) return 'invalid';
  const v = BigInt(raw);
  return v > U64_MAX ? 'invalid' : v;
}

function maxBig(a, b) {
  return a > b ? a : b;
}

// observeLease: what the lock needs of a Lease object read from the apiserver.
function observeLease(lease, annotation) {
  const meta = (lease && lease.metadata) || {};
  const spec = (lease && lease.spec) || {};
  const ann = meta.annotations || {};
  const holder = spec.holderIdentity || '';
  return {
    status: 'present',
    holder,
    termRaw: Object.prototype.hasOwnProperty.call(ann, annotation) ? ann[annotation] : undefined,
    durationSec: spec.leaseDurationSeconds,
    // Any change of holder, times, duration, transitions or term restarts
    // the candidate's expiry clock (MUST 2: "since the moment it first read
    // the Lease's current record").
    recordKey: JSON.stringify([
      holder,
      spec.acquireTime || '',
      spec.renewTime || '',
      spec.leaseDurationSeconds || 0,
      spec.leaseTransitions || 0,
      ann[annotation] === undefined ? null : ann[annotation],
    ]),
  };
}

// initialState: the lock's state for a fresh process (or a new identity).
function initialState(identity) {
  return {
    identity,
    leading: null, // BigInt: the term we hold, or null
    lastOkSentAt: 0, // ms: when we sent our last successful acquire/renew
    highestSeen: 0n, // the highest term seen on any incarnation of the Lease
    seenKey: null, // the current record as last read
    seenAt: 0, // ms: when we first read that record
    missingSince: null, // ms: our first 404 of this absence
    pendingTerm: null, // a term whose acquiring write got no definite answer
  };
}

// decide: given our state, an observation of the Lease ({status: 'missing'}
// or observeLease's result) and the time, what to do on this try. Returns
// {action, term?, reason, up} where `up` is the state fields to update
// whatever the action's outcome. Actions:
//   renew     Update with the same holder and term (MUST 3)
//   takeover  Update with our identity and `term` (one above, MUST 2)
//   create    Create the Lease with `term` (`recreate`: we are its live holder)
//   adopt     the Lease names us with `term`, the term of an acquiring write
//             of ours whose answer we never got: it is ours
//   lost      we led and no longer do (MUST 7's moment (b))
//   rotate    the Lease names our identity with a term we never acquired:
//             take a new identity, never bump a term under ours (MUST 1)
//   wait      nothing to do on this try
//   leave     the Lease is not ours to touch (bad term annotation)
function decide(st, obs, now, cfg) {
  const up = {};
  if (obs.status === 'missing') {
    up.seenKey = null;
    if (st.leading !== null) {
      // The live holder re-creates it at once (MUST 2).
      if (now - st.lastOkSentAt < cfg.leaseDurationMs) {
        const term = maxBig(st.leading, st.highestSeen) + 1n;
        if (term > U64_MAX) return { action: 'lost', reason: 'term would overflow u64', up };
        return { action: 'create', term, recreate: true, reason: 'live holder re-creates the deleted Lease', up };
      }
      return { action: 'lost', reason: 'the Lease is gone and our lease has run out', up };
    }
    const since = st.missingSince === null ? now : st.missingSince;
    up.missingSince = since;
    if (now - since >= cfg.leaseDurationMs) {
      const term = st.highestSeen + 1n;
      if (term > U64_MAX) return { action: 'leave', reason: 'term would overflow u64', up };
      return { action: 'create', term, recreate: false, reason: 'missing for a lease duration', up };
    }
    return { action: 'wait', reason: 'Lease missing: giving its holder a lease duration to re-create it', up };
  }

  up.missingSince = null;
  let term = parseTerm(obs.termRaw);
  if (term === null) term = 0n; // a holder without the annotation counts as term 0
  if (term !== 'invalid' && term > st.highestSeen) up.highestSeen = term;
  const highest = term === 'invalid' ? st.highestSeen : maxBig(term, st.highestSeen);
  let seenAt = st.seenAt;
  if (obs.recordKey !== st.seenKey) {
    up.seenKey = obs.recordKey;
    up.seenAt = now;
    seenAt = now;
  }

  if (obs.holder !== '' && obs.holder === st.identity) {
    if (term !== 'invalid') {
      if (st.leading !== null && term === st.leading) return { action: 'renew', term, reason: 'we hold it', up };
      if (st.pendingTerm !== null && term === st.pendingTerm) {
        return { action: 'adopt', term, reason: 'our acquiring write committed though its answer was lost', up };
      }
    }
    if (st.leading !== null) return { action: 'lost', reason: `the Lease names us with term ${String(term)}, not ${st.leading}`, up };
    return { action: 'rotate', reason: `the Lease names our identity with term ${String(term)} we never acquired`, up };
  }

  if (st.leading !== null) {
    return { action: 'lost', reason: obs.holder === '' ? 'the Lease was released' : `the Lease names ${obs.holder}`, up };
  }
  if (term === 'invalid') {
    return { action: 'leave', reason: `term annotation ${JSON.stringify(obs.termRaw)} is not a decimal u64`, up };
  }
  const durMs = obs.durationSec > 0 ? obs.durationSec * 1000 : cfg.leaseDurationMs;
  const expired = obs.holder === '' || now - seenAt >= durMs;
  if (!expired) return { action: 'wait', reason: `held by ${obs.holder}`, up };
  const next = highest + 1n;
  if (next > U64_MAX) return { action: 'leave', reason: 'term would overflow u64', up };
  return { action: 'takeover', term: next, reason: obs.holder === '' ? 'no holder' : `${obs.holder}'s lease expired`, up };
}

// leaseDurationSeconds: the whole seconds of $FENCECHECK_LEASE_DURATION,
// rounded down, at least 1 (MUST 2).
function leaseDurationSeconds(ms) {
  return Math.max(1, Math.floor(ms / 1000));
}

module.exports = { U64_MAX, parseTerm, observeLease, initialState, decide, leaseDurationSeconds, maxBig };
