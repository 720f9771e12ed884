// SPDX-License-Identifier: BSD-3-Clause
// The anchor of bench/bench_rate.c: rate-limiter-flexible's
// RateLimiterRedis with an ioredis client (its default store client: no
// useRedisPackage, no storeType), one connection, driven by the
// benchmark over lines on stdin and stdout.
//
//   node bench_rate.js PORT
// prints "ready RLF-VERSION IOREDIS-VERSION NODE-VERSION" once connected,
// then answers:
//   decide allowed|refused N
//       N consume() calls, one after the other, on a limiter that allows
//       every one (points 1e15 per hour) or refuses every one (1 point per
//       hour, taken before); answers "SECONDS CPU-SECONDS".  A decision
//       the other way, or an Error, ends the process.
//   edge POINTS DURATION-S LEAD-MS LENGTH-MS STEP-US
//       a fresh fixed window (points per duration): one consume() opens
//       it; its edge is DURATION-S after that (its key's expiry, set by
//       the script with EX); from LEAD-MS before the edge, one consume()
//       every STEP-US for LENGTH-MS, each started on its time by the
//       monotonic clock (or at once when the previous one came back
//       late).  Answers "a US" for each decision admitted, the midpoint
//       of its call in microseconds from the edge (the opener's
//       included), then "end ATTEMPTS".
// The monotonic clock is process.hrtime (CLOCK_MONOTONIC on Linux); every
// time answered is relative to an instant of this process.
'use strict';
const readline = require('readline');
const version = require('./pkg_version.js');
const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');

function fail(msg) {
  process.stderr.write('bench_rate.js: ' + msg + '\n');
  process.exit(1);
}

const nowNs = () => process.hrtime.bigint();
const port = Number(process.argv[2]);
// As rate-limiter-flexible's documentation sets it up: no offline queue
// (a decision while disconnected fails at once).
const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false,
                           maxRetriesPerRequest: 0 });
client.on('error', (e) => fail('ioredis: ' + e.message));

const allowed = new RateLimiterRedis({ storeClient: client, keyPrefix: 'bench:allowed',
                                       points: 1e15, duration: 3600 });
const refused = new RateLimiterRedis({ storeClient: client, keyPrefix: 'bench:refused',
                                       points: 1, duration: 3600 });
let edges = 0;

async function decide(kind, n) {
  const lim = kind === 'allowed' ? allowed : refused;
  const c0 = process.cpuUsage();
  const t0 = nowNs();
  for (let i = 0; i < n; i++) {
    let ok;
    try {
      await lim.consume('k');
      ok = true;
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      ok = false;
    }
    if (ok !== (kind === 'allowed')) fail(kind + ': a decision went the other way');
  }
  const secs = Number(nowNs() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  return secs.toFixed(9) + ' ' + ((c.user + c.system) / 1e6).toFixed(6);
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

// One consume() on lim: [admitted, midpoint ns].
async function attempt(lim) {
  const a = nowNs();
  let ok = true;
  try {
    await lim.consume('k');
  } catch (e) {
    if (!(e instanceof RateLimiterRes)) throw e;
    ok = false;
  }
  return [ok, (a + nowNs()) / 2n];
}

async function edge(points, duration, leadMs, lengthMs, stepUs) {
  const lim = new RateLimiterRedis({ storeClient: client, keyPrefix: 'bench:edge' + ++edges,
                                     points, duration });
  const [opened, at] = await attempt(lim);
  if (!opened) fail('edge: the opener was refused');
  const edgeNs = at + BigInt(duration) * 1000000000n;
  const start = edgeNs - BigInt(leadMs) * 1000000n;
  const step = BigInt(stepUs) * 1000n;
  const tries = Math.floor((lengthMs * 1000) / stepUs);
  const out = ['a ' + (Number(at - edgeNs) / 1e3).toFixed(1)];
  for (let i = 0; i < tries; i++) {
    const due = start + BigInt(i) * step;
    const ahead = Number(due - nowNs()) / 1e6;
    if (ahead >= 1) await pause(Math.floor(ahead));
    while (nowNs() < due); // the last part of a millisecond
    const [ok, t] = await attempt(lim);
    if (ok) out.push('a ' + (Number(t - edgeNs) / 1e3).toFixed(1));
  }
  out.push('end ' + tries);
  return out.join('\n');
}

client.once('ready', async () => {
  try {
    await refused.consume('k'); // its one point: every later decision is refused
  } catch (e) {
    fail('the refusing limiter: ' + e);
  }
  process.stdout.write('ready ' + version('rate-limiter-flexible') + ' ' + version('ioredis') +
                       ' ' + process.version + '\n');
  const rl = readline.createInterface({ input: process.stdin });
  const lines = rl[Symbol.asyncIterator]();
  for (;;) {
    const { value, done } = await lines.next();
    if (done) break;
    const w = value.trim().split(/\s+/);
    let answer;
    try {
      if (w[0] === 'decide' && (w[1] === 'allowed' || w[1] === 'refused') && w.length === 3) {
        answer = await decide(w[1], Number(w[2]));
      } else if (w[0] === 'edge' && w.length === 6) {
        answer = await edge(...w.slice(1).map(Number));
      } else {
        fail('unknown request: ' + value);
      }
    } catch (e) {
      fail(w[0] + ': ' + (e && e.stack ? e.stack : e));
    }
    process.stdout.write(answer + '\n');
  }
  client.disconnect();
});
