#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock rw run, on one server and on the 3-primary Cluster:
#   - usage errors (no --read or --write, --replicas, --fair), nothing
#     written;
#   - COMMAND's exit code and environment (RESPLOCK_MODE, a fence that
#     grows);
#   - two --read jobs hold at once; a --write job is refused with -n
#     while they read, and one that waits starts only after both ended;
#     a waiting writer stops a later reader (it runs after the writer);
#   - a reader killed with kill -9 (resplock and its job): a writer is
#     not let in at once, and is once its TTL passed, not before;
#   - a holder stopped (SIGSTOP) past its TTL: its job is stopped by the
#     supervisor, the lock goes to another, and continued it exits 75.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"

rlk_redis_start rw "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }

# ---------------------------------------------------------------- usage
check "--read or --write is needed" 64 '' '--read or --write' -- -u "$url" rw run x -- true
check "no --replicas" 64 '' 'no --replicas' -- -u "$url" rw run x --read --replicas 1 -- true
check "no --fair" 64 '' 'no --replicas' -- -u "$url" rw run x --write --fair -- true
check "a command is needed" 64 '' 'COMMAND' -- -u "$url" rw run x --read
check "rw alone" 64 '' 'usage' -- -u "$url" rw
check "sem run takes no --read" 64 '' 'no --read' -- -u "$url" sem run x -p 1 --read -- true
check "run takes no --read" 64 '' '' -- -u "$url" run x --read -- true
expect_eq "nothing was written" "$(R DBSIZE)" 0

# --------------------------------------------------------------- basics
check "COMMAND's exit code is rw run's" 5 '' '' -- -u "$url" rw run x --write -- sh -c 'exit 5'
check "COMMAND's environment" 0 '^x read [0-9]+ rlk:[0-9a-f]+$' '' -- -u "$url" rw run x --read -- \
  sh -c 'echo "$RESPLOCK_NAME $RESPLOCK_MODE $RESPLOCK_FENCE $RESPLOCK_TOKEN"'
f1=$(awk '{print $3}' "$work/out")
check "a writer" 0 '^write ' '' -- -u "$url" rw run x --write -- sh -c 'echo "$RESPLOCK_MODE $RESPLOCK_FENCE"'
expect_gt "the fence grows from run to run" "$(awk '{print $2}' "$work/out")" "$f1"

# -------------------------------------- two readers; a writer waits
mkdir -p "$work/rd"
reader() { # $1: its tag
  bg "$work/rd/$1.out" "$work/rd/$1.err" -u "$url" rw run shared --read -- \
    sh -c 'd=$1; echo "start $2 $(date +%s%N)" >>"$d/log"; touch "$d/ready.$2"
           until [ -e "$d/go.$2" ]; do sleep 0.02; done; echo "end $2 $(date +%s%N)" >>"$d/log"' \
    sh "$work/rd" "$1"
}
reader a; ra=$BGPID
reader b; rb=$BGPID
both() { [ -e "$work/rd/ready.a" ] && [ -e "$work/rd/ready.b" ]; }
wait_until $((10 * SLOW)) both || bad "two readers do not hold at once" "$(cat "$work/rd/"*.err)"
ok "two --read jobs hold at once"
check "status NAME of a read-write lock: its holds" 0 '^rw:      2 reading, 0 writing$' '' -- -u "$url" status shared
expect_match "... each hold with its facts" "$(cat "$work/out")" \
  "hold:    rlk:[0-9a-f]+:[0-9a-f]{8}: read, ttl [0-9]+ ms, fence [0-9]+; host $(hostname), pid [0-9]+, since"
check "list names the read-write lock" 0 '^shared  rw  2 reading, 0 writing  waiting 0 \(0 writers\)$' '' \
  -- -u "$url" list
check "list --json" 0 '^\{"name":"shared","kind":"rw","readers":2' '' -- -u "$url" list --json
check "a writer with -n is refused while they read: exit 1" 1 '' '' -- -u "$url" rw run shared --write -n -- true
bg "$work/rd/w.out" "$work/rd/w.err" -u "$url" rw run shared --write -w 60s -- \
  sh -c 'echo "start w $(date +%s%N)" >>"$1/log"; sleep 0.2; echo "end w $(date +%s%N)" >>"$1/log"' sh "$work/rd"
rw_pid=$BGPID
inline() { [ "$(R HGETALL 'resplock:rw:{shared}' | grep -c '^q:')" = 1 ]; }
wait_until $((10 * SLOW)) inline || bad "the writer is not in line"
# A reader that comes after the waiting writer waits behind it.
check "a reader with -n is refused while a writer waits: exit 1" 1 '' '' -- -u "$url" rw run shared --read -n -- true
bg "$work/rd/c.out" "$work/rd/c.err" -u "$url" rw run shared --read -w 60s -- \
  sh -c 'echo "start c $(date +%s%N)" >>"$1/log"' sh "$work/rd"
rc_pid=$BGPID
inline2() { [ "$(R HGETALL 'resplock:rw:{shared}' | grep -c '^q:')" = 2 ]; }
wait_until $((10 * SLOW)) inline2 || bad "the later reader is not in line"
touch "$work/rd/go.a"
reap "$ra" $((10 * SLOW)); expect_eq "the first reader exits 0" "$CODE" 0
expect_eq "... the writer still waits for the second" "$(grep -c 'start w' "$work/rd/log")" 0
touch "$work/rd/go.b"
reap "$rb" $((10 * SLOW)); expect_eq "the second reader exits 0" "$CODE" 0
reap "$rw_pid" $((20 * SLOW)); expect_eq "the writer ran: exit 0" "$CODE" 0
reap "$rc_pid" $((20 * SLOW)); expect_eq "the later reader ran: exit 0" "$CODE" 0
order=$(sort -k3,3n "$work/rd/log" | awk '{printf "%s%s ", $1, $2}')
expect_match "the writer started after both readers ended, the later reader after the writer" \
  "$order" '^start[ab] start[ab] enda endb startw endw startc $'

# ---------------------------------------------------------------- break
mkdir -p "$work/brk"
bg "$work/brk.out" "$work/brk.err" -u "$url" rw run brk --write -t 3s -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; exec sleep 60' sh "$work/brk"
wait_until $((10 * SLOW)) test -e "$work/brk/ready" || bad "the broken holder did not start"
check "break of a read-write lock ends its hold, naming it" 0 \
  "^broke the write hold of 'brk', held by rlk:[0-9a-f]+:[0-9a-f]{8}; host $(hostname), pid [0-9]+, since" '' \
  -- -u "$url" break brk
check "... a writer comes in after it" 0 '' '' -- -u "$url" rw run brk --write -n -- true
reap "$BGPID" $((10 * SLOW))
expect_eq "... its holder finds it lost: exit 75" "$CODE" 75

# ------------------------------------------------- a reader killed -9
mkdir -p "$work/k9"
bg "$work/k9.out" "$work/k9.err" -u "$url" rw run k9 --read -t 3s -- \
  sh -c 'echo $$ >"$1/ready"; exec sleep 100' sh "$work/k9"
wait_until $((10 * SLOW)) test -e "$work/k9/ready" || bad "the k9 reader did not start"
{ kill -s KILL -- "-$BGPID"; kill -s KILL "$BGPID"; wait "$BGPID"; } 2>/dev/null
kill -s KILL "$(cat "$work/k9/ready")" 2>/dev/null
t0=$(now_ms)
check "a reader killed -9: a writer is not let in at once" 1 '' '' -- -u "$url" rw run k9 --write -n -- true
took() { "$bin" -q -u "$url" rw run k9 --write -n -- true </dev/null >/dev/null 2>&1; }
if wait_until 10 took; then
  # Renewed at least every third of the TTL: it expired no sooner than
  # two thirds of it after the kill.
  expect_range "... it is let in after the reader's TTL, not before (ms after the kill)" \
    "$(( $(now_ms) - t0 ))" 1900 4500
else
  bad "... the dead reader was never pruned"
fi

# ---------------------------------------- a holder stopped past its TTL
mkdir -p "$work/st"
bg "$work/st.out" "$work/st.err" -u "$url" rw run st --read -t 2s -- \
  sh -c 'echo $$ >"$1/ready"; while :; do date +%s%3N >>"$1/hb"; sleep 0.05; done' sh "$work/st"
wait_until $((10 * SLOW)) test -e "$work/st/ready" || bad "the stopped holder did not start"
kill -s STOP "$BGPID"   # resplock alone: its supervisor stops the job
job=$(cat "$work/st/ready")
alive() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "${st%% *}" != Z ]
}
wait_until $((5 * SLOW)) eval '! alive '"$job" || bad "SIGSTOP: the job was not stopped"
took_st() { "$bin" -q -u "$url" rw run st --write -n -- true </dev/null >/dev/null 2>&1; }
wait_until 5 took_st || bad "SIGSTOP: the lock did not go to a writer"
expect_match "SIGSTOP: the supervisor says it stopped the job" "$(cat "$work/st.err")" \
  "supervisor: the lock was not renewed in time; stopping the job"
kill -s CONT "$BGPID"
reap "$BGPID" $((10 * SLOW))
expect_eq "SIGSTOP: continued, rw run exits 75" "$CODE" 75

# --------------------------------------------------------------- cluster
rlk_cluster_start "$work/cluster" || die "could not start the cluster"
curl="redis://127.0.0.1:${RLK_CLUSTER_PORTS[0]}"
for name in alpha beta gamma delta; do
  check "cluster: rw run $name" 0 "^$name [0-9]+\$" '' -- -u "$curl" rw run "$name" --write -- \
    sh -c 'echo "$RESPLOCK_NAME $RESPLOCK_FENCE"'
done
mkdir -p "$work/cl"
bg "$work/cl.out" "$work/cl.err" -u "$curl" rw run gamma --read -- \
  sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/cl"
wait_until $((10 * SLOW)) test -e "$work/cl/ready" || bad "cluster: the reader did not start"
check "cluster: another reader comes in" 0 '' '' -- -u "$curl" rw run gamma --read -n -- true
check "cluster: a writer does not" 1 '' '' -- -u "$curl" rw run gamma --write -n -- true
touch "$work/cl/go"
reap "$BGPID" $((10 * SLOW))
expect_eq "cluster: the reader exits 0" "$CODE" 0
check "cluster: a writer now" 0 '' '' -- -u "$curl" rw run gamma --write -n -- true
rlk_cluster_stop
finish
