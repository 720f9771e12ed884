#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/cluster-lib.sh proved against itself: six real redis-server
# processes made a cluster of 3 primaries and 3 replicas; keys served by
# the owner of their slot (MOVED elsewhere); a paused node answers
# nothing until resumed; kill -9 of a primary and its replica promoted;
# every process gone after rlk_cluster_stop.  Timings are printed as
# "# ..." lines, never asserted.
set -u
. "$top_srcdir/tests/redis-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"
work=$(mktemp -d)
trap 'rlk_cluster_stop; rlk_redis_stop_all; rm -rf "$work"' EXIT
pass=0 fail=0

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

t0=$(date +%s%N)
if ! rlk_cluster_start "$work"; then
  echo "FAIL the cluster did not start"; echo "0 passed, 1 failed"; exit 1
fi
echo "# cluster ready in $((($(date +%s%N) - t0) / 1000000)) ms"
ok "started: ${RLK_CLUSTER_PORTS[*]}"

roles=$(for i in 0 1 2 3 4 5; do _rlk_cluster_cli "$i" info replication | grep '^role:'; done |
        sort | uniq -c | awk '{ printf "%s %s ", $1, $2 }')
check "three primaries, three replicas ($roles)" [ "$roles" = "3 role:master 3 role:slave " ]

# Every key served by the owner of its slot; MOVED to it from the others.
moved_ok=1
for key in alpha beta gamma '{t}x'; do
  slot=$(_rlk_cluster_cli 0 cluster keyslot "$key")
  o=$(rlk_cluster_owner "$slot") || { moved_ok=0; echo "  no owner for slot $slot"; continue; }
  for i in 0 1 2 3 4 5; do
    got=$(_rlk_cluster_cli "$i" set "$key" v)
    if [ "$i" = "$o" ]; then want=OK; else want="MOVED $slot 127.0.0.1:${RLK_CLUSTER_PORTS[$o]}"; fi
    [ "$got" = "$want" ] || { moved_ok=0; echo "  node $i: SET $key: '$got', want '$want'"; }
  done
done
check "keys where their slot is, MOVED elsewhere" [ "$moved_ok" = 1 ]

# A paused replica answers nothing; resumed, the cluster is ready with it.
r=$(rlk_cluster_replica_of "$(rlk_cluster_owner 0)")
if rlk_cluster_pause "$r"; then
  got=$(timeout 1 redis-cli -p "${RLK_CLUSTER_PORTS[$r]}" ping 2>&1); code=$?
  check "a paused node does not answer (exit $code, '$got')" [ "$code" = 124 ]
  check "resumed" rlk_cluster_resume "$r"
  check "it answers again" [ "$(_rlk_cluster_cli "$r" ping)" = PONG ]
  check "ready with it" rlk_cluster_wait_ready 30
else
  bad "pause"
fi

# kill -9 of the primary of a key: its replica takes over, with the key.
slot=$(_rlk_cluster_cli 0 cluster keyslot '{fo}k')
p=$(rlk_cluster_owner "$slot") r=$(rlk_cluster_replica_of "$p")
_rlk_cluster_cli "$p" set '{fo}k' kept >/dev/null
check "replicated before the kill" [ "$(_rlk_cluster_cli "$p" wait 1 5000)" = 1 ]
pid=${RLK_CLUSTER_PIDS[$p]}
t0=$(date +%s%N)
rlk_cluster_kill "$p"
check "the killed primary is gone" bash -c "! kill -0 $pid 2>/dev/null"
if rlk_cluster_wait_primary "$r" 30; then
  echo "# kill -9 of node $p: node $r primary, cluster ready, after $((($(date +%s%N) - t0) / 1000000)) ms"
  ok "replica $r promoted"
  check "it serves the slot" [ "$(rlk_cluster_owner "$slot")" = "$r" ]
  check "with the key" [ "$(_rlk_cluster_cli "$r" get '{fo}k')" = kept ]
else
  bad "replica $r not promoted: $RLK_CLUSTER_WHY"
fi

pids=("${RLK_CLUSTER_PIDS[@]}")
rlk_cluster_stop
left=0
for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=$((left + 1)); done
check "no node left after rlk_cluster_stop ($left)" [ "$left" = 0 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
