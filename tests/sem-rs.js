// SPDX-License-Identifier: BSD-3-Clause
// redis-semaphore 5.8.0 (over ioredis 5) for tests/cli-sem-rs.sh: the
// other side of the semaphore's redis-semaphore layout.
//
//   node sem-rs.js ADDR CMD NAME LIMIT K LOCKTIMEOUT [ARG]
// ADDR: PORT (one server on 127.0.0.1) or c:PORT (a cluster, seeded
// there).  K 1 is a Semaphore, K > 1 a MultiSemaphore of K permits.
//   try       one tryAcquire (a single attempt); prints 1 (then releases
//             at once) or 0.
//   hold DIR  one attempt (refused: prints 0, exits 3); holding, writes
//             DIR/held (its Date.now()) and refreshes as redis-semaphore
//             does by default (every 0.8 lockTimeout); when DIR/go
//             appears, releases and writes DIR/released (Date.now()
//             just before the release).  A lost permit writes DIR/lost.
//   take      one attempt with no refresh, and exits without a release
//             (a holder that stopped): prints the Date.now() read just
//             before the attempt, or 0.
//   wait MS   acquire() within MS; prints the ms it took, then releases;
//             exits 4 when MS passed.
// Any error ends the process with exit 1 and its message on stderr.
'use strict';
const fs = require('fs');
const path = require('path');
const Redis = require('ioredis');
const { Semaphore, MultiSemaphore } = require('redis-semaphore');

function fail(msg) {
  process.stderr.write('sem-rs.js: ' + msg + '\n');
  process.exit(1);
}
process.on('unhandledRejection', (e) => fail(String(e && e.stack || e)));

const [addr, cmd, name, limitS, kS, ltS, arg] = process.argv.slice(2);
const limit = Number(limitS), k = Number(kS), lockTimeout = Number(ltS);
if (!addr || !cmd || !name || !(limit >= 1) || !(k >= 1) || !(lockTimeout >= 1))
  fail('usage: sem-rs.js ADDR CMD NAME LIMIT K LOCKTIMEOUT [ARG]');
const client = addr.startsWith('c:')
  ? new Redis.Cluster([{ host: '127.0.0.1', port: Number(addr.slice(2)) }])
  : new Redis({ host: '127.0.0.1', port: Number(addr) });
client.on('error', (e) => fail('ioredis: ' + e.message));

function make(opts) {
  const o = Object.assign({ lockTimeout }, opts);
  return k === 1 ? new Semaphore(client, name, limit, o) : new MultiSemaphore(client, name, limit, k, o);
}
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
async function done(code) {
  await client.quit();
  process.exit(code);
}

async function main() {
  if (cmd === 'try') {
    const s = make({ acquireAttemptsLimit: 1 });
    const got = await s.tryAcquire();
    if (got) await s.release();
    process.stdout.write(got ? '1\n' : '0\n');
    return done(0);
  }
  if (cmd === 'hold') {
    const dir = arg;
    const s = make({
      acquireAttemptsLimit: 1,
      onLockLost: () => fs.writeFileSync(path.join(dir, 'lost'), String(Date.now()))
    });
    if (!(await s.tryAcquire())) {
      process.stdout.write('0\n');
      return done(3);
    }
    fs.writeFileSync(path.join(dir, 'held'), String(Date.now()));
    while (!fs.existsSync(path.join(dir, 'go'))) await pause(10);
    const t = Date.now();
    await s.release();
    fs.writeFileSync(path.join(dir, 'released'), String(t));
    return done(0);
  }
  if (cmd === 'take') {
    const s = make({ acquireAttemptsLimit: 1, refreshInterval: 0 });
    const t = Date.now();
    const got = await s.tryAcquire();
    process.stdout.write(got ? t + '\n' : '0\n');
    return done(0);
  }
  if (cmd === 'wait') {
    const s = make({ acquireTimeout: Number(arg) });
    const t = Date.now();
    if (!(await s.tryAcquire())) return done(4);
    process.stdout.write(Date.now() - t + '\n');
    await s.release();
    return done(0);
  }
  fail('unknown command ' + cmd);
}
main().catch((e) => fail(String(e && e.stack || e)));
