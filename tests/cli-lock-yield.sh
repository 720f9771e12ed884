#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Other clients get their turn on a lock resplock keeps busy.  Two loops
# of `resplock run NAME -w 10s -- sleep 0.05` hand the lock from one to
# the other; after 2 s of handoffs a release frees it and resplock's
# clients keep away for 200 ms, the new ones included (every run is a new
# client, whose first try is a plain SET NX).  In every trial a redis-py
# Lock with its default polling (0.1 s) and node-redlock 4.2.0 with its
# defaults (retries 200 ms +- 100 ms apart) must get the lock within 10 s.
#
# node-redlock and its Redis client are installed by npm into this
# test's build directory (tests/node-redlock) when missing;
# scripts/install-deps puts them in npm's cache, so that needs no network.
. "$top_srcdir/tests/cli-lock-lib.sh"
py=/usr/bin/python3
TRIALS=${RLK_YIELD_TRIALS:-3}   # more for a measurement
WAIT_S=10

rlk_redis_start yield "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
someone_in_line() { [ "$(R EXISTS "{$1}:queue")" = 1 ]; }
held() { [ "$(R EXISTS "$1")" = 1 ]; }
# Under RLK_WRAP (valgrind) a run takes about half a second to start, and
# the two loops seldom overlap enough to hand the lock over for 2 s: the
# other client then starts once the loops hold the lock; what is checked
# there is that every run of theirs succeeds (no memcheck error) and the
# other client still gets its turn.
if [ -n "$RLK_WRAP" ]; then
  busy=held
  echo "# under RLK_WRAP: the other client starts once a loop holds the lock (the chain of handoffs seldom forms)"
else
  busy=someone_in_line
fi

# loop.sh STOPFILE resplock-and-args...: runs the command until STOPFILE
# exists; a run that fails (its wait of 10 s ran out) is counted.
cat >"$work/loop.sh" <<'EOF'
stop=$1; shift
while [ ! -e "$stop" ]; do
  "$@" </dev/null >/dev/null 2>>"$stop.err" || echo x >>"$stop.fails"
done
EOF

cat >"$work/pylock.py" <<'EOF'
import sys, time
import redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
lock = r.lock(sys.argv[2], timeout=30, blocking_timeout=float(sys.argv[3]))  # sleep=0.1
t0 = time.monotonic()
if lock.acquire():
    print("got %d" % ((time.monotonic() - t0) * 1000))
    lock.release()
else:
    print("not within %s s" % sys.argv[3])
EOF

cat >"$work/redlock.js" <<'EOF'
const redis = require("redis");
const Redlock = require("redlock");
const [port, name, waitS] = process.argv.slice(2);
const client = redis.createClient({ host: "127.0.0.1", port: Number(port) });
const redlock = new Redlock([client]); // the defaults: 10 retries, 200 ms +- 100 ms apart
redlock.on("clientError", () => {});
const t0 = Date.now();
(async () => {
  let out = "not within " + waitS + " s";
  // One lock() gives up after its retries: called again until the wait is over.
  while (Date.now() - t0 < waitS * 1000) {
    try {
      const lock = await redlock.lock(name, 30000);
      const ms = Date.now() - t0;
      out = ms <= waitS * 1000 ? "got " + ms : out;
      await lock.unlock();
      break;
    } catch (e) {
      if (!(e instanceof Redlock.LockError)) throw e;
    }
  }
  console.log(out);
  client.quit();
})().catch((e) => { console.log("error " + e); process.exit(2); });
EOF

# trial LABEL NAME COMMAND...: the two loops on NAME, then COMMAND (the
# other client, which prints "got MS" or why not) once someone waits in
# line ($busy); the loops are stopped after it.
trial() {
  local label=$1 name=$2 i pids=() res e; shift 2
  local stop="$work/stop-$name"
  for i in 1 2; do
    setsid bash "$work/loop.sh" "$stop" $RLK_WRAP "$bin" -u "$url" run "$name" -w 10s -- sleep 0.05 &
    pids+=($!); BG_PIDS+=($!)
  done
  if ! wait_until $((5 * SLOW)) $busy "$name"; then
    bad "$label: $busy $name: not within $((5 * SLOW)) s"
  else
    res=$(timeout $((WAIT_S + 10)) "$@" "$port" "$name" "$WAIT_S" 2>"$work/err-$name")
    case $res in
      got\ *) ok "$label: ${res#got } ms"; got=$((got + 1)) ;;
      *) mapfile -t e < <(tail -n 3 "$work/err-$name"); bad "$label: ${res:-no answer}" "${e[@]}" ;;
    esac
  fi
  touch "$stop"
  for i in "${pids[@]}"; do reap "$i" $((15 * SLOW)) || bad "$label: a loop did not stop"; done
  if [ -e "$stop.fails" ]; then
    mapfile -t e < <(tail -n 3 "$stop.err")
    bad "$label: $(wc -l <"$stop.fails") runs of the loops failed" "${e[@]}"
  fi
}

if ! $py -c 'import redis' 2>/dev/null; then
  bad "redis-py: $py cannot import redis (Debian package python3-redis)"
else
  got=0
  for t in $(seq $TRIALS); do trial "redis-py Lock (default 0.1 s polling), trial $t" "py$t" $py "$work/pylock.py"; done
  expect_eq "redis-py got the lock within $WAIT_S s in every trial" "$got/$TRIALS" "$TRIALS/$TRIALS"
fi

node_dir="$top_builddir/tests/node-redlock"
if [ ! -d "$node_dir/node_modules/redlock" ]; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --prefer-offline --no-audit --no-fund --loglevel=error \
    redlock@4.2.0 redis@3.1.2 >"$work/npm.log" 2>&1 ||
    bad "npm install redlock@4.2.0 redis@3.1.2 into $node_dir failed (scripts/install-deps)" \
      "$(tail -n 5 "$work/npm.log")"
fi
if [ -d "$node_dir/node_modules/redlock" ]; then
  got=0
  for t in $(seq $TRIALS); do
    trial "node-redlock (defaults), trial $t" "nr$t" env NODE_PATH="$node_dir/node_modules" node "$work/redlock.js"
  done
  expect_eq "node-redlock got the lock within $WAIT_S s in every trial" "$got/$TRIALS" "$TRIALS/$TRIALS"
fi
finish
