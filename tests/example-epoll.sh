#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# examples/epoll_locks against two real servers, A and B:
#   - a normal run: both locks taken, still held with the printed tokens
#     after more than one TTL (the watchdog renews them), released, gone;
#   - never blocking: A frozen by SIGSTOP while both are held.  The lock
#     on A is reported lost while B's lock goes on being renewed (still
#     held with its token two TTLs after the freeze); the loop never spent
#     long on one wake; the run ends with 3 and B's lock released;
#   - busy: B's lock held by someone else through the wait: not acquired
#     there, A's lock released, exit 1;
#   - unreachable: a port nobody listens on: exit 1, A's lock released;
#   - TLS: B a TLS-only server given as a rediss:// URL (its CA by -C),
#     A as a redis:// URL: both taken, held and released.
. "$top_srcdir/tests/cli-lock-lib.sh"
bin="$top_builddir/examples/epoll_locks"
NAME=epoll-example

rlk_redis_start a "$work" || die "could not start redis-server A"
pa=$RLK_REDIS_PORT pida=$RLK_REDIS_PID
rlk_redis_start b "$work" || die "could not start redis-server B"
pb=$RLK_REDIS_PORT
A=127.0.0.1:$pa B=127.0.0.1:$pb

# The value at NAME on the server at port $1 (empty when there is none).
value() { redis-cli -p "$1" get "$NAME" 2>/dev/null; }
exists() { redis-cli -p "$1" exists "$NAME" 2>/dev/null; }
# The token the example printed for server $2 in its output $1.
token_of() { sed -n "s/^acquired $2 $NAME token=\(rlk:[^ ]*\) fence=[0-9]*\$/\1/p" "$1"; }
both_acquired() { [ -n "$(token_of "$1" 0)" ] && [ -n "$(token_of "$1" 1)" ]; }
has() { grep -Eq -- "$2" "$1"; }
past() { [ "$(now_ms)" -ge "$1" ]; }
# The longest loop iteration the example printed, in whole ms (rounded up).
longest_ms() {
  sed -n 's/^longest loop iteration: \([0-9.]*\) ms$/\1/p' "$1" |
    awk 'NF { v = int($1); if (v < $1) v++; print v }'
}
show() { sed 's/^/  out: /' "$1"; sed 's/^/  err: /' "$2"; }

# renewed WHAT OUT ERR GET0 GET1 [NAME0 NAME1]: the run writing OUT takes
# both locks, and two TTLs later each server still holds the token it
# printed for it (GET0 and GET1 read a server's value at NAME): the
# watchdog renewed them.  NAME0 and NAME1 (A and B) name the servers.
renewed() {
  local what=$1 out=$2 err=$3 get0=$4 get1=$5 n0=${6:-A} n1=${7:-B} t0 t1 v0 v1
  if ! wait_until "$(bound 5 30)" both_acquired "$out"; then
    bad "$what: both acquired" "$(show "$out" "$err")"
    return 1
  fi
  ok "$what: both acquired"
  t0=$(token_of "$out" 0) t1=$(token_of "$out" 1)
  # Both were taken before this moment: two TTLs from now, an unrenewed
  # lock would have expired long since.
  wait_until 10 past $(( $(now_ms) + 2 * TTL ))
  v0=$($get0) v1=$($get1)
  if has "$out" '^released'; then
    bad "$what: the hold ended before the check (too slow a machine?)" "$(show "$out" "$err")"
  else
    expect_eq "$what: $n0 holds the printed token after 2 TTLs (renewed)" "$v0" "$t0"
    expect_eq "$what: $n1 holds the printed token after 2 TTLs (renewed)" "$v1" "$t1"
  fi
}
value_a() { value "$pa"; }
value_b() { value "$pb"; }

# ------------------------------------------------------------------ a
TTL=500
out=$work/a.out err=$work/a.err
bg "$out" "$err" -t $TTL -h 2000 "$A" "$B" "$NAME"
pid=$BGPID
renewed normal "$out" "$err" value_a value_b
reap "$pid" "$(bound 10 60)"
expect_eq "normal: exit status" "$CODE" 0
if has "$out" "^released 0 $NAME status=ok\$" && has "$out" "^released 1 $NAME status=ok\$"; then
  ok "normal: both released"
else
  bad "normal: both released" "$(show "$out" "$err")"
fi
expect_eq "normal: NAME gone from A" "$(exists "$pa")" 0
expect_eq "normal: NAME gone from B" "$(exists "$pb")" 0

# ------------------------------------------------------------------ b
TTL=1000
out=$work/b.out err=$work/b.err
bg "$out" "$err" -t $TTL -h 6000 "$A" "$B" "$NAME"
pid=$BGPID
if wait_until "$(bound 5 30)" both_acquired "$out"; then
  tb=$(token_of "$out" 1)
  frozen=$(now_ms)
  kill -s STOP "$pida"
  # The lock on A cannot be renewed: reported lost before its validity
  # (under one TTL) ends.
  if wait_until "$(bound 3 10)" has "$out" "^lost 0 $NAME\$"; then
    ok "frozen A: lost 0 reported"
  else
    bad "frozen A: lost 0 reported" "$(show "$out" "$err")"
  fi
  wait_until 10 past $(( frozen + 2 * TTL + 200 ))
  vb=$(value "$pb")
  if has "$out" '^released 1'; then
    bad "frozen A: B's hold ended before the check (too slow a machine?)" "$(show "$out" "$err")"
  else
    expect_eq "frozen A: B holds its token 2 TTLs after the freeze (renewed)" "$vb" "$tb"
  fi
  kill -s CONT "$pida"
  reap "$pid" "$(bound 15 60)"
  expect_eq "frozen A: exit status (a lock lost)" "$CODE" 3
  if has "$out" "^lost 1"; then bad "frozen A: B's lock never lost" "$(show "$out" "$err")"
  else ok "frozen A: B's lock never lost"; fi
  if has "$out" "^released 1 $NAME status=ok\$"; then ok "frozen A: B released normally"
  else bad "frozen A: B released normally" "$(show "$out" "$err")"; fi
  expect_eq "frozen A: NAME gone from B" "$(exists "$pb")" 0
  # A loop held up by the frozen server for half a TTL could let B's
  # renewals come late.
  echo "# frozen A: the example's $(grep '^longest' "$out")"
  expect_range "frozen A: longest loop iteration (ms)" "$(longest_ms "$out")" 0 "$(bound 500 2000)"
else
  bad "frozen A: both acquired" "$(show "$out" "$err")"
  reap "$pid" 1
fi
kill -s CONT "$pida" 2>/dev/null
redis-cli -p "$pa" del "$NAME" >/dev/null   # A's lock, if it outlived its TTL
wait_until 10 eval '[ "$(redis-cli -p '"$pa"' ping 2>/dev/null)" = PONG ]'

# ------------------------------------------------------------------ c
redis-cli -p "$pb" set "$NAME" other PX 60000 >/dev/null
t0=$(now_ms)
if check "busy: not acquired on B, exit 1" 1 "^not-acquired 1 $NAME status=busy\$" '' -- \
     -w 300 "$A" "$B" "$NAME"; then
  took=$(( $(now_ms) - t0 ))
  expect_range "busy: waited 300 ms for B (ms)" "$took" 300 "$(bound 3000 20000)"
  if has "$work/out" "^acquired 0 " && has "$work/out" "^released 0 $NAME status=ok\$"; then
    ok "busy: A taken, then released"
  else
    bad "busy: A taken, then released" "$(show "$work/out" "$work/err")"
  fi
fi
expect_eq "busy: B still held by the other" "$(value "$pb")" other
expect_eq "busy: NAME gone from A" "$(exists "$pa")" 0
redis-cli -p "$pb" del "$NAME" >/dev/null

# ------------------------------------------------------------------ d
check "unreachable: exit 1" 1 "^closed 1 connect 127\.0\.0\.1:$closed_port: " '' -- \
  "$A" "127.0.0.1:$closed_port" "$NAME"
if has "$work/out" "^acquired 0 " && has "$work/out" "^released 0 $NAME status=ok\$"; then
  ok "unreachable: A taken, then released"
else
  bad "unreachable: A taken, then released" "$(show "$work/out" "$work/err")"
fi
expect_eq "unreachable: NAME gone from A" "$(exists "$pa")" 0

# ------------------------------------------------------------------ e
certs=$work/certs
if "$top_builddir/src/resplock" --version | grep -q '^TLS: not compiled in'; then
  # Built without OpenSSL: a rediss:// server is refused clearly, and the
  # lock on A is still taken and released.
  check "TLS not compiled in: exit 1" 1 "^closed 1 .*TLS support not compiled in" '' -- \
    "redis://$A" "rediss://127.0.0.1:6379" "$NAME"
  expect_eq "TLS not compiled in: NAME gone from A" "$(exists "$pa")" 0
elif ! bash "$top_srcdir/tests/gen-certs.sh" "$certs" >/dev/null; then
  bad "TLS: tests/gen-certs.sh failed"
elif ! rlk_redis_start_tls tls "$work" "$certs"; then
  bad "TLS: no TLS redis-server"
else
  pt=$RLK_REDIS_PORT
  T() { redis-cli --tls --cacert "$certs/ca.crt" -p "$pt" "$@" 2>/dev/null; }
  value_t() { T get "$NAME"; }
  TTL=500
  out=$work/e.out err=$work/e.err
  bg "$out" "$err" -t $TTL -h 1500 -C "$certs/ca.crt" "redis://$A" "rediss://127.0.0.1:$pt" "$NAME"
  pid=$BGPID
  renewed TLS "$out" "$err" value_a value_t A "the TLS server"
  reap "$pid" "$(bound 10 60)"
  expect_eq "TLS: exit status" "$CODE" 0
  if has "$out" "^ready 1\$" && has "$out" "^released 1 $NAME status=ok\$"; then
    ok "TLS: ready, then released"
  else
    bad "TLS: ready, then released" "$(show "$out" "$err")"
  fi
  expect_eq "TLS: NAME gone from the TLS server" "$(T exists "$NAME")" 0
  expect_eq "TLS: NAME gone from A" "$(exists "$pa")" 0
fi

finish
