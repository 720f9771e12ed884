# SPDX-License-Identifier: BSD-3-Clause
# Mutual exclusion through resplock run, for the tests that prove it
# (tests/cli-lock-exclusion.sh on one server, tests/cli-cluster-lock.sh
# on a cluster).  Source it after tests/cli-lock-lib.sh.
#
#   run_workers N ITERS LIMIT-SECONDS [command...]
#       N workers, in process groups of their own, each running the
#       critical section ITERS times through the command given (none:
#       bare): read $work/counter, pause, write it plus one, with
#       "FENCE start" and "FENCE end" appended to $work/log around it
#       (RESPLOCK_FENCE; appends are atomic) and a line in $work/errors
#       for every run that did not exit 0.  All are reaped (and killed
#       after LIMIT-SECONDS); 1 when some had to be killed.
#   log_verdict LOG
#       "ok" when the log's sections are start/end pairs of one fence,
#       adjacent, with fences strictly increasing; else the first bad
#       line.

# The critical section.
cat >"$work/crit.sh" <<'EOF'
n=$(cat "$1")
echo "${RESPLOCK_FENCE:-0} start" >>"$2"
sleep 0.002
echo $((n + 1)) >"$1"
echo "${RESPLOCK_FENCE:-0} end" >>"$2"
EOF
# worker.sh ITERS COUNTER LOG ERRORS [resplock and its options...]
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

log_verdict() {
  awk '
    NR % 2 == 1 { if ($2 != "start") { print "line " NR ": " $0 " (want a start)"; bad = 1; exit }
                  if (NR > 1 && $1 + 0 <= last) { print "line " NR ": fence " $1 " after " last; bad = 1; exit }
                  f = $1; next }
    { if ($2 != "end" || $1 != f) { print "line " NR ": " $0 " (want \"" f " end\": sections overlap)"; bad = 1; exit }
      last = f }
    END { if (!bad) print (NR % 2 ? "odd number of lines" : "ok") }' "$1"
}
