#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock --replicas and --replicas-aof against a primary and a replica
# started here: usage errors (both given, a bad count, a timeout over a
# quarter of the TTL, a timeout without them); run and acquire with one
# replica that has the lock when the command starts; more replicas asked
# than there are: exit 69, the lock given back, the command not run; the
# replica frozen (SIGSTOP) while the command runs: the renewals are not
# acknowledged, the lock is reported lost and the command stopped (exit
# 75) while the primary still holds the key.
. "$top_srcdir/tests/cli-lock-lib.sh"

rlk_redis_start primary "$work" || die "could not start the primary"
pport=$RLK_REDIS_PORT
rlk_redis_start replica "$work" --replicaof 127.0.0.1 "$pport" || die "could not start the replica"
rport=$RLK_REDIS_PORT rpid=$RLK_REDIS_PID
url="redis://127.0.0.1:$pport"
P() { redis-cli -p "$pport" "$@"; }
linked() { redis-cli -p "$rport" INFO replication | grep -q 'master_link_status:up'; }
wait_until 10 linked || die "the replica did not link to the primary"

check "--replicas and --replicas-aof together" 64 '' 'one of them' \
  -- -u "$url" run --replicas 1 --replicas-aof 1 rj -- true
check "a bad --replicas" 64 '' "bad --replicas '0'" -- -u "$url" run --replicas 0 rj -- true
check "--replicas-timeout over a quarter of the TTL" 64 '' 'quarter of the TTL' \
  -- -u "$url" run -t 4s --replicas 1 --replicas-timeout 1001ms rj -- true
check "--replicas-timeout alone" 64 '' 'one of them' \
  -- -u "$url" run --replicas-timeout 10ms rj -- true
expect_eq "nothing was written" "$(P DBSIZE)" 0

# The replica has the lock when the command starts.
check "run --replicas 1: the replica has it" 0 '^rlk:' '' \
  -- -u "$url" run --replicas 1 rj -- redis-cli -p "$rport" GET rj
expect_eq "released after run" "$(P EXISTS rj)" 0
check "acquire --replicas 1" 0 '^rlk:[0-9a-f]{32}[^ ]* [0-9]+$' '' -- -u "$url" acquire --replicas 1 ra
tok=$(cut -d' ' -f1 "$work/out")
expect_eq "the replica has the acquired lock" "$(redis-cli -p "$rport" GET ra)" "$tok"
check "release needs no replicas" 0 '' '' -- -u "$url" release ra "$tok"

check "more replicas than there are: exit 69" 69 '' '1 of 2 replicas acknowledged' \
  -- -u "$url" run --replicas 2 --replicas-timeout 100ms rj -- touch "$work/ran"
[ -e "$work/ran" ] && bad "the command ran without its replicas" || ok "the command did not run"
expect_eq "given back" "$(P EXISTS rj)" 0

# Frozen under a running command: the renewals go unacknowledged.
start=$(now_ms)
( wait_until 10 test -e "$work/started" && kill -STOP "$rpid" ) &
stopper=$!
check "a frozen replica: the lock is lost, the command stopped" 75 '' 'lost' \
  -- -u "$url" run -t 2s --replicas 1 rf -- sh -c 'touch "$1/started"; sleep 30' sh "$work"
took=$(( $(now_ms) - start ))
wait "$stopper"
expect_range "lost within the TTL" "$took" 0 "$(bound 2500 15000)"
expect_eq "the primary still holds it" "$(P EXISTS rf)" 1
kill -CONT "$rpid"
finish
