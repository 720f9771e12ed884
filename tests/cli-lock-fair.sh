#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `resplock run NAME --fair`: the fair kind's order, on one server and on
# a 3-primary Redis Cluster (tests/cluster-lib.sh, a name on a shard the
# seed does not serve):
#   - six waiters that join the line one after the other (each started
#     only once the one before is seen in {NAME}:queue) run exactly in
#     that order; each job lasts long enough that the chain of handoffs
#     passes 2 s, so a release frees the lock once (the yield window)
#     and the order must survive that too;
#   - a waiter killed (SIGKILL) in line holds the line up no longer than
#     its place's lapse and the next waiter's re-check;
#   - (one server) a newcomer that finds the lock free while a live
#     waiter stands in line: --fair does not take it (exit 1), the simple
#     kind's SET NX does (exit 0: what the simple kind does not promise),
#     and the waiter is served afterwards; and the same for the second
#     in line, whose re-check finds the lock free while the head is
#     stopped: the simple kind's takes it first, the fair kind's does not;
#   - status and list say "fair" for a lock a fair run holds; break hands
#     it to the head of the line.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"

N=6

# in_line N: {NAME}:queue holds N places.
in_line() { [ "$(R LLEN "{$name}:queue")" = "$1" ]; }
held() { [ "$(R EXISTS "$name")" = 1 ]; }

# hold: a fair run that holds $name until $work/go exists (its job
# polls for the file: the test decides when it ends).  Sets HOLDER.
hold() {
  rm -f "$work/go"
  bg "$work/holder.out" "$work/holder.err" -u "$url" run "$name" --fair -t 10s -- \
    sh -c 'until [ -e "$1" ]; do sleep 0.01; done' sh "$work/go"
  HOLDER=$BGPID
  wait_until "$(bound 10 30)" held || bad "$where: the holder took $name" "$(cat "$work/holder.err")"
}

# waiter I LOG MS: a fair run whose job logs "I START_MS" to LOG and
# lasts MS ms; started once I-1 places are in line, and it is seen in
# line as the I-th before this returns.  Sets W[I].
declare -a W
waiter() {
  bg "$work/w$1.out" "$work/w$1.err" -u "$url" run "$name" --fair -t 10s -w 60s -- \
    sh -c 'echo "$1 $(date +%s%3N)" >>"$2"; sleep "$3"' sh "$1" "$2" "$3"
  W[$1]=$BGPID
  wait_until "$(bound 10 30)" in_line "$1" ||
    bad "$where: waiter $1 seen in line" "queue: $(R LRANGE "{$name}:queue" 0 -1 | tr '\n' ' ')" \
        "$(cat "$work/w$1.err")"
}

order_of() { cut -d' ' -f1 "$1" | tr '\n' ' ' | sed 's/ $//'; }

# The order of joining is the order served, across a yield window.
trial_order() {
  rm -f "$work/order"
  hold
  for i in $(seq 1 $N); do waiter "$i" "$work/order" 0.5; done
  check "$where: status says fair" 0 '^kind: +fair: ' '' -- -u "$url" status "$name"
  touch "$work/go"
  reap "$HOLDER" 15
  local codes=""
  for i in $(seq 1 $N); do reap "${W[$i]}" 30; codes+="$CODE "; done
  expect_eq "$where: six fair waiters exit 0" "$codes" "0 0 0 0 0 0 "
  expect_eq "$where: served in the order they joined" "$(order_of "$work/order")" "1 2 3 4 5 6"
  # The widest gap between two jobs' starts, past the 500 ms a job lasts:
  # the 200 ms window of the yield (handoffs take milliseconds).
  local gap
  gap=$(awk 'NR > 1 { g = $2 - t - 500; if (g > m) m = g } { t = $2 } END { print m + 0 }' "$work/order")
  expect_range "$where: a yield was crossed (ms between two jobs past the job's 500)" \
    "$gap" 150 "$(bound 1500 6000)"
  expect_eq "$where: no key left" "$(R EXISTS "$name")" 0
}

# A waiter killed in line: the next one is served after the dead one's
# place lapses (2.2 s with the default 1 s re-check) and its own
# re-check (1 s), not later; the order of the others holds.
trial_killed() {
  rm -f "$work/order2"
  hold
  for i in 1 2 3; do waiter "$i" "$work/order2" 0; done
  kill -s KILL -- "-${W[2]}"
  reap "${W[2]}" 5
  touch "$work/go"
  reap "$HOLDER" 15
  reap "${W[1]}" 15; local c1=$CODE
  reap "${W[3]}" 15; local c3=$CODE
  expect_eq "$where: the live waiters exit 0 past the killed one" "$c1 $c3" "0 0"
  expect_eq "$where: the live waiters served in order" "$(order_of "$work/order2")" "1 3"
  local t1 t3
  t1=$(awk '$1 == 1 {print $2}' "$work/order2")
  t3=$(awk '$1 == 3 {print $2}' "$work/order2")
  expect_range "$where: ms from waiter 1's job to waiter 3's (the dead place's lapse)" \
    "$((t3 - t1))" 0 "$(bound 5000 15000)"
}

# --- one server ---
rlk_redis_start fair "$work" || die "could not start redis-server"
url="redis://127.0.0.1:$RLK_REDIS_PORT"
R() { redis-cli -p "$RLK_REDIS_PORT" "$@"; }
where="one server"
name=fair-order
trial_order
name=fair-killed
trial_killed

# A newcomer and a free lock with a live waiter in line: the lock was
# held by another client's value, which resplock's waiter cannot be
# handed, and is freed by DEL while the waiter is stopped (its place,
# renewed just now, lives 2.2 s).
name=fair-barge
R SET "$name" other PX 60000 >/dev/null
rm -f "$work/order3"
waiter 1 "$work/order3" 0
kill -s STOP -- "-${W[1]}"
R DEL "$name" >/dev/null
check "fair newcomer on a free lock with a live waiter in line: not taken, exit 1" 1 '' '' -- \
  -u "$url" run "$name" --fair -n -- true
expect_eq "... the lock still free, the waiter still in line" \
  "$(R EXISTS "$name") $(R LLEN "{$name}:queue")" "0 1"
check "simple newcomer there: its SET NX barges past the line, exit 0" 0 '' '' -- \
  -u "$url" run "$name" -n -- true
kill -s CONT -- "-${W[1]}"
reap "${W[1]}" 15
expect_eq "the waiter is served afterwards" "$CODE $(order_of "$work/order3")" "0 1"

# A free lock, its head stopped, the next waiter's re-check: the simple
# kind's takes it (its SET NX sees a free lock), the fair kind's leaves it
# to the head.  The head's place was renewed just before the DEL and
# lives 2.2 s; the next waiter looks again within 1 s: its place's field
# changing (renewed, or gone when it took the lock) says it has looked.
# FLAG: --fair, or --ttl=10s for the simple kind.
trial_stopped_head() {
  local flag=$1 want=$2 log=$work/order-$3 what=$4 t2 before
  name=stopped-head-$3
  R SET "$name" other PX 60000 >/dev/null
  rm -f "$log"
  for i in 1 2; do
    bg "$work/w$i.out" "$work/w$i.err" -u "$url" run "$name" $flag -w 60s -- \
      sh -c 'echo "$1 $(date +%s%3N)" >>"$2"' sh "$i" "$log"
    W[$i]=$BGPID
    wait_until "$(bound 10 30)" in_line "$i" || bad "$what: waiter $i seen in line"
  done
  kill -s STOP -- "-${W[1]}"
  t2=$(R LINDEX "{$name}:queue" 1)
  before=$(R HGET "{$name}:waiters" "$t2")
  R DEL "$name" >/dev/null
  looked() { [ "$(R HGET "{$name}:waiters" "$t2")" != "$before" ]; }
  wait_until 3 looked || bad "$what: the second waiter looked again within 3 s"
  kill -s CONT -- "-${W[1]}"
  reap "${W[1]}" 15; local c1=$CODE
  reap "${W[2]}" 15
  expect_eq "$what: a free lock, its head stopped: the order served" "$c1 $CODE $(order_of "$log")" "0 0 $want"
}
trial_stopped_head --ttl=10s "2 1" simple "simple kind (the next waiter's SET NX takes it)"
trial_stopped_head --fair "1 2" fair "fair kind (left to the head)"

# break on a fair lock: its release hands the lock to the head of the
# line, as the holder's own would; the holder finds it lost (exit 75).
name=fair-break
rm -f "$work/order4"
hold
waiter 1 "$work/order4" 0
check "break a fair lock" 0 "^broke 'fair-break', held by " '' -- -u "$url" break "$name"
reap "${W[1]}" 15
expect_eq "the waiter in line is handed it" "$CODE $(order_of "$work/order4")" "0 1"
reap "$HOLDER" 15
expect_eq "the holder found it lost" "$CODE" 75

# list names the kind.
name=fair-list
hold
check "list says fair" 0 "^fair-list +fair " '' -- -u "$url" list 'fair-list'
touch "$work/go"
reap "$HOLDER" 15
rlk_redis_stop_all

# --- a 3-primary cluster ---
rlk_cluster_start "$work" || die "the cluster did not start"
seed_port=${RLK_CLUSTER_PORTS[0]}
url="redis://127.0.0.1:$seed_port"
R() { redis-cli -c -p "$seed_port" "$@"; }
where="cluster"
# name_on_other PREFIX: a name PREFIX-K whose slot node 0 does not serve.
name_on_other() {
  local k slot
  for k in $(seq 0 299); do
    slot=$(_rlk_cluster_cli 0 cluster keyslot "$1-$k")
    [ "$(rlk_cluster_owner "$slot")" != 0 ] && { echo "$1-$k"; return 0; }
  done
  return 1
}
name=$(name_on_other fair-order) || die "no name on another shard"
trial_order
name=$(name_on_other fair-killed) || die "no name on another shard"
trial_killed
finish
