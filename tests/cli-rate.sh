#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock rate, on one server and on the 3-primary Cluster (given node
# 0's URL alone):
#   - usage errors (a rate of 0, a burst of 0, -n more than the burst, no
#     --rate, no command); burst from idle; refused: exit 1 (-E N),
#     silently, COMMAND not run; COMMAND's exit code; rate status;
#   - --wait sleeps the server's answer (two decisions, the sleep within
#     the refusal's wait), and -w shorter than that answer exits 1 at
#     once instead of sleeping;
#   - four processes whose clocks are skewed on purpose (faketime: -3.3 s,
#     +0, +2.25 s, +61 s) take from one limiter (10/s, burst 3) in the
#     second that straddles a whole second of the server's clock: admitted
#     at most 10/s * the time they ran + 3; beside them, in the same loop,
#     a fixed-window counter (SET NX EX 1, INCRBY: rate-limiter-flexible's
#     RateLimiterRedis; Redis 8.8's INCREX is the same window) whose
#     window opened in the first 100 ms of that second, admitting more
#     than that bound: up to twice the rate across the window's edge.
# The processes run resplock natively even under RLK_WRAP (valgrind would
# make each decision a second long: the demand would not exceed the rate).
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"

command -v faketime >/dev/null 2>&1 ||
  die "faketime is needed to skew the clients' clocks (scripts/install-deps installs Debian's)"

rlk_redis_start rate "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }

# ---------------------------------------------------------------- usage
check "rate 0 is a usage error" 64 '' 'bad --rate' -- -u "$url" rate api --rate 0/s -- true
check "a burst of 0 is a usage error" 64 '' 'bad --burst' -- -u "$url" rate api --rate 5/s --burst 0 -- true
check "-n more than the burst is a usage error" 64 '' 'more than the burst' \
  -- -u "$url" rate api --rate 5/s --burst 3 -n 4 -- true
check "--rate is needed" 64 '' 'rate COUNT/PERIOD is needed' -- -u "$url" rate api -- true
check "a command is needed" 64 '' 'usage' -- -u "$url" rate api --rate 5/s
check "a bad period is a usage error" 64 '' 'bad --rate' -- -u "$url" rate api --rate 5/fortnight -- true
expect_eq "nothing was written" "$(R DBSIZE)" 0

# ---------------------------------------------------------------- basics
for i in 1 2 3; do
  check "burst from idle: run $i of 3 runs COMMAND" 0 "^ran$i\$" '' \
    -- -u "$url" rate api --rate 1/60s --burst 3 -- echo "ran$i"
done
$RLK_WRAP "$bin" -u "$url" rate api --rate 1/60s --burst 3 -- sh -c 'echo ran4' \
  </dev/null >"$work/out" 2>"$work/err"
code=$?
expect_eq "the fourth is refused: exit 1" "$code" 1
expect_eq "... without running COMMAND" "$(cat "$work/out")" ""
expect_eq "... silently" "$(grep -vc '^==' "$work/err")" 0
check "-E sets the refusal's exit code" 7 '' '' -- -u "$url" rate api --rate 1/60s --burst 3 -E 7 -- true
# vcheck NAME EXIT ERR-REGEX -- args: as check, for -v (several lines).
vcheck() {
  local name=$1 want=$2 err_re=$3 code; shift 4
  $RLK_WRAP "$bin" "$@" </dev/null >"$work/out" 2>"$work/err"
  code=$?
  if [ "$code" = "$want" ] && grep -Eq -- "$err_re" "$work/err"; then ok "$name"
  else bad "$name: exit $code, want $want, /$err_re/" "$(sed 's/^/err: /' "$work/err")"; fi
}
vcheck "-v says why" 1 "refused: 1 token\\(s\\) there in [0-9]+ ms" -- \
  -v -u "$url" rate api --rate 1/60s --burst 3 -- true
check "status: none left, when they come back" 1 '^api: 0 of 3 left, all back in [0-9]+ ms$' '' \
  -- -u "$url" rate status api --rate 1/60s --burst 3
expect_match "the key holds the TAT, with an expiry" "$(R PTTL resplock:rate:api)" '^[0-9]+$'
check "status of an idle limiter" 0 '^idle: 3 of 3 left, all back in 0 ms$' '' \
  -- -u "$url" rate status idle --rate 1/10s --burst 3
expect_eq "status writes nothing" "$(R EXISTS resplock:rate:idle)" 0
check "COMMAND's exit code is rate's" 5 '' '' -- -u "$url" rate code --rate 5/s -- sh -c 'exit 5'
check "a COMMAND that is not there: 127" 127 '' 'cannot run' \
  -- -u "$url" rate nocmd --rate 5/s -- /nonexistent/cmd
check "--prefix goes before NAME" 0 '' '' -- -u "$url" --prefix app: rate p --rate 5/s -- true
expect_eq "... in the key" "$(R EXISTS resplock:rate:app:p)" 1

# ---------------------------------------------------------------- waits
# 1/3s, burst 1: the second run waits what is left of one interval (3 s
# at most; long enough that a slow run, under valgrind, still waits).
check "wait: the first is allowed" 0 '' '' -- -u "$url" rate w --rate 1/3s -- true
t0=$(now_ms)
vcheck "wait: the second sleeps the server's answer, then runs" 0 \
  "allowed \\(0 left\\) after 2 decision\\(s\\), [0-9]+ ms slept" -- \
  -v -u "$url" rate w --rate 1/3s --wait -w 5s -- echo waited
expect_eq "wait: ... COMMAND ran" "$(cat "$work/out")" waited
took=$(( $(now_ms) - t0 ))
slept=$(sed -n 's/.* decision(s), \([0-9]*\) ms slept.*/\1/p' "$work/err")
expect_range "wait: the sleep is within one interval" "${slept:-x}" 1 3001
expect_range "wait: not woken before it (ms run)" "$took" "${slept:-0}" 100000
# One every 10 s: a wait of 300 ms cannot end with the tokens.
check "wait: -w shorter than the answer, first run" 0 '' '' -- -u "$url" rate slow --rate 1/10s -- true
t0=$(now_ms)
vcheck "wait: -w shorter than the answer exits 1" 1 'past the wait' -- \
  -v -u "$url" rate slow --rate 1/10s -w 300ms -- echo never
took=$(( $(now_ms) - t0 ))
expect_range "... at once (ms), not after 10 s" "$took" 0 "$(bound 1500 8000)"

# ---------------------------------------------------------------- contention
# The fixed window, as RateLimiterRedis keeps it: a counter per window of
# DURATION s that the first hit opens (SET NX EX), INCRBY; allowed while
# the count is within POINTS.
FW="redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
if redis.call('incrby', KEYS[1], ARGV[1]) <= tonumber(ARGV[3]) then return 1 end
return 0"

# (faketime reads "+0s", not "0s": that it cannot parse.)
OFFSETS=(-3.3 +0 +2.25 +61)
skew_now=$(faketime -f "+61s" date +%s)
expect_range "faketime skews a client's clock (s ahead)" "$(( skew_now - $(date +%s) ))" 60 62

# at_half CLI... KEY: true once the server's clock is in [500, 560) ms of
# a second whose first 100 ms saw KEY, a fixed window of 1 s, opened by
# one hit (the opener's count).  One script reads the server's clock, so
# both instants are the server's; a poll that misses either (a busy
# machine) opens the window again at a later second.  (Polled apart,
# the open and the half second fell in different seconds on a loaded CI
# machine: the window then opened with the demand, which it wholly
# covered, and admitted 13, no more than GCRA.)
HALF="local ms = math.floor(tonumber(redis.call('time')[2]) / 1000)
if redis.call('exists', KEYS[1]) == 0 then
  if ms < 100 then
    redis.call('set', KEYS[1], 0, 'EX', 1, 'NX')
    redis.call('incrby', KEYS[1], 1)
  end
  return 0
end
if ms >= 500 and ms < 560 then return 1 end
return 0"
at_half() {
  local key=${*: -1}
  [ "$("${@:1:$#-1}" EVAL "$HALF" 1 "$key" | tr -d '\r')" = 1 ]
}

# contend LABEL URL REDIS-CLI-ARGS...: the test of the header, printing
# the figures; its checks named after LABEL.
contend() {
  local label=$1 u=$2; shift 2
  local cli=(redis-cli "$@") lim="edge-$label" fwkey="fw-$label" i
  "${cli[@]}" DEL "resplock:rate:$lim" "$fwkey" >/dev/null
  # The window opens in the first 100 ms of a second of the server's
  # clock (it lasts to 1.1 s at most), and the demand starts in the same
  # second at 500 ms, for one second: it straddles the window's edge.
  # (A key that exists at 500 ms, with EX 1, was opened in this second.)
  wait_until 20 at_half "${cli[@]}" "$fwkey" ||
    { bad "$label: the server's half second not seen after its window"; return; }
  local t0 t1 end pids=()
  t0=$(now_ms)
  end=$((t0 + 1000))
  for i in 0 1 2 3; do
    (
      g=0 f=0 stuck=0
      while [ "$(now_ms)" -lt "$end" ]; do
        # timeout(1): a decision that never answered fails the test
        # (counted in stuck) instead of hanging it.
        # (faketime preloads its library before an ASan build's runtime,
        # which that build then accepts only when told.)
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        timeout 10 faketime -f "${OFFSETS[$i]}s" "$bin" -q -u "$u" rate "$lim" --rate 10/s --burst 3 -- true \
          </dev/null
        case $? in 0) g=$((g + 1)) ;; 124) stuck=$((stuck + 1)) ;; esac
        [ "$(timeout 10 "${cli[@]}" EVAL "$FW" 1 "$fwkey" 1 1 10 | tr -d '\r')" = 1 ] && f=$((f + 1))
      done
      echo "$g $f $stuck" >"$work/contend.$i"
    ) &
    pids+=($!)
  done
  # These four only: a bare wait also waits for the shell's other
  # children (redis-lib's closed-port holder, the servers), which live as
  # long as it does: that wait is what hung this test for 50 minutes.
  wait "${pids[@]}"
  t1=$(now_ms)
  local g=0 f=0 a b c
  for i in 0 1 2 3; do
    read -r a b c <"$work/contend.$i" || a=x
    [[ "$a" =~ ^[0-9]+$ ]] || { bad "$label: process $i reported nothing"; return; }
    expect_eq "$label: process $i: no decision outlived its 10 s bound" "$c" 0
    g=$((g + a)) f=$((f + b))
  done
  local span=$((t1 - t0)) limit
  # rate * time + burst, the time rounded up to whole tenths of a second
  # (10/s: one token each).
  limit=$(( (span + 99) / 100 + 3 ))
  echo "# $label: ${span} ms across the server's second: GCRA admitted $g (bound $limit)," \
    "fixed window $f; vs the rate (10/s): $(awk -v g="$g" -v f="$f" -v s="$span" \
    'BEGIN { printf "%.2fx and %.2fx", g / (10 * s / 1000), f / (10 * s / 1000) }')"
  expect_range "$label: GCRA admits at most rate * time + burst, whatever the clocks" "$g" 4 "$limit"
  expect_range "$label: the fixed window admits more across its edge" "$f" "$((limit + 1))" 20
}

contend one "$url" -p "$port"

# ---------------------------------------------------------------- cluster
rlk_cluster_start "$work/cluster" || die "the cluster did not start"
seed="redis://127.0.0.1:${RLK_CLUSTER_PORTS[0]}"
slot_of() { _rlk_cluster_cli 0 cluster keyslot "$1"; }
# A limiter's name whose key another primary than node 0 serves.
for k in $(seq 1 200); do
  owner=$(rlk_cluster_owner "$(slot_of "resplock:rate:far-$k")")
  [ -n "$owner" ] && [ "$owner" != 0 ] && break
done
far="far-$k"
for i in 1 2; do
  check "cluster: $far (node $owner) allowed, run $i" 0 "^c$i\$" '' \
    -- -u "$seed" rate "$far" --rate 1/60s --burst 2 -- echo "c$i"
done
check "cluster: the third refused" 1 '' '' -- -u "$seed" rate "$far" --rate 1/60s --burst 2 -- true
expect_match "cluster: the key is on its primary" \
  "$(_rlk_cluster_cli "$owner" PTTL "resplock:rate:$far")" '^[0-9]+$'
check "cluster: status" 1 "^$far: 0 of 2 left" '' -- -u "$seed" rate status "$far" --rate 1/60s --burst 2
contend cluster "$seed" -c -p "${RLK_CLUSTER_PORTS[0]}"

finish
