#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Mutual exclusion through resplock run: PROCS processes each run ITERS
# non-atomic read-modify-writes of a counter file under one lock.  The
# count must come out exact, and the log of the critical sections must show
# strictly increasing fencing tokens with no two sections overlapping.
# First, a control: the same workload without the lock loses updates, so
# the checks can tell.
. "$top_srcdir/tests/cli-lock-lib.sh"

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

# The critical section: read the counter, pause, write it plus one; the
# log gets "FENCE start" and "FENCE end" around it (appends are atomic).
cat >"$work/crit.sh" <<'EOF'
n=$(cat "$1")
echo "${RESPLOCK_FENCE:-0} start" >>"$2"
sleep 0.002
echo $((n + 1)) >"$1"
echo "${RESPLOCK_FENCE:-0} end" >>"$2"
EOF
# worker.sh ITERS COUNTER LOG ERRORS [resplock and its options...]: runs
# the critical section ITERS times, through the command given (none: bare).
cat >"$work/worker.sh" <<'EOF'
iters=$1 counter=$2 log=$3 errors=$4; shift 4
i=0
while [ $i -lt "$iters" ]; do
  "$@" sh "$(dirname "$0")/crit.sh" "$counter" "$log" </dev/null
  rc=$?
  [ $rc = 0 ] || echo "iteration $i: exit $rc" >>"$errors"
  i=$((i + 1))
done
EOF

# run_workers N ITERS LIMIT-SECONDS [command...]: N workers in process
# groups of their own, all reaped (and killed after LIMIT-SECONDS).
run_workers() {
  local n=$1 iters=$2 limit=$3 i pid pids=() slow=0; shift 3
  echo 0 >"$work/counter"; : >"$work/log"; : >"$work/errors"
  for i in $(seq "$n"); do
    setsid bash "$work/worker.sh" "$iters" "$work/counter" "$work/log" "$work/errors" "$@" &
    pids+=($!); BG_PIDS+=($!)
  done
  local end=$(( $(now_ms) + limit * 1000 ))
  for pid in "${pids[@]}"; do
    limit=$(( (end - $(now_ms) + 999) / 1000 ))
    reap "$pid" $(( limit > 0 ? limit : 1 )) || slow=1
  done
  return $slow
}

# The log's verdict: "ok" when sections are start/end pairs of one fence,
# adjacent, with fences strictly increasing; else the first bad line.
log_verdict() {
  awk '
    NR % 2 == 1 { if ($2 != "start") { print "line " NR ": " $0 " (want a start)"; bad = 1; exit }
                  if (NR > 1 && $1 + 0 <= last) { print "line " NR ": fence " $1 " after " last; bad = 1; exit }
                  f = $1; next }
    { if ($2 != "end" || $1 != f) { print "line " NR ": " $0 " (want \"" f " end\": sections overlap)"; bad = 1; exit }
      last = f }
    END { if (!bad) print (NR % 2 ? "odd number of lines" : "ok") }' "$1"
}

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
