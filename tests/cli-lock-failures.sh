#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How resplock run behaves when a lock is lost or its holder dies: a
# holder killed with SIGKILL (a waiter gets the lock when the TTL runs
# out), a holder stopped past its TTL and continued, a lock taken over
# while run renews it, the server restarted, gone, or frozen under a
# running command, and a command that ignores SIGTERM.  In every loss the
# command must be stopped before the lock's validity ends, and run exits 75.
. "$top_srcdir/tests/cli-lock-lib.sh"

rlk_redis_start main "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
key_gone() { [ "$(redis-cli -p "${2:-$port}" EXISTS "$1")" = 0 ]; }
subscribed() { [ "$(redis-cli -p "${2:-$port}" PUBSUB NUMSUB "redisson_lock__channel:{$1}" | sed -n 2p)" = 1 ]; }
# alive PID: the process exists and is not a zombie.
alive() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "${st%% *}" != Z ]
}

# term-child.sh PREFIX: writes when it started to PREFIX.start and when it
# got SIGTERM to PREFIX.term (then exits), in ms since the epoch.
cat >"$work/term-child.sh" <<'EOF'
trap 'date +%s%3N >"$1.term"; kill $s 2>/dev/null; exit 143' TERM
sleep 60 & s=$!
date +%s%3N >"$1.start"
wait $s
EOF

# --------------------------------------------------- holder killed with -9
bg "$work/k9.out" "$work/k9.err" -u "$url" run -t 3s k9 -- sh -c 'echo "$$ $RESPLOCK_FENCE" >'"$work/k9.child"'; exec sleep 60'
holder=$BGPID
wait_until $((5 * SLOW)) test -s "$work/k9.child" || bad "kill -9: the holder did not start" "$(cat "$work/k9.err")"
read -r child hfence <"$work/k9.child"
bg "$work/k9w.out" "$work/k9w.err" -u "$url" run -w 30s k9 -- sh -c 'date +%s%3N; echo "$RESPLOCK_FENCE"'
waiter=$BGPID
wait_until $((5 * SLOW)) subscribed k9 || bad "kill -9: the waiter did not subscribe" "$(cat "$work/k9w.err")"
expect_eq "kill -9: the waiter waits while the holder lives" "$(cat "$work/k9w.out")" ""
t1=$(now_ms); pttl=$(R PTTL k9)
t_kill=$(now_ms)
kill -s KILL "$holder"; kill -s KILL "$child"   # the child would live on
reap "$holder" 5
expect_eq "kill -9: the holder died of SIGKILL" "$CODE" 137
reap "$waiter" $((10 * SLOW))
expect_eq "kill -9: the waiter's exit" "$CODE" 0
t_got=$(sed -n 1p "$work/k9w.out")
expect_range "kill -9: the waiter had no lock before the TTL ran out (ms past the expiry the holder left)" \
  $(( ${t_got:-0} - (t1 + pttl) )) -5 $(( 3000 + $(bound 1500 3000) ))
expect_range "kill -9: the waiter got it within TTL + 1.5 s of the kill (ms)" \
  $(( ${t_got:-0} - t_kill )) 0 $(( 3000 + $(bound 1500 3000) ))
expect_gt "kill -9: the waiter's fence is higher" "$(sed -n 2p "$work/k9w.out")" "$hfence"

# ------------------------------------- holder stopped past its TTL, continued
t0=$(now_ms)
bg "$work/st.out" "$work/st.err" -u "$url" run -t 1s st -- sh -c \
  'echo "$$ $RESPLOCK_TOKEN $RESPLOCK_FENCE" >'"$work/st.child"'; exec sleep 10'
holder=$BGPID
wait_until $((5 * SLOW)) test -s "$work/st.child" || bad "SIGSTOP: the holder did not start" "$(cat "$work/st.err")"
read -r child otok ofence <"$work/st.child"
kill -s STOP "$holder"
wait_until 5 key_gone st && ok "SIGSTOP: the stopped holder's lock expires" || bad "SIGSTOP: the stopped holder's lock did not expire"
acq=$($RLK_WRAP "$bin" -u "$url" acquire st -t 30s </dev/null)
expect_eq "SIGSTOP: another acquire takes the expired lock" "$?" 0
read -r ntok nfence <<<"$acq"
expect_gt "SIGSTOP: with a higher fence" "${nfence:-0}" "$ofence"
kill -s CONT "$holder"
reap "$holder" $((10 * SLOW))
expect_eq "SIGSTOP: continued, the old run exits 75" "$CODE" 75
expect_range "SIGSTOP: ... before its command's end (ms)" $(( $(now_ms) - t0 )) 0 9000
expect_match "SIGSTOP: ... saying the lock was lost" "$(cat "$work/st.err")" "lock 'st' lost"
alive "$child" && bad "SIGSTOP: the old run's command is still running" || ok "SIGSTOP: the old run's command was stopped"
expect_eq "SIGSTOP: the new holder's key is intact" "$(R GET st)" "$ntok"
check "SIGSTOP: release with the old token: 1" 1 '' "release: lock 'st' is held by someone else" -- -u "$url" release st "$otok"
expect_eq "SIGSTOP: ... and nothing is deleted" "$(R GET st)" "$ntok"
check "SIGSTOP: the new holder releases: 0" 0 '' '' -- -u "$url" release st "$ntok"

# ------------------------------------------- taken over while run renews it
# The key is deleted and taken by someone else: the next renewal (every
# third of the TTL) is refused, and run stops its command.
bg "$work/to.out" "$work/to.err" -u "$url" run -t 3s to -- sh "$work/term-child.sh" "$work/to"
holder=$BGPID
wait_until $((5 * SLOW)) test -s "$work/to.start" || bad "takeover: the holder did not start" "$(cat "$work/to.err")"
R DEL to >/dev/null
t_take=$(now_ms)
acq=$($RLK_WRAP "$bin" -u "$url" acquire to -t 30s </dev/null); read -r ntok _ <<<"$acq"
reap "$holder" $((10 * SLOW))
expect_eq "takeover: run exits 75" "$CODE" 75
expect_range "takeover: its command got SIGTERM at the next renewal (ms)" \
  $(( $(cat "$work/to.term" 2>/dev/null || echo -100000) - t_take )) 0 $(( 1000 + $(bound 300 1500) ))
expect_eq "takeover: the new holder's key is intact" "$(R GET to)" "$ntok"

# ---------------------------------------------------- the server goes away
# lost_test LABEL HOW: run -t 3s --kill-after 900ms under a server of its
# own, which HOW (restart, kill, freeze) then takes away.  The command
# must get SIGTERM early enough for a SIGKILL 900 ms later to land before
# the lock's validity (3 s from the acquisition) ends.  The acquisition is
# after t0 (taken before starting run); under valgrind, whose start-up
# alone takes about half a second, after the command's start is all that
# can be said.
lost_test() {
  local label=$1 how=$2 sport spid pid t0 ref
  rlk_redis_start "srv-$how" "$work" || { bad "$label: could not start redis-server"; return; }
  sport=$RLK_REDIS_PORT spid=$RLK_REDIS_PID
  t0=$(now_ms)
  bg "$work/$how.out" "$work/$how.err" -u "redis://127.0.0.1:$sport" run -t 3s --kill-after 900ms "lost-$how" -- \
    sh "$work/term-child.sh" "$work/$how"
  pid=$BGPID
  if ! wait_until $((5 * SLOW)) test -s "$work/$how.start"; then
    bad "$label: the command did not start" "$(cat "$work/$how.err")"; reap "$pid" 1; rlk_redis_kill "$spid"; return
  fi
  case $how in
    restart) rlk_redis_restart "srv-$how" "$work" "$sport" "$spid" || bad "$label: could not restart redis-server" ;;
    kill) rlk_redis_kill "$spid" ;;
    freeze) kill -s STOP "$spid" ;;
  esac
  reap "$pid" $((10 * SLOW))
  expect_eq "$label: run exits 75" "$CODE" 75
  expect_match "$label: ... saying the lock was lost" "$(cat "$work/$how.err")" "lock 'lost-$how' lost"
  if [ -n "$RLK_WRAP" ]; then ref=$(cat "$work/$how.start"); else ref=$t0; fi
  if [ -s "$work/$how.term" ]; then
    expect_range "$label: SIGTERM + 900 ms before the validity ends (ms to spare)" \
      $(( ref + 3000 - ($(cat "$work/$how.term") + 900) )) 1 3000
  else
    bad "$label: the command got no SIGTERM"
  fi
  case $how in
    restart)
      expect_match "$label: the renewal reached the new server" \
        "$(redis-cli -p "$sport" INFO commandstats | grep -E '^cmdstat_(evalsha|eval|fcall):')" 'calls=[1-9]'
      expect_eq "$label: the new server has no lock" "$(redis-cli -p "$sport" EXISTS "lost-$how")" 0
      rlk_redis_kill "$RLK_REDIS_PID" ;;
    freeze) rlk_redis_kill "$spid" ;;
  esac
}
lost_test "server restarted under run" restart
lost_test "server gone under run" kill
lost_test "server frozen under run (accepts, never answers)" freeze

# ----------------------------------------- a command that ignores SIGTERM
# It gets SIGKILL --kill-after after SIGTERM, still before the lock's
# validity ends.
rlk_redis_start srv-ig "$work" || die "could not start redis-server"
sport=$RLK_REDIS_PORT spid=$RLK_REDIS_PID
t0=$(now_ms)
bg "$work/ig.out" "$work/ig.err" -u "redis://127.0.0.1:$sport" run -t 3s --kill-after 500ms ig -- \
  sh -c 'trap "" TERM; echo "$$ $(date +%s%3N)" >'"$work/ig.child"'; exec sleep 60'
pid=$BGPID
wait_until $((5 * SLOW)) test -s "$work/ig.child" || bad "ignored SIGTERM: the command did not start" "$(cat "$work/ig.err")"
read -r child t_start <"$work/ig.child"
rlk_redis_kill "$spid"
wait_until $((10 * SLOW)) eval '! alive '"$child"
t_dead=$(now_ms)
alive "$child" && bad "ignored SIGTERM: the command is still alive" || ok "ignored SIGTERM: the command was killed"
reap "$pid" $((10 * SLOW))
expect_eq "ignored SIGTERM: run exits 75" "$CODE" 75
if [ -n "$RLK_WRAP" ]; then ref=$t_start; else ref=$t0; fi
expect_range "ignored SIGTERM: SIGKILL before the validity ends (ms to spare)" $(( ref + 3000 - t_dead )) 1 3000

# ----------------------------------------- one deadline each, whatever the server does
# A server that shakes hands and then holds the lock scripts (CLIENT PAUSE
# WRITE): acquire -n -T 2s gives up after 2 s, not after a re-send that
# doubles it.  A frozen server (it accepts and never answers): the same,
# and run -w 3s gives up after 3 s.
rlk_redis_start srv-dl "$work" || die "could not start redis-server"
sport=$RLK_REDIS_PORT spid=$RLK_REDIS_PID
redis-cli -p "$sport" CLIENT PAUSE 8000 WRITE >/dev/null
t0=$(now_ms)
$RLK_WRAP "$bin" -u "redis://127.0.0.1:$sport" -T 2s acquire dl -n </dev/null >/dev/null 2>"$work/dl.err"
code=$? t1=$(now_ms)
expect_eq "paused scripts: acquire -n -T 2s exits 69" "$code" 69
expect_range "paused scripts: acquire -n -T 2s ends after 2 s (ms)" $(( t1 - t0 )) 1900 $(( 2600 + $(bound 0 3000) ))
t0=$(now_ms)
$RLK_WRAP "$bin" -u "redis://127.0.0.1:$sport" -T 2s run -w 3s dl -- true </dev/null >/dev/null 2>"$work/dl.err"
code=$? t1=$(now_ms)
expect_range "paused scripts: run -w 3s -T 2s ends after 3 s (ms)" $(( t1 - t0 )) 2900 $(( 3600 + $(bound 0 3000) ))
redis-cli -p "$sport" CLIENT UNPAUSE >/dev/null
kill -s STOP "$spid"
t0=$(now_ms)
$RLK_WRAP "$bin" -u "redis://127.0.0.1:$sport" -T 2s acquire dl -n </dev/null >/dev/null 2>"$work/dl.err"
code=$? t1=$(now_ms)
expect_eq "frozen server: acquire -n -T 2s exits 69" "$code" 69
expect_range "frozen server: acquire -n -T 2s ends after 2 s (ms)" $(( t1 - t0 )) 1900 $(( 2600 + $(bound 0 3000) ))
kill -s CONT "$spid"
$RLK_WRAP "$bin" -u "redis://127.0.0.1:$sport" acquire dl -t 60s </dev/null >/dev/null
kill -s STOP "$spid"
t0=$(now_ms)
$RLK_WRAP "$bin" -u "redis://127.0.0.1:$sport" -T 2s run -w 3s dl -- true </dev/null >/dev/null 2>"$work/dl.err"
code=$? t1=$(now_ms)
expect_range "frozen server: run -w 3s -T 2s ends after 3 s (ms)" $(( t1 - t0 )) 2900 $(( 3600 + $(bound 0 3000) ))
kill -s CONT "$spid"
# With the server answering, run -w 3s on a held lock ends after 3 s with
# the conflict code.
t0=$(now_ms)
$RLK_WRAP "$bin" -u "redis://127.0.0.1:$sport" run -w 3s dl -- true </dev/null >/dev/null 2>"$work/dl.err"
code=$? t1=$(now_ms)
expect_eq "held: run -w 3s exits 1" "$code" 1
expect_range "held: run -w 3s ends after 3 s (ms)" $(( t1 - t0 )) 2900 $(( 3600 + $(bound 0 3000) ))

# A server down when run -w starts, and up again 1 s later on the same
# port: the first connect is tried again within the wait, and the job runs.
rlk_redis_kill "$spid"
wait_until 5 eval '! (exec 9<>/dev/tcp/127.0.0.1/'"$sport"') 2>/dev/null' ||
  bad "the server did not go away"
bg "$work/late.out" "$work/late.err" -u "redis://127.0.0.1:$sport" run -w 10s late -- sh -c 'echo ran'
pid=$BGPID
t0=$(now_ms)
# The server's downtime (the fault itself), then the same port again.
sleep 1
redis-server --port "$sport" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$work/srv-dl" --logfile "$work/srv-dl/redis2.log" &
RLK_REDIS_PIDS+=("$!")
reap "$pid" $((15 * SLOW))
expect_eq "server back within the wait: run -w 10s exits 0" "$CODE" 0
expect_eq "server back within the wait: the job ran" "$(cat "$work/late.out")" "ran"

finish
