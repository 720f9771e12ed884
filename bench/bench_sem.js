// SPDX-License-Identifier: BSD-3-Clause
// The anchor of bench/bench_sem.c: redis-semaphore's Semaphore with an
// ioredis client, driven by the benchmark over lines on stdin and stdout.
//
//   node bench_sem.js PORT
// prints "ready REDIS-SEMAPHORE-VERSION IOREDIS-VERSION NODE-VERSION" once
// connected, then answers:
//   cycle PERMITS N
//       N uncontended cycles, one after the other, on one connection: a
//       new Semaphore(client, 'bench:sem', PERMITS) (as its documentation
//       uses it: one instance per holder), await acquire(), await
//       release().  Answers "SECONDS CPU-SECONDS".  An acquire that does
//       not succeed (acquire() throws), or any Error, ends the process.
//   wake PERMITS TRIALS
//       per trial: PERMITS holders (Semaphores on the cycles' connection)
//       take every permit of 'bench:semwake'; a waiter (a Semaphore on a
//       second connection, its defaults: retryInterval 10 ms) starts its
//       acquire(); after 20 to 40 ms (a random pause) one holder releases:
//       the time is read just before release() is called, and again when
//       the waiter's acquire() resolves.  Then every permit is given back.
//       Answers "w US US ..." (release to wake, per trial, microseconds).
// Every time is read from process.hrtime within this process.
'use strict';
const readline = require('readline');
const version = require('./pkg_version.js');
const Redis = require('ioredis');
const { Semaphore } = require('redis-semaphore');

function fail(msg) {
  process.stderr.write('bench_sem.js: ' + msg + '\n');
  process.exit(1);
}

const nowNs = () => process.hrtime.bigint();
const port = Number(process.argv[2]);
const client = new Redis({ host: '127.0.0.1', port });
client.on('error', (e) => fail('ioredis: ' + e.message));
let waitClient = null; // the waiter's connection, opened by the first "wake"

async function cycles(permits, n) {
  const c0 = process.cpuUsage();
  const t0 = nowNs();
  for (let i = 0; i < n; i++) {
    const s = new Semaphore(client, 'bench:sem', permits);
    await s.acquire(); // throws TimeoutError when not acquired
    if (!s.isAcquired) fail('cycle: acquire() returned without the permit');
    await s.release();
  }
  const secs = Number(nowNs() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  return secs.toFixed(9) + ' ' + ((c.user + c.system) / 1e6).toFixed(6);
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function wake(permits, trials) {
  if (!waitClient) {
    waitClient = new Redis({ host: '127.0.0.1', port });
    waitClient.on('error', (e) => fail('ioredis (waiter): ' + e.message));
    await new Promise((r) => waitClient.once('ready', r));
  }
  const out = [];
  for (let t = 0; t < trials; t++) {
    const holders = [];
    for (let i = 0; i < permits; i++) {
      const h = new Semaphore(client, 'bench:semwake', permits);
      await h.acquire();
      holders.push(h);
    }
    const waiter = new Semaphore(waitClient, 'bench:semwake', permits);
    let woke = 0n;
    const waiting = waiter.acquire().then(() => {
      woke = nowNs();
    });
    await pause(20 + Math.floor(Math.random() * 21));
    if (woke) fail('wake: the waiter acquired while every permit was held');
    const released = nowNs();
    await holders[0].release();
    await waiting; // rejects (ending the process) when not acquired
    out.push((Number(woke - released) / 1e3).toFixed(1));
    for (let i = 1; i < permits; i++) await holders[i].release();
    await waiter.release();
  }
  return 'w ' + out.join(' ');
}

client.once('ready', async () => {
  process.stdout.write('ready ' + version('redis-semaphore') + ' ' + version('ioredis') + ' ' +
                       process.version + '\n');
  const rl = readline.createInterface({ input: process.stdin });
  const lines = rl[Symbol.asyncIterator]();
  for (;;) {
    const { value, done } = await lines.next();
    if (done) break;
    const w = value.trim().split(/\s+/);
    let answer;
    try {
      if (w[0] === 'cycle' && w.length === 3) answer = await cycles(Number(w[1]), Number(w[2]));
      else if (w[0] === 'wake' && w.length === 3) answer = await wake(Number(w[1]), Number(w[2]));
      else fail('unknown request: ' + value);
    } catch (e) {
      fail(w[0] + ': ' + (e && e.stack ? e.stack : e));
    }
    process.stdout.write(answer + '\n');
  }
  client.disconnect();
  if (waitClient) waitClient.disconnect();
});
