#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock --redlock over 5 independent servers started here: usage
# errors (2 or 4 servers); run sees one token, held on all 5; a second
# run -n is busy (exit 1); status says on how many of 5, ping lists each
# server; acquire, extend and release by token on all; 2 servers down it
# still runs; 3 down: exit 69 at once, naming the servers, with -n and
# with a wait; one server frozen (SIGSTOP) does not hold an acquire up;
# a server restarted empty under a running command is taken again with
# the same token, and the command is not stopped; the keys deleted on 3
# servers under a running command: lost, the command stopped (exit 75).
# Interop, both ways, on the same 5 servers and name: node-redlock
# (npm redlock 4.2.0, with redis 3.1.2) and @sesamecare-oss/redlock
# 1.4.0 (with ioredis 5), installed by npm into this test's build
# directory (scripts/install-deps puts them in npm's cache).
. "$top_srcdir/tests/cli-lock-lib.sh"

N=5
port=() pid=() U=()
for i in $(seq 0 $((N - 1))); do
  rlk_redis_start "s$i" "$work" || die "could not start server $i"
  port[i]=$RLK_REDIS_PORT pid[i]=$RLK_REDIS_PID
  U+=(-u "redis://127.0.0.1:${port[i]}")
done
R() { redis-cli -p "${port[$1]}" "${@:2}"; }
# holding KEY TOKEN: on how many servers KEY holds TOKEN
holding() {
  local i n=0
  for i in $(seq 0 $((N - 1))); do [ "$(R "$i" GET "$1")" = "$2" ] && n=$((n + 1)); done
  echo "$n"
}
exists_on() {
  local i n=0
  for i in $(seq 0 $((N - 1))); do n=$((n + $(R "$i" EXISTS "$1"))); done
  echo "$n"
}
# gone KEY: waits (5 s at most) until no server has KEY, and says on how
# many it is left: a release returns once a majority released it, the
# others' releases, written with theirs, are executed soon after.
none_on() { [ "$(exists_on "$1")" = 0 ]; }
gone() { wait_until 5 none_on "$1"; exists_on "$1"; }

check "--redlock with 2 servers" 64 '' 'odd number' -- --redlock "${U[@]:0:4}" run r -- true
check "--redlock with 4 servers" 64 '' 'odd number' -- --redlock "${U[@]:0:8}" run r -- true
check "--redlock with 1 server" 64 '' 'odd number' -- --redlock "${U[@]:0:2}" run r -- true
check "list under --redlock" 64 '' 'not --redlock' -- --redlock "${U[@]}" list
check "break under --redlock" 64 '' 'not --redlock' -- --redlock "${U[@]}" break r
check "rate under --redlock" 64 '' 'not --redlock' -- --redlock "${U[@]}" rate r --rate 1/s -- true
expect_eq "nothing was written" "$(exists_on r)" 0

# run: the command sees the token, which every server holds.
cat >"$work/show.sh" <<'EOF'
echo "$RESPLOCK_TOKEN"
shift
for p in "$@"; do redis-cli -p "$p" GET "$RESPLOCK_NAME"; done
EOF
check "run: held on every server" 0 '^rlk:' '' -- --redlock "${U[@]}" run r1 -- \
  sh "$work/show.sh" x "${port[@]}"
tok=$(head -n 1 "$work/out")
expect_range "one token, on a majority or more when the command ran" \
  "$(( $(grep -cxF -- "$tok" "$work/out") - 1 ))" 3 $N
expect_eq "no other value on any server" "$(grep -cvxF -e "$tok" -e '' "$work/out")" 0
expect_eq "released on all after run" "$(gone r1)" 0

# Held by an acquire: another run is busy; status and ping.
check "acquire" 0 '^rlk:[0-9a-f]{32}[^ ]* [0-9]+$' '' -- --redlock "${U[@]}" acquire -t 60s r2
read -r tok fence <"$work/out"
# On a majority at least; the others answered within the grace, unless
# the machine is slow enough that a try was not even written.
k=$(holding r2 "$tok")
expect_range "acquired on a majority or more" "$k" 3 $N
check "a second run -n: busy, exit 1" 1 '' '' -- --redlock "${U[@]}" run -n r2 -- touch "$work/ran"
[ -e "$work/ran" ] && bad "the busy run ran its command" || ok "the busy run did not run its command"
check "status: on $k of 5" 0 "servers: held on $k of 5" '' -- --redlock "${U[@]}" status r2
expect_eq "status: each server named, held there" "$(grep -cE "^  127\.0\.0\.1:[0-9]+ +held, ttl [0-9]+ ms$" "$work/out")" "$k"
expect_eq "status: the others free" "$(grep -cE "^  127\.0\.0\.1:[0-9]+ +free$" "$work/out")" $((N - k))
expect_match "status: the holder's facts" "$(cat "$work/out")" "holder: host .*, pid [0-9]+"
check "status --json" 0 "\"servers\":5,\"answered\":5,\"held_on\":$k" '' -- --redlock "${U[@]}" status --json r2
check "extend by token" 0 '' '' -- --redlock "${U[@]}" extend r2 "$tok" 120s
n=0; for i in 0 1 2 3 4; do [ "$(R "$i" PTTL r2)" -gt 100000 ] && n=$((n + 1)); done
expect_eq "extended where it is held" "$n" "$k"
check "release by token" 0 '' '' -- --redlock "${U[@]}" release r2 "$tok"
expect_eq "released on all 5" "$(gone r2)" 0
check "ping: each server" 0 'answer: +5 of 5 servers' '' -- --redlock "${U[@]}" ping
expect_eq "ping lists the 5" "$(grep -c ' RESP[23], ' "$work/out")" $N

# 2 of 5 down: still a majority.
rlk_redis_kill "${pid[1]}"; rlk_redis_kill "${pid[3]}"
check "2 of 5 down: run" 0 '' '' -- --redlock "${U[@]}" run -n r3 -- true
check "ping: 3 of 5 answer" 0 'answer: +3 of 5 servers' '' -- --redlock "${U[@]}" ping
check "status with 2 of 5 down: the servers down named" 1 "127\.0\.0\.1:${port[1]} +connect .*refused" '' \
  -- --redlock "${U[@]}" status r3
# 3 of 5 down: no quorum, exit 69 at once, the servers named.
rlk_redis_kill "${pid[0]}"
start=$(now_ms)
check "3 of 5 down: run -n, exit 69" 69 '' "no quorum.*127\.0\.0\.1:${port[0]}.*127\.0\.0\.1:${port[1]}.*127\.0\.0\.1:${port[3]}" \
  -- --redlock -T 20s "${U[@]}" run -n r3 -- touch "$work/ran"
took=$(( $(now_ms) - start ))
expect_range "3 down: ended without waiting out -T 20s" "$took" 0 "$(bound 5000 15000)"
[ -e "$work/ran" ] && bad "the command ran without a majority" || ok "the command did not run"
start=$(now_ms)
check "3 of 5 down: run -w 1s, exit 69 at its end" 69 '' 'no quorum' \
  -- --redlock "${U[@]}" run -w 1s r3 -- true
took=$(( $(now_ms) - start ))
expect_range "the wait was waited" "$took" 900 "$(bound 5000 15000)"
check "ping: 2 of 5 answer, exit 69" 69 'answer: +2 of 5 servers' 'no majority' -- --redlock "${U[@]}" ping
# Back, each on a new free port (its old one may have been taken
# meanwhile as some connection's local port): the -u list follows.
for i in 0 1 3; do
  rlk_redis_start "s$i-again" "$work" || die "server $i did not come back"
  port[i]=$RLK_REDIS_PORT pid[i]=$RLK_REDIS_PID
done
U=()
for i in $(seq 0 $((N - 1))); do U+=(-u "redis://127.0.0.1:${port[i]}"); done

# One frozen: the others answer, the acquire does not wait for it.
kill -STOP "${pid[2]}"
start=$(now_ms)
check "one frozen: run" 0 '' '' -- --redlock -T 20s "${U[@]}" run -n r4 -- true
took=$(( $(now_ms) - start ))
expect_range "one frozen: not held up by it (-T 20s)" "$took" 0 "$(bound 5000 15000)"
kill -CONT "${pid[2]}"
wait_until 5 test "$(R 2 PING)" = PONG || bad "server 2 did not come back from SIGSTOP"
R 2 DEL r4 >/dev/null

# Restarted empty under a running command: taken again, same token.
bg "$work/bg.out" "$work/bg.err" --redlock "${U[@]}" -v run -t 2s r5 -- \
  sh -c 'echo "$RESPLOCK_TOKEN" >"$1/tok"; until [ -e "$1/go" ]; do sleep 0.05; done' sh "$work"
rp=$BGPID
wait_until $((5 * SLOW)) test -s "$work/tok" || bad "the command did not start"
tok=$(cat "$work/tok")
rlk_redis_restart s4 "$work" "${port[4]}" "${pid[4]}" || die "server 4 did not come back"
pid[4]=$RLK_REDIS_PID
retaken() { [ "$(R 4 GET r5)" = "$tok" ]; }
wait_until $((5 * SLOW)) retaken && ok "restarted empty: taken again with the same token" ||
  bad "restarted empty: not taken again" "$(tail -n 3 "$work/bg.err")"
expect_eq "held on all 5 again" "$(holding r5 "$tok")" $N
check "status of the run: its command, on 5 of 5" 0 'command: +sh -c' '' -- --redlock "${U[@]}" status r5
expect_match "status of the run: on 5 of 5" "$(cat "$work/out")" 'held on 5 of 5'
touch "$work/go"
reap "$rp" $((10 * SLOW))
expect_eq "the command was not stopped: exit 0" "$CODE" 0
expect_eq "released after it" "$(gone r5)" 0

# Its keys deleted on 3 servers: lost, the command stopped (75).
rm -f "$work/tok" "$work/go"
bg "$work/bg.out" "$work/bg.err" --redlock "${U[@]}" run -t 2s r6 -- \
  sh -c 'echo "$RESPLOCK_TOKEN" >"$1/tok"; sleep 30' sh "$work"
rp=$BGPID
wait_until $((5 * SLOW)) test -s "$work/tok" || bad "the command did not start"
for i in 0 1 2; do R "$i" DEL r6 >/dev/null; done
reap "$rp" $((10 * SLOW))
expect_eq "a majority lost: the command stopped, exit 75" "$CODE" 75
expect_match "it says so" "$(cat "$work/bg.err")" "lost"

# ---- interop ----
node_dir="$top_builddir/tests/node-redlock-quorum"
if [ ! -d "$node_dir/node_modules/@sesamecare-oss/redlock" ]; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --prefer-offline --no-audit --no-fund --loglevel=error \
    redlock@4.2.0 redis@3.1.2 @sesamecare-oss/redlock@1.4.0 ioredis@5 >"$work/npm.log" 2>&1 ||
    bad "npm install into $node_dir failed (scripts/install-deps)" "$(tail -n 5 "$work/npm.log")"
fi
# node.js MODE NAME PORTS...: MODE "try": one attempt, prints "got" or
# "busy"; "hold": acquires, prints "held", holds until the file NAME.go
# exists (in $work), releases and prints "released".
cat >"$work/nr.js" <<'EOF'
const [lib, mode, name, dir, ...ports] = process.argv.slice(2);
const fs = require("fs");
let redlock, clients, lock;
if (lib === "node-redlock") {
  const redis = require("redis");
  const Redlock = require("redlock");
  clients = ports.map((p) => redis.createClient({ host: "127.0.0.1", port: Number(p) }));
  redlock = new Redlock(clients, { retryCount: 0 });
  redlock.on("clientError", () => {});
} else {
  const Redis = require("ioredis");
  const { Redlock } = require("@sesamecare-oss/redlock");
  clients = ports.map((p) => new Redis({ host: "127.0.0.1", port: Number(p) }));
  // A connection reset while quitting is no result of the test's.
  clients.forEach((c) => c.on("error", () => {}));
  redlock = new Redlock(clients, { retryCount: 0 });
}
const take = (ttl) => (lib === "node-redlock" ? redlock.lock(name, ttl) : redlock.acquire([name], ttl));
const give = (l) => (lib === "node-redlock" ? l.unlock() : l.release());
const end = () => { clients.forEach((c) => c.quit()); };
(async () => {
  try {
    lock = await take(30000);
  } catch (e) {
    console.log("busy");
    end();
    return;
  }
  if (mode === "try") {
    console.log("got");
    await give(lock);
    end();
    return;
  }
  console.log("held " + lock.value);
  const t0 = Date.now();
  while (!fs.existsSync(dir + "/" + name + ".go") && Date.now() - t0 < 30000)
    await new Promise((r) => setTimeout(r, 20));
  await give(lock);
  console.log("released");
  end();
})().catch((e) => { console.log("error " + e); process.exit(2); });
EOF
for lib in node-redlock sesamecare; do
  name="ri-$lib"
  NODE_PATH="$node_dir/node_modules" node "$work/nr.js" "$lib" hold "$name" "$work" "${port[@]}" \
    >"$work/$lib.out" 2>"$work/$lib.err" &
  np=$!
  BG_PIDS+=("$np")
  wait_until $((10 * SLOW)) grep -q '^held' "$work/$lib.out" ||
    bad "$lib did not take the lock" "$(cat "$work/$lib.out" "$work/$lib.err" | tail -n 5)"
  val=$(sed -n 's/^held //p' "$work/$lib.out")
  expect_eq "$lib holds it on all 5" "$(holding "$name" "$val")" $N
  check "$lib holds it: resplock --redlock is busy" 1 '' '' -- --redlock "${U[@]}" run -n "$name" -- true
  touch "$work/$name.go"
  wait_until $((10 * SLOW)) grep -q '^released' "$work/$lib.out" || bad "$lib did not release"
  wait "$np" 2>/dev/null
  # resplock holds it: the other library is refused, then gets it after.
  res=$($RLK_WRAP "$bin" --redlock "${U[@]}" run "$name" -- \
        env NODE_PATH="$node_dir/node_modules" node "$work/nr.js" "$lib" try "$name" "$work" "${port[@]}" \
        2>"$work/$lib.err")
  expect_eq "resplock holds it: $lib is refused" "$res" busy
  res=$(NODE_PATH="$node_dir/node_modules" node "$work/nr.js" "$lib" try "$name" "$work" "${port[@]}" \
        2>"$work/$lib.err")
  expect_eq "after resplock's release: $lib gets it" "$res" got
  expect_eq "$lib: nothing left" "$(gone "$name")" 0
done
finish
