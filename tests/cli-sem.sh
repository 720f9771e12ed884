#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock sem run and sem status, on one server and on the 3-primary
# Cluster (given node 0's URL alone):
#   - usage errors (no -p, -k more than -p, a layout not known, the
#     replicas' options), nothing written;
#   - COMMAND's exit code and environment (RESPLOCK_PERMITS, a fence that
#     grows); status while held and after;
#   - 2 permits among 5 jobs started at once with -n: exactly 2 run, 3
#     skip (exit 1); among 5 that wait: all run, never more than 2 at
#     once (their start and end times logged by one clock);
#   - a holder killed with kill -9 (resplock and its job): its permit is
#     not free at once, and comes back once its TTL passed, not before;
#   - a holder stopped (SIGSTOP) past its TTL: its job is stopped by the
#     supervisor before the permit's validity ends, the permit goes to
#     another, and continued it exits 75;
#   - the size lowered while a permit is held: the holder keeps it, a new
#     run waits for it;
#   - --hold-min keeps the permit for what is left of it (its TTL set so);
#   - status NAME, list and break know semaphores (break gives every
#     holder's permits back; the holder's run exits 75).
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"

rlk_redis_start sem "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }

# ---------------------------------------------------------------- usage
check "-p is needed" 64 '' '-p PERMITS' -- -u "$url" sem run s -- true
check "-k more than -p" 64 '' 'more than the 2 permits' -- -u "$url" sem run s -p 2 -k 3 -- true
check "a layout not known" 64 '' 'bad --layout' -- -u "$url" sem run s -p 2 --layout x -- true
check "-p 0" 64 '' 'bad --permits' -- -u "$url" sem run s -p 0 -- true
check "no --replicas" 64 '' 'no --replicas' -- -u "$url" sem run s -p 1 --replicas 1 -- true
check "a command is needed" 64 '' 'COMMAND' -- -u "$url" sem run s -p 1
check "sem alone" 64 '' 'usage' -- -u "$url" sem
expect_eq "nothing was written" "$(R DBSIZE)" 0

# --------------------------------------------------------------- basics
check "COMMAND's exit code is sem run's" 5 '' '' -- -u "$url" sem run s -p 2 -- sh -c 'exit 5'
check "COMMAND's environment" 0 '^s 2 [0-9]+ rlk:[0-9a-f]+$' '' -- -u "$url" sem run s -p 3 -k 2 -- \
  sh -c 'echo "$RESPLOCK_NAME $RESPLOCK_PERMITS $RESPLOCK_FENCE $RESPLOCK_TOKEN"'
f1=$(awk '{print $3}' "$work/out")
check "a second run" 0 '' '' -- -u "$url" sem run s -p 3 -- sh -c 'echo "$RESPLOCK_FENCE"'
expect_gt "the fence grows from run to run" "$(cat "$work/out")" "$f1"
check "status of a semaphore nobody holds: exit 1" 1 '^waiting: 0$' '' -- -u "$url" sem status s

mkdir -p "$work/held"
bg "$work/held.out" "$work/held.err" -u "$url" sem run held -p 3 -k 2 -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/held"
wait_until $((10 * SLOW)) test -e "$work/held/ready" || bad "the holder did not start" "$(cat "$work/held.err")"
check "status while held: exit 0" 0 '^permits: 3 \(2 held, 1 free\)$' '' -- -u "$url" sem status held
expect_match "... the holder, with its facts" "$(cat "$work/out")" \
  "^holder:  rlk:[0-9a-f]+: 2 permits, ttl [0-9]+ ms, fence [0-9]+; host $(hostname), pid [0-9]+, since"
check "status --json" 0 '"permits":3,"used":2,"holders":\[\{"token":' '' -- -u "$url" sem status held --json
check "status NAME of a semaphore (no lock of that name): the semaphore's" 0 \
  '^permits: 3 \(2 held, 1 free\)$' '' -- -u "$url" status held
check "list names the semaphore" 0 '^held  semaphore  2 of 3 permits held, 1 holder  waiting 0$' '' \
  -- -u "$url" list
check "list PATTERN: a semaphore that does not match is not listed" 1 '' '' -- -u "$url" list 'x*'
check "list --json" 0 '^\{"name":"held","exists":true,"permits":3,"used":2' '' -- -u "$url" list --json
check "-k 2 more does not fit: exit 1 at once" 1 '' '' -- -u "$url" sem run held -p 3 -k 2 -n -- true
check "... -k 1 does" 0 '^fits$' '' -- -u "$url" sem run held -p 3 -n -- echo fits
# The size lowered to 1 while 2 are held: the holder keeps them.
check "the size lowered below what is held: a new run waits" 1 '' '' -- \
  -u "$url" sem run held -p 1 -n -- true
check "... the holder still has its 2" 0 '\(2 held, 0 free\)$' '' -- -u "$url" sem status held
touch "$work/held/go"
reap "$BGPID" $((10 * SLOW))
expect_eq "the holder's run exits 0" "$CODE" 0
check "released: nothing held" 1 '' '' -- -u "$url" sem status held

# ------------------------------------------------------------- --hold-min
check "--hold-min: the job ends at once" 0 '' '' -- -u "$url" sem run hm -p 1 --hold-min 3s -- true
t0=$(now_ms)
check "--hold-min: the permit is kept after the job" 1 '' '' -- -u "$url" sem run hm -p 1 -n -- true
check "... for what is left of --hold-min, not the TTL" 0 'ttl ([0-9]{1,3}|[12][0-9]{3}|30[0-9]{2}) ms' '' \
  -- -u "$url" sem status hm
hm_free() { "$bin" -q -u "$url" sem run hm -p 1 -n -- true </dev/null >/dev/null 2>&1; }
if wait_until 10 hm_free; then
  expect_range "... then it is free (ms after the job)" "$(( $(now_ms) - t0 ))" 1000 4500
else
  bad "--hold-min: the permit never came back"
fi

# ---------------------------------------------------------------- break
mkdir -p "$work/brk"
bg "$work/brk.out" "$work/brk.err" -u "$url" sem run brk -p 2 -t 3s -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; exec sleep 60' sh "$work/brk"
wait_until $((10 * SLOW)) test -e "$work/brk/ready" || bad "the broken holder did not start"
check "break of a semaphore gives its holder's permits back, naming it" 0 \
  "^broke 1 permit of 'brk', held by rlk:[0-9a-f]+; host $(hostname), pid [0-9]+, since .*, command sh -c" '' \
  -- -u "$url" break brk
check "... nothing held after it" 1 '\(0 held, 2 free\)$' '' -- -u "$url" sem status brk
reap "$BGPID" $((10 * SLOW))
expect_eq "... its holder finds them lost: exit 75" "$CODE" 75
check "break again: none held, exit 1" 1 "^'brk' has no permit held" '' -- -u "$url" break brk

# ------------------------------------------ 2 permits among 5 jobs (-n)
mkdir -p "$work/five"
pids=()
for i in 1 2 3 4 5; do
  bg "$work/five/$i.out" "$work/five/$i.err" -u "$url" sem run five -p 2 -n -- \
    sh -c 'd=$1; touch "$d/started.$2"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/five" "$i"
  pids+=("$BGPID")
done
# Those that skip exit at once; the two that run wait for "go".
ended() { local n=0 p; for p in "${pids[@]}"; do running "$p" || n=$((n + 1)); done; [ "$n" -ge 3 ]; }
wait_until $((20 * SLOW)) ended || bad "three of five did not skip"
started=$(ls "$work/five" | grep -c '^started')
expect_eq "2 permits, 5 jobs started together with -n: 2 run" "$started" 2
touch "$work/five/go"
codes=()
for p in "${pids[@]}"; do reap "$p" $((10 * SLOW)); codes+=("$CODE"); done
expect_eq "... and 3 skip with exit 1" "$(printf '%s\n' "${codes[@]}" | sort | tr '\n' ' ')" "0 0 1 1 1 "

# ------------------------------------- 2 permits among 5 jobs that wait
mkdir -p "$work/wait"
pids=()
for i in 1 2 3 4 5; do
  bg "$work/wait/$i.out" "$work/wait/$i.err" -u "$url" sem run queue -p 2 -w 60s -- \
    sh -c 'echo "start $(date +%s%N)" >>"$1/log"; sleep 0.3; echo "end $(date +%s%N)" >>"$1/log"' \
    sh "$work/wait"
  pids+=("$BGPID")
done
codes=()
for p in "${pids[@]}"; do reap "$p" $((60 * SLOW)); codes+=("$CODE"); done
expect_eq "5 jobs that wait for 2 permits all run" "$(printf '%s' "${codes[@]}")" "00000"
most=$(sort -k2,2n "$work/wait/log" | awk '$1 == "start" { n++; if (n > m) m = n } $1 == "end" { n-- } END { print m }')
expect_range "... never more than 2 at once" "$most" 1 2
expect_eq "... 5 starts logged" "$(grep -c start "$work/wait/log")" 5

# ------------------------------------------------- a holder killed -9
mkdir -p "$work/k9"
bg "$work/k9.out" "$work/k9.err" -u "$url" sem run k9 -p 1 -t 3s -- \
  sh -c 'echo $$ >"$1/ready"; exec sleep 100' sh "$work/k9"
wait_until $((10 * SLOW)) test -e "$work/k9/ready" || bad "the k9 holder did not start"
{ kill -s KILL -- "-$BGPID"; kill -s KILL "$BGPID"; wait "$BGPID"; } 2>/dev/null
kill -s KILL "$(cat "$work/k9/ready")" 2>/dev/null
t0=$(now_ms)
check "a holder killed -9: its permit is not free at once" 1 '' '' -- -u "$url" sem run k9 -p 1 -n -- true
took() { "$bin" -q -u "$url" sem run k9 -p 1 -n -- true </dev/null >/dev/null 2>&1; }
if wait_until 10 took; then
  # Renewed at least every third of the TTL: it expired no sooner than
  # two thirds of it after the kill.
  expect_range "... it comes back after its TTL, not before (ms after the kill)" \
    "$(( $(now_ms) - t0 ))" 1900 4500
else
  bad "... the permit never came back"
fi

# ---------------------------------------- a holder stopped past its TTL
mkdir -p "$work/st"
bg "$work/st.out" "$work/st.err" -u "$url" sem run st -p 1 -t 2s -- \
  sh -c 'echo $$ >"$1/ready"; while :; do date +%s%3N >>"$1/hb"; sleep 0.05; done' sh "$work/st"
wait_until $((10 * SLOW)) test -e "$work/st/ready" || bad "the stopped holder did not start"
kill -s STOP "$BGPID"   # resplock alone: its supervisor stops the job
job=$(cat "$work/st/ready")
# Not kill -0: the job stays a zombie while resplock, its parent, is stopped.
alive() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "${st%% *}" != Z ]
}
wait_until $((5 * SLOW)) eval '! alive '"$job" || bad "SIGSTOP: the job was not stopped"
took_st() { "$bin" -q -u "$url" sem run st -p 1 -n -- true </dev/null >/dev/null 2>&1; }
wait_until 5 took_st || bad "SIGSTOP: the permit did not go to another"
t=$(now_ms)
last=$(tail -n 1 "$work/st/hb")
expect_range "SIGSTOP: no heartbeat of the job after another took the permit (ms before)" \
  "$(( t - last ))" 0 100000
expect_match "SIGSTOP: the supervisor says it stopped the job" "$(cat "$work/st.err")" \
  "supervisor: the lock was not renewed in time; stopping the job"
kill -s CONT "$BGPID"
reap "$BGPID" $((10 * SLOW))
expect_eq "SIGSTOP: continued, sem run exits 75" "$CODE" 75

# --------------------------------------------------------------- cluster
rlk_cluster_start "$work/cluster" || die "could not start the cluster"
curl="redis://127.0.0.1:${RLK_CLUSTER_PORTS[0]}"
for name in alpha beta gamma delta; do
  check "cluster: sem run $name" 0 "^$name [0-9]+\$" '' -- -u "$curl" sem run "$name" -p 2 -- \
    sh -c 'echo "$RESPLOCK_NAME $RESPLOCK_FENCE"'
done
mkdir -p "$work/cl"
bg "$work/cl.out" "$work/cl.err" -u "$curl" sem run gamma -p 1 -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/cl"
wait_until $((10 * SLOW)) test -e "$work/cl/ready" || bad "cluster: the holder did not start"
check "cluster: status names the node" 0 '^node:    127\.0\.0\.1:[0-9]+ \(slot [0-9]+\)$' '' -- \
  -u "$curl" sem status gamma
check "cluster: full" 1 '' '' -- -u "$curl" sem run gamma -p 1 -n -- true
touch "$work/cl/go"
reap "$BGPID" $((10 * SLOW))
expect_eq "cluster: the holder exits 0" "$CODE" 0
check "cluster: free again" 0 '' '' -- -u "$curl" sem run gamma -p 1 -n -- true
rlk_cluster_stop
finish
