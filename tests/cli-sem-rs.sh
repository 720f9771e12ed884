#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# sem run and sem status in redis-semaphore's layout (--layout
# redis-semaphore), against redis-semaphore 5.8.0's Semaphore and
# MultiSemaphore (tests/sem-rs.js, over ioredis 5) on the same names, on
# one server and on the 3-primary Cluster:
#   (1) resplock holds 2 of 2 permits: redis-semaphore's tryAcquire is
#       refused; once resplock released (its members gone), it succeeds;
#   (2) a MultiSemaphore holds 2 of 3: resplock's -k 2 is refused, its
#       -k 1 runs (and then a Semaphore is refused the last one);
#   (3) a redis-semaphore holder that stopped refreshing (the key kept
#       alive by another holder): resplock is refused just after it took
#       the permit, and gets it once the lockTimeout passed, not before;
#   (4) resplock's watchdog keeps its permit past 3 lockTimeouts:
#       redis-semaphore is refused all along;
#   (5) a resplock waiter (it polls: its tries are counted) gets the
#       permit soon after redis-semaphore released it, not before;
#   (6) on the Cluster, both ways, on a name whose key semaphore:NAME is
#       served by another node than {NAME}'s slot; status reads the
#       node of semaphore:NAME's slot, and no call is MOVED.
# Also the usage rules of the layout: the TTL is --lock-timeout,
# --hold-min no longer than it.
#
# node and redis-semaphore are needed (the test fails without them):
# npm installs redis-semaphore@5.8.0 and ioredis@5 into this test's build
# directory (tests/node-sem) when missing; scripts/install-deps puts them
# in npm's cache, so that needs no network.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"

command -v node >/dev/null 2>&1 || die "node is missing (scripts/install-deps installs it)"
node_dir="$top_builddir/tests/node-sem"
if [ ! -f "$node_dir/node_modules/redis-semaphore/package.json" ]; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --prefer-offline --no-audit --no-fund --loglevel=error \
    redis-semaphore@5.8.0 ioredis@5 >"$work/npm.log" 2>&1 ||
    die "npm install redis-semaphore@5.8.0 ioredis@5 into $node_dir failed (scripts/install-deps)" \
      "$(tail -n 5 "$work/npm.log")"
fi
js="$top_srcdir/tests/sem-rs.js"
N() { env NODE_PATH="$node_dir/node_modules" node "$js" "$@"; }
# N in the background, in a process group of its own (killed on exit).
Nbg() {
  local out=$1; shift
  setsid env NODE_PATH="$node_dir/node_modules" node "$js" "$@" </dev/null >"$out" 2>&1 &
  BGPID=$!
  BG_PIDS+=("$BGPID")
}
RS=(--layout redis-semaphore)
# let_go DIR PID WHAT: the holder in DIR lets go; PID (it) exits 0.
let_go() {
  touch "$1/go"
  reap "$2" $((10 * SLOW))
  expect_eq "$3 exits 0" "$CODE" 0
}

rlk_redis_start semrs "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
expect_eq "redis-semaphore runs (a try on a free semaphore)" "$(N "$port" try free 1 1 5000)" 1

# ---------------------------------------------------------------- usage
check "the TTL is --lock-timeout: --ttl otherwise is refused" 64 '' 'TTL is --lock-timeout' -- \
  -u "$url" sem run u -p 1 "${RS[@]}" --lock-timeout 2s --ttl 3s -- true
check "--hold-min longer than --lock-timeout is refused" 64 '' 'hold-min must not be longer' -- \
  -u "$url" sem run u -p 1 "${RS[@]}" --lock-timeout 2s --hold-min 3s -- true
expect_eq "nothing was written" "$(R DBSIZE)" 0

# ------------------------------------------- (1) resplock holds 2 of 2
mkdir -p "$work/one"
bg "$work/one.out" "$work/one.err" -u "$url" sem run one -p 2 -k 2 "${RS[@]}" --lock-timeout 5s -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/one"
wait_until $((10 * SLOW)) test -e "$work/one/ready" || bad "(1) the holder did not start" "$(cat "$work/one.err")"
expect_eq "(1) resplock's 2 permits are 2 members of semaphore:one" "$(R ZCARD semaphore:one)" 2
expect_match "(1) ... named TOKEN_0, TOKEN_1 as a MultiSemaphore's" "$(R ZRANGE semaphore:one 0 -1 | tr '\n' ' ')" \
  '^rlk:[0-9a-f]+_0 rlk:[0-9a-f]+_1 $'
expect_eq "(1) redis-semaphore's Semaphore (limit 2) is refused" "$(N "$port" try one 2 1 5000)" 0
check "(1) status: the holder and its age" 0 \
  '^holder:  rlk:[0-9a-f]+: 2 permits, ttl [0-9]+ ms, age [0-9]+ ms$' '' -- \
  -u "$url" sem status one "${RS[@]}" --lock-timeout 5s
let_go "$work/one" "$BGPID" "(1) the holder's run"
expect_eq "(1) released: its members are gone" "$(R ZCARD semaphore:one)" 0
expect_eq "(1) ... redis-semaphore's Semaphore gets a permit" "$(N "$port" try one 2 1 5000)" 1

# ------------------------------- (2) a MultiSemaphore holds 2 of 3
mkdir -p "$work/two"
Nbg "$work/two.out" "$port" hold two 3 2 5000 "$work/two"
nodepid=$BGPID
wait_until $((10 * SLOW)) test -e "$work/two/held" || bad "(2) the MultiSemaphore did not take 2" "$(cat "$work/two.out")"
check "(2) resplock -k 2 of 3 is refused" 1 '' '' -- \
  -u "$url" sem run two -p 3 -k 2 -n "${RS[@]}" --lock-timeout 5s -- true
check "(2) resplock -k 1 of 3 runs (and then a Semaphore is refused the last)" 0 '^in 0$' '' -- \
  -u "$url" sem run two -p 3 -n "${RS[@]}" --lock-timeout 5s -- \
  sh -c 'echo "in $(env NODE_PATH="$1" node "$2" "$3" try two 3 1 5000)"' sh "$node_dir/node_modules" "$js" "$port"
check "(2) status: the MultiSemaphore's 2 members are one holder of 2" 0 \
  '^holder:  [0-9a-f-]{36}: 2 permits, ttl [0-9]+ ms, age [0-9]+ ms$' '' -- \
  -u "$url" sem status two "${RS[@]}" --lock-timeout 5s
let_go "$work/two" "$nodepid" "(2) the MultiSemaphore's release"
check "(2) then resplock -k 2 of 3 runs" 0 '' '' -- \
  -u "$url" sem run two -p 3 -k 2 -n "${RS[@]}" --lock-timeout 5s -- true

# --------------- (3) a redis-semaphore holder that stopped refreshing
# A resplock holder keeps the key alive meanwhile (its renewals raise the
# key's expiry): the stopped holder's member must be pruned by its score,
# not go with the whole key.
lt=2000
mkdir -p "$work/three"
bg "$work/three.out" "$work/three.err" -u "$url" sem run three -p 2 "${RS[@]}" --lock-timeout 2s -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/three"
keeper=$BGPID
wait_until $((10 * SLOW)) test -e "$work/three/ready" || bad "(3) the keeper did not start" "$(cat "$work/three.err")"
t_take=$(N "$port" take three 2 1 $lt)
expect_gt "(3) redis-semaphore took the permit and stopped" "$t_take" 0
check "(3) just after, resplock is refused" 1 '' '' -- \
  -u "$url" sem run three -p 2 -n "${RS[@]}" --lock-timeout 2s -- true
expect_range "(3) ... that refusal came within the lockTimeout (ms after the take)" \
  "$(( $(now_ms) - t_take ))" 0 $((lt - 1))
took3() { "$bin" -q -u "$url" sem run three -p 2 -n "${RS[@]}" --lock-timeout 2s -- true </dev/null >/dev/null 2>&1; }
if wait_until $((10 * SLOW)) took3; then
  expect_range "(3) resplock got it once the lockTimeout passed, not before (ms after the take)" \
    "$(( $(now_ms) - t_take ))" $lt $((lt + 3000 * SLOW))
else
  bad "(3) the permit of the holder that stopped never came"
fi
let_go "$work/three" "$keeper" "(3) the keeper's run"

# ------------------ (4) resplock's watchdog past 3 lockTimeouts
mkdir -p "$work/four"
bg "$work/four.out" "$work/four.err" -u "$url" sem run four -p 1 "${RS[@]}" --lock-timeout 1s -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/four"
wait_until $((10 * SLOW)) test -e "$work/four/ready" || bad "(4) the holder did not start" "$(cat "$work/four.err")"
t0=$(now_ms) tries=0 got=0
while [ $(( $(now_ms) - t0 )) -lt 3500 ]; do
  r=$(N "$port" try four 1 1 1000)
  tries=$((tries + 1))
  [ "$r" = 0 ] || got=$((got + 1))
done
expect_eq "(4) redis-semaphore refused in every try over 3.5 lockTimeouts ($tries tries)" "$got" 0
expect_range "(4) ... tries made" "$tries" 3 100000
let_go "$work/four" "$BGPID" "(4) the holder's run (never lost)"

# --------------- (5) a resplock waiter, after redis-semaphore's release
mkdir -p "$work/five"
Nbg "$work/five.out" "$port" hold five 1 1 5000 "$work/five"
nodepid=$BGPID
wait_until $((10 * SLOW)) test -e "$work/five/held" || bad "(5) redis-semaphore did not take it" "$(cat "$work/five.out")"
calls() { R INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\(eval\|evalsha\|fcall\):calls=\([0-9]*\).*/\2/p' |
          awk '{ n += $1 } END { print n + 0 }'; }
bg "$work/five.rl" "$work/five.err" -v -u "$url" sem run five -p 1 -w 20s "${RS[@]}" --lock-timeout 5s -- \
  sh -c 'date +%s%3N >"$1/got"' sh "$work/five"
rlpid=$BGPID
wait_until $((10 * SLOW)) grep -q 'within the wait' "$work/five.err" || bad "(5) the waiter did not start" "$(cat "$work/five.err")"
c0=$(calls)
polled() { [ $(( $(calls) - c0 )) -ge 10 ]; }
wait_until $((5 * SLOW)) polled || bad "(5) the waiter does not poll (tries: $(( $(calls) - c0 )))"
if [ -e "$work/five/got" ]; then bad "(5) the waiter got the permit while redis-semaphore held it"
else ok "(5) the waiter polls and has not got it while redis-semaphore holds it"; fi
touch "$work/five/go"
reap "$nodepid" $((10 * SLOW))
reap "$rlpid" $((10 * SLOW))
expect_eq "(5) the waiter's run exits 0" "$CODE" 0
if [ -e "$work/five/got" ] && [ -e "$work/five/released" ]; then
  expect_range "(5) it got the permit soon after the release (ms)" \
    "$(( $(cat "$work/five/got") - $(cat "$work/five/released") ))" 0 $((500 * SLOW))
else
  bad "(5) no time of the release or of the grant"
fi

# --------------------------------------------------------------- cluster
rlk_cluster_start "$work/cluster" || die "could not start the cluster"
cport=${RLK_CLUSTER_PORTS[0]}
curl="redis://127.0.0.1:$cport"
C() { redis-cli -c -p "$cport" "$@"; }
# A name whose semaphore:NAME is on another node than {NAME}'s slot.
cname=
for n in a b c d e f g h i j k l m n o p; do
  if [ "$(rlk_cluster_owner "$(C CLUSTER KEYSLOT "semaphore:$n")")" != \
       "$(rlk_cluster_owner "$(C CLUSTER KEYSLOT "$n")")" ]; then cname=$n; break; fi
done
[ -n "$cname" ] || die "cluster: no name with its key on another node than its tag"
slot=$(C CLUSTER KEYSLOT "semaphore:$cname")
mkdir -p "$work/c1"
bg "$work/c1.out" "$work/c1.err" -u "$curl" sem run "$cname" -p 2 -k 2 "${RS[@]}" --lock-timeout 5s -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/c1"
wait_until $((10 * SLOW)) test -e "$work/c1/ready" || bad "(6) cluster: the holder did not start" "$(cat "$work/c1.err")"
expect_eq "(6) cluster: the members are in semaphore:$cname" "$(C ZCARD "semaphore:$cname")" 2
expect_eq "(6) cluster: redis-semaphore (a Cluster client) is refused" "$(N "c:$cport" try "$cname" 2 1 5000)" 0
check "(6) cluster: status reads the node of semaphore:NAME's slot" 0 \
  "^node:    127\\.0\\.0\\.1:[0-9]+ \\(slot $slot\\)\$" '' -- -u "$curl" sem status "$cname" "${RS[@]}" --lock-timeout 5s
let_go "$work/c1" "$BGPID" "(6) cluster: the holder"
mkdir -p "$work/c2"
Nbg "$work/c2.out" "c:$cport" hold "$cname" 3 2 5000 "$work/c2"
nodepid=$BGPID
wait_until $((10 * SLOW)) test -e "$work/c2/held" || bad "(6) cluster: the MultiSemaphore did not take 2" "$(cat "$work/c2.out")"
check "(6) cluster: resplock -k 2 of 3 is refused" 1 '' '' -- \
  -u "$curl" sem run "$cname" -p 3 -k 2 -n "${RS[@]}" --lock-timeout 5s -- true
check "(6) cluster: resplock -k 1 of 3 runs" 0 '^ran$' '' -- \
  -u "$curl" sem run "$cname" -p 3 -n "${RS[@]}" --lock-timeout 5s -- echo ran
let_go "$work/c2" "$nodepid" "(6) cluster: the MultiSemaphore's release"
expect_eq "(6) cluster: redis-semaphore gets a permit again" "$(N "c:$cport" try "$cname" 1 1 5000)" 1
# resplock's calls went to semaphore:NAME's node from the first (a MOVED
# is answered to a call sent by another slot; redis-cli -c and ioredis
# asked by the key's slot too).
moved=0
for i in 0 1 2 3 4 5; do
  n=$(redis-cli -p "${RLK_CLUSTER_PORTS[$i]}" INFO errorstats 2>/dev/null | tr -d '\r' |
      sed -n 's/^errorstat_MOVED:count=\([0-9]*\).*/\1/p')
  moved=$((moved + ${n:-0}))
done
expect_eq "(6) cluster: no call was MOVED" "$moved" 0
rlk_cluster_stop
finish
