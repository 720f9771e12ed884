// SPDX-License-Identifier: BSD-3-Clause
// The anchor of bench/bench_redlock.c: node-redlock (npm redlock 4.2.0
// over redis 3.1.2 clients, one connection per server), uncontended
// lock() + unlock() cycles, one after the other.
//
//   node bench_redlock.js N PORT...
// prints "version REDLOCK-VERSION NODE-VERSION", then after a warm-up of
// N / 10 cycles runs N cycles on the PORTs' servers (one: a single
// server; five: Redlock) and prints "cycle US" (the mean microseconds
// per cycle, by the monotonic clock).
'use strict';
const redis = require('redis');
const Redlock = require('redlock');
const [n, ...ports] = process.argv.slice(2).map(Number);
const clients = ports.map((p) => redis.createClient({ host: '127.0.0.1', port: p }));
const redlock = new Redlock(clients, { retryCount: 0 });
redlock.on('clientError', () => {});
const version = require('redlock/package.json').version;
const cycles = async (k) => {
  for (let i = 0; i < k; i++) {
    const lock = await redlock.lock('bench:node-redlock', 30000);
    await lock.unlock();
  }
};
(async () => {
  console.log('version ' + version + ' ' + process.version);
  await cycles(Math.max(1, Math.floor(n / 10)));
  const t0 = process.hrtime.bigint();
  await cycles(n);
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log('cycle ' + us.toFixed(1));
  clients.forEach((c) => c.quit());
})().catch((e) => { console.error('bench_redlock.js: ' + e); process.exit(1); });
