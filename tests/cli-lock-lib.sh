# SPDX-License-Identifier: BSD-3-Clause
# Shared by the tests/cli-lock*.sh scripts: pass/fail counting, a check
# of one resplock invocation, resplock in the background (always reaped
# and killed on exit), waiting on conditions with deadlines, time in ms.
# Source it after setting nothing; needs bash, top_srcdir, top_builddir.
set -u
RLK_WRAP=${RLK_WRAP:-}
. "$top_srcdir/tests/redis-lib.sh"
rlk_redis_need_server   # or the suite skips (exit 77), or fails
bin="$top_builddir/src/resplock"
work=$(mktemp -d)
pass=0 fail=0
BG_PIDS=()

# Under valgrind resplock takes about half a second to start and runs
# tens of times slower: bounds on durations that include resplock's own
# work are multiplied by SLOW.  Lower bounds and bounds set by the lock's
# own timing are not.
if [ -n "$RLK_WRAP" ]; then SLOW=4; else SLOW=1; fi

# bound NATIVE VALGRIND: a bound on a duration, by how resplock runs.
bound() { if [ -n "$RLK_WRAP" ]; then echo "$2"; else echo "$1"; fi; }

rlk_cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do
    kill -s CONT -- "-$p" 2>/dev/null
    kill -s KILL -- "-$p" 2>/dev/null   # resplock and its command
    kill -s KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  for p in "${RLK_REDIS_PIDS[@]}"; do kill -s CONT "$p" 2>/dev/null; done
  rlk_redis_stop_all
  rm -rf "$work"
}
trap rlk_cleanup EXIT
trap 'exit 130' INT TERM HUP

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() {
  echo "FAIL $1"; fail=$((fail + 1))
  shift; local l; for l in "$@"; do echo "  $l"; done
}
# The last line, and the exit status: what make check reads.
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ]; exit
}
die() { bad "$1"; finish; }

# expect_eq NAME GOT WANT
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got '$2', want '$3'"; fi
}
# expect_match NAME GOT ERE
expect_match() {
  if printf '%s\n' "$2" | grep -Eq -- "$3"; then ok "$1"; else bad "$1" "got '$2', want /$3/"; fi
}
# expect_range NAME GOT LOW HIGH: LOW <= GOT <= HIGH (integers)
expect_range() {
  if [[ "$2" =~ ^-?[0-9]+$ ]] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ]; then ok "$1: $2"
  else bad "$1" "got '$2', want $3..$4"; fi
}

# expect_gt NAME GOT THAN: GOT > THAN (integers; fences are server
# microseconds, far beyond a range's bounds)
expect_gt() {
  if [[ "$2" =~ ^[0-9]+$ ]] && [[ "$3" =~ ^[0-9]+$ ]] && [ "$2" -gt "$3" ]; then ok "$1"
  else bad "$1" "got '$2', want more than '$3'"; fi
}

# check NAME EXPECTED-EXIT STDOUT-REGEX STDERR-REGEX -- resplock args...
# Standard input is /dev/null; the output stays in $work/out, $work/err.
# When a message is expected for a failure (not a usage error), it is one
# line (valgrind's own lines aside).
check() {
  local name=$1 want=$2 out_re=$3 err_re=$4; shift 5
  local code
  $RLK_WRAP "$bin" "$@" </dev/null >"$work/out" 2>"$work/err"
  code=$?
  if [ "$code" != "$want" ]; then
    bad "$name: exit $code, want $want" "$(sed 's/^/out: /' "$work/out")" "$(sed 's/^/err: /' "$work/err")"
    return 1
  fi
  if [ -n "$out_re" ] && ! grep -Eq -- "$out_re" "$work/out"; then
    bad "$name: stdout does not match /$out_re/" "$(sed 's/^/out: /' "$work/out")"
    return 1
  fi
  if [ -n "$err_re" ] && ! grep -Eq -- "$err_re" "$work/err"; then
    bad "$name: stderr does not match /$err_re/" "$(sed 's/^/err: /' "$work/err")"
    return 1
  fi
  if [ -n "$err_re" ] && [ "$want" != 0 ] && [ "$want" != 64 ] &&
     [ "$(grep -vc '^==' "$work/err")" != 1 ]; then
    bad "$name: stderr is not one line" "$(sed 's/^/err: /' "$work/err")"
    return 1
  fi
  ok "$name"
}

# Milliseconds since the epoch (the clock `date +%s%3N` reads in children).
now_ms() { local t=$EPOCHREALTIME; echo $(( ${t%.*} * 1000 + 10#${t#*.} / 1000 )); }

# wait_until SECONDS COMMAND...: runs COMMAND every 10 ms until it
# succeeds; 1 when SECONDS pass first.
wait_until() {
  local end=$(( $(now_ms) + $1 * 1000 )); shift
  until "$@"; do
    [ "$(now_ms)" -ge "$end" ] && return 1
    sleep 0.01
  done
}

# bg OUT ERR resplock-args...: starts resplock in the background, in a
# process group of its own (so that it and its command can be killed
# together), with every signal at its default disposition: bash ignores
# SIGINT and SIGQUIT in the background jobs of a script, nohup ignores
# SIGHUP, and a command cannot trap a signal that was ignored when it
# started.  Sets BGPID, the resplock process itself (setsid, env and
# valgrind exec, they do not fork).
bg() {
  local out=$1 err=$2; shift 2
  setsid env --default-signal $RLK_WRAP "$bin" "$@" </dev/null >"$out" 2>"$err" &
  BGPID=$!
  BG_PIDS+=("$BGPID")
}

running() { kill -0 "$1" 2>/dev/null; }

# reap PID SECONDS: waits for a background process at most SECONDS (then
# kills its process group) and sets CODE to its exit status (-1 when it
# had to be killed).
reap() {
  local pid=$1 limit=$2
  # 2>/dev/null: bash's own "Killed" notices, for processes killed on purpose.
  if ! wait_until "$limit" eval '! running '"$pid" 2>/dev/null; then
    kill -s CONT -- "-$pid" 2>/dev/null
    kill -s KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    CODE=-1
    return 1
  fi
  wait "$pid" 2>/dev/null
  CODE=$?
}

# A loopback port that refuses connections, for "server unreachable"
# (held for the script: no server of this or another test can take it).
rlk_closed_port || { echo "FAIL cannot hold a closed port"; exit 99; }
closed_port=$RLK_CLOSED_PORT
