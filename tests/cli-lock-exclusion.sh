#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Mutual exclusion through resplock run: PROCS processes each run ITERS
# non-atomic read-modify-writes of a counter file under one lock.  The
# count must come out exact, and the log of the critical sections must show
# strictly increasing fencing tokens with no two sections overlapping.
# First, a control: the same workload without the lock loses updates, so
# the checks can tell.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cli-exclusion-lib.sh"

if [ -n "$RLK_WRAP" ]; then
  PROCS=4 ITERS=10
  echo "# under RLK_WRAP: $PROCS processes x $ITERS iterations (natively 8 x 200)"
else
  PROCS=8 ITERS=200
fi
total=$((PROCS * ITERS))

rlk_redis_start excl "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"

# Control: without the lock, 8 x 25 bare read-modify-writes lose updates.
run_workers 8 25 60 || bad "control: the workers did not finish in 60 s"
c=$(cat "$work/counter")
if [ "$c" -lt 200 ] && [ "$(log_verdict "$work/log")" != ok ]; then
  ok "control: without the lock the count is $c of 200 and sections overlap"
else
  bad "control: without the lock the count is $c of 200 and the log is '$(log_verdict "$work/log")': the test cannot tell"
fi

# With the lock.
t0=$(now_ms)
run_workers "$PROCS" "$ITERS" "$(bound 120 600)" $RLK_WRAP "$bin" -u "$url" run -t 5s excl -- ||
  bad "the workers did not finish in time"
elapsed=$(( $(now_ms) - t0 ))
echo "# $total runs in $elapsed ms"
expect_eq "every resplock run exited 0" "$(head -5 "$work/errors")" ""
expect_eq "the counter is exactly $total" "$(cat "$work/counter")" "$total"
expect_eq "the log has a start and an end per run" "$(wc -l <"$work/log")" $((2 * total))
expect_eq "fences strictly increase, each section's start and end adjacent" "$(log_verdict "$work/log")" ok
expect_eq "the lock is free at the end" "$(redis-cli -p "$port" EXISTS excl)" 0
no_ttl=$(redis-cli -p "$port" --scan | while read -r k; do
  [ "$(redis-cli -p "$port" PTTL "$k")" = -1 ] && echo "$k"; done)
expect_eq "every key left behind has a TTL" "$no_ttl" ""
[ -n "$RLK_WRAP" ] || expect_range "native run time (ms)" "$elapsed" 0 60000

finish
