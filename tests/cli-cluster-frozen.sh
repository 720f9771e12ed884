#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock run on a real 3+3 Redis Cluster (cluster-node-timeout 1000 ms)
# whose nodes are frozen with SIGSTOP, as a paused VM or a swapped-out
# process is: their TCP connections stay up, and nothing but silence
# tells the client.
#   - The primary of the lock's shard frozen while the job runs: its
#     replica is promoted, and the job itself sees its lock renewed
#     there (its token, the PTTL rising) and exits 0; run exits 0 (the
#     job was not stopped, the lock not reported lost), and its release
#     reached the new primary (no key left).  Given another primary's
#     URL, and given the frozen node's own URL (the table is then read
#     from a node of the last table opened for it).
#   - A shard's primary and its replica both frozen while the job runs:
#     the release cannot be made; run says so on stderr with how long the
#     name may stay locked (its TTL from the last renewal) and exits with
#     the job's code (0); once the nodes are resumed the key is either
#     there with a PTTL no longer than said (and the renewal's round
#     trip), or gone: the resumed primary ran the release it was sent
#     (Valkey does), and then no other holder has it.
# Every node is resumed at the end, whatever happened.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"
resume_all() {
  local i
  for i in "${!RLK_CLUSTER_PIDS[@]}"; do
    [ "${RLK_CLUSTER_STATE[$i]}" = paused ] && rlk_cluster_resume "$i"
  done
  return 0
}
trap 'resume_all; rlk_cluster_stop; rlk_cleanup' EXIT

rlk_cluster_start "$work/cluster" 1000 || die "the cluster did not start"
P=("${RLK_CLUSTER_PORTS[@]}")
slot_of() { redis-cli -p "${P[0]}" cluster keyslot "$1" | tr -d '\r'; }
name_on() {
  local k
  for k in $(seq 0 299); do
    [ "$(rlk_cluster_owner "$(slot_of "$2-$k")")" = "$1" ] && { echo "$2-$k"; return 0; }
  done
  return 1
}
primaries=()
for i in 0 1 2 3 4 5; do
  _rlk_cluster_cli "$i" info replication | grep -qx 'role:master' && primaries+=("$i")
done
[ "${#primaries[@]}" = 3 ] || die "${#primaries[@]} primaries, not 3"
seed="redis://127.0.0.1:${P[${primaries[0]}]}"
echo "# resplock gets one URL: $seed (but where said)"

# 1. The lock's primary frozen while the job runs: given another
# primary's URL, then (the shard's new primary frozen in turn) given the
# frozen node's own URL, whose connection then is the only one up.
frozen_primary() {
  local victim=$1 seed=$2 what=$3 r name run1 t_stop
  r=$(rlk_cluster_replica_of "$victim") || { bad "no replica of node $victim"; return; }
  name=$(name_on "$victim" "frozen$victim") || { bad "no name on node $victim"; return; }
  rm -f "$work/started"
  # The job: replicated, started, then until its key on the replica (the
  # new primary once promoted) holds its token and its PTTL has risen
  # there: exit 0; 9 after 60 s.
  bg "$work/out1" "$work/err1" -u "$seed" run "$name" -t 10s -- sh -c '
    # Replicated first: the replica acknowledged a later write of the
    # slot, on one connection (exit 8 if not).
    [ "$(printf "%s\n" "SET {$RESPLOCK_NAME}:sync 1 PX 60000" "WAIT 1 5000" |
         redis-cli -p "$3" | tail -n 1)" = 1 ] || exit 8
    touch "$1/started"
    last=999999999 end=$(( $(date +%s) + 60 ))
    while :; do
      if [ "$(redis-cli -p "$2" get "$RESPLOCK_NAME")" = "$RESPLOCK_TOKEN" ]; then
        t=$(redis-cli -p "$2" pttl "$RESPLOCK_NAME")
        [ "$t" -gt "$last" ] && exit 0
        last=$t
      fi
      [ "$(date +%s)" -lt "$end" ] || exit 9
      sleep 0.05
    done' sh "$work" "${P[$r]}" "${P[$victim]}"
  run1=$BGPID
  wait_until 30 test -e "$work/started" || { bad "$what: the job did not start"; return; }
  rlk_cluster_pause "$victim" || { bad "SIGSTOP of node $victim"; return; }
  t_stop=$(now_ms)
  rlk_cluster_wait_primary "$r" 60 || bad "node $r was not promoted"
  echo "# $what: SIGSTOP of node $victim, node $r a primary after $(( $(now_ms) - t_stop )) ms"
  reap "$run1" 90
  expect_eq "$what: run exits 0, its job not stopped" "$CODE" 0
  [ "$CODE" = 0 ] || sed 's/^/  err: /' "$work/err1"
  if grep -q . "$work/err1"; then bad "$what: nothing on stderr" "$(sed 's/^/err: /' "$work/err1")"
  else ok "$what: nothing on stderr"; fi
  expect_eq "$what: no key $name left on node $r (the release reached it)" \
    "$(redis-cli -p "${P[$r]}" exists "$name" | tr -d '\r')" 0
  rlk_cluster_resume "$victim" || bad "SIGCONT of node $victim"
  rlk_cluster_wait_ready 60 || bad "the cluster not ready again: $RLK_CLUSTER_WHY"
  PROMOTED=$r
}
frozen_primary "${primaries[1]}" "$seed" "the primary frozen"
frozen_primary "$PROMOTED" "redis://127.0.0.1:${P[$PROMOTED]}" "the seed's primary frozen"

# 2. A shard's primary and its replica frozen: the release cannot be
# made.
p2=${primaries[2]}
r2=$(rlk_cluster_replica_of "$p2") || die "no replica of node $p2"
name=$(name_on "$p2" blocked) || die "no name on node $p2"
rm -f "$work/started" "$work/go"
bg "$work/out2" "$work/err2" -u "$seed" -T 2s run "$name" -t 20s -- sh -c '
  touch "$1/started"
  end=$(( $(date +%s) + 60 ))
  until [ -e "$1/go" ]; do [ "$(date +%s)" -lt "$end" ] || exit 9; sleep 0.02; done' sh "$work"
run2=$BGPID
wait_until 30 test -e "$work/started" || die "the job did not start"
rlk_cluster_pause "$r2" || die "SIGSTOP of node $r2"
rlk_cluster_pause "$p2" || die "SIGSTOP of node $p2"
touch "$work/go"
reap "$run2" 60
expect_eq "the shard frozen: run exits with the job's code, 0" "$CODE" 0
said=$(sed -nE "s/.*'$name' may stay locked until its TTL runs out, in about ([0-9]+)\.([0-9]{3}) s$/\1\2/p" "$work/err2")
if [ -n "$said" ]; then ok "stderr says how long '$name' stays locked: $((10#$said)) ms"
else bad "stderr says how long '$name' stays locked" "$(sed 's/^/err: /' "$work/err2")"; said=0; fi
expect_range "that is within the TTL" "$((10#$said))" 1 20000
rlk_cluster_resume "$p2" || bad "SIGCONT of node $p2"
rlk_cluster_resume "$r2" || bad "SIGCONT of node $r2"
rlk_cluster_wait_ready 60 || bad "the cluster not ready again: $RLK_CLUSTER_WHY"
pttl=$(redis-cli -c -p "${P[0]}" pttl "$name" | tr -d '\r')
if [ "$pttl" = -2 ]; then
  ok "the key gone once resumed: the release sent to the frozen primary ran"
else
  # Said from the last renewal's sending: its round trip may add to it.
  expect_range "the key still there, its PTTL no longer than said" "$pttl" 1 "$((10#$said + 1000))"
fi
finish
