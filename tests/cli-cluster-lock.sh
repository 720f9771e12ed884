#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock on a real Redis Cluster (tests/cluster-lib.sh: 3 primaries, 3
# replicas), given node 0's URL alone:
#   - `resplock run NAME -- COMMAND` for a name on each of the three
#     shards runs COMMAND while NAME's key holds its token on the shard's
#     primary, exits with COMMAND's status and leaves no key; and renews
#     the key there while COMMAND runs;
#   - a second run on a name held by a first waits in line (as flock
#     does) and runs only once the first is done;
#   - concurrent runs on one name never overlap: the proof of
#     tests/cli-lock-exclusion.sh (an exact counter, fences strictly
#     increasing, no two sections interleaved), on a name of another
#     shard than the seed's.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"
. "$top_srcdir/tests/cli-exclusion-lib.sh"

if [ -n "$RLK_WRAP" ]; then
  PROCS=3 ITERS=5
  echo "# under RLK_WRAP: $PROCS processes x $ITERS iterations (natively 4 x 25)"
else
  PROCS=4 ITERS=25
fi
total=$((PROCS * ITERS))

t0=$(now_ms)
rlk_cluster_start "$work" || die "the cluster did not start"
seed="redis://127.0.0.1:${RLK_CLUSTER_PORTS[0]}"
echo "# cluster ready in $(( $(now_ms) - t0 )) ms; resplock gets $seed only"

primaries=()
for i in 0 1 2 3 4 5; do
  _rlk_cluster_cli "$i" info replication | grep -qx 'role:master' && primaries+=("$i")
done
expect_eq "three primaries" "${#primaries[@]}" 3

# name_on NODE PREFIX: a name PREFIX-K whose slot NODE serves.
name_on() {
  local k slot
  for k in $(seq 0 299); do
    slot=$(_rlk_cluster_cli 0 cluster keyslot "$2-$k")
    [ "$(rlk_cluster_owner "$slot")" = "$1" ] && { echo "$2-$k"; return 0; }
  done
  return 1
}

# The command checks, on the shard's primary, that the key holds the
# token resplock gave it, and exits 3.
for p in "${primaries[@]}"; do
  name=$(name_on "$p" "run$p") || { bad "no name on node $p"; continue; }
  port=${RLK_CLUSTER_PORTS[$p]}
  check "run $name (node $p): the command ran holding the key there, exit 3" 3 '^held on '"$port"'$' '' -- \
    -u "$seed" run "$name" -t 10s -- \
    sh -c '[ "$(redis-cli -p "$1" get "$RESPLOCK_NAME")" = "$RESPLOCK_TOKEN" ] && echo "held on $1"; exit 3' sh "$port"
  expect_eq "no key $name left on node $p" "$(redis-cli -p "$port" exists "$name")" 0
done

# Renewed while the command runs: the command watches its key on the
# shard's primary (polling, under a deadline) until its PTTL has gone up
# twice, two renewals, its token there at every look; exit 0.  8: the
# token missing, 9: no two renewals in 30 s.
ttl=$(bound 2s 4s)
for p in "${primaries[@]}"; do
  name=$(name_on "$p" "renew$p") || { bad "no name on node $p"; continue; }
  port=${RLK_CLUSTER_PORTS[$p]}
  check "run $name (node $p) -t $ttl: renewed twice while the command ran" 0 '' '' -- \
    -u "$seed" run "$name" -t "$ttl" -- sh -c '
      n=0 last=999999999 end=$(( $(date +%s) + 30 ))
      while [ $n -lt 2 ]; do
        [ "$(redis-cli -p "$1" get "$RESPLOCK_NAME")" = "$RESPLOCK_TOKEN" ] || exit 8
        t=$(redis-cli -p "$1" pttl "$RESPLOCK_NAME")
        [ "$t" -gt "$last" ] && n=$((n + 1))
        last=$t
        [ "$(date +%s)" -lt "$end" ] || exit 9
        sleep 0.05
      done' sh "$port"
  expect_eq "no key $name left on node $p" "$(redis-cli -p "$port" exists "$name")" 0
done

# A second run waits in line for the first, and runs once it is done.
owner=${primaries[1]:-}
[ "$owner" != 0 ] || owner=${primaries[2]:-}
wname=$(name_on "$owner" wait) || die "no name on node $owner"
port=${RLK_CLUSTER_PORTS[$owner]}
bg "$work/a.out" "$work/a.err" -u "$seed" run "$wname" -t 10s -- \
  sh -c 'touch "$1/a-ran"; while [ ! -e "$1/go" ]; do sleep 0.01; done' sh "$work"
apid=$BGPID
wait_until $((10 * SLOW)) test -e "$work/a-ran" || bad "the first run did not start its command"
bg "$work/b.out" "$work/b.err" -u "$seed" run "$wname" -t 10s -w 60s -- touch "$work/b-ran"
bpid=$BGPID
in_line() { $RLK_WRAP "$bin" -u "$seed" status "$wname" 2>/dev/null | grep -q '^waiting: [1-9]'; }
if wait_until $((10 * SLOW)) in_line; then ok "the second run waits in line"
else bad "the second run is not in line" "$(cat "$work/b.err")"; fi
expect_eq "the second run's command has not run while the first holds" \
  "$(test -e "$work/b-ran" && echo ran || echo waits)" waits
touch "$work/go"
reap "$apid" $((20 * SLOW)); expect_eq "the first run exits 0" "$CODE" 0
reap "$bpid" $((20 * SLOW)); expect_eq "the second run exits 0" "$CODE" 0
expect_eq "the second run's command ran after the first" \
  "$(test -e "$work/b-ran" && echo ran || echo missing)" ran
expect_eq "no key $wname left" "$(redis-cli -p "$port" exists "$wname")" 0

# Many runs on one name: never two at once.
xname=$(name_on "$owner" excl) || die "no name on node $owner"
t0=$(now_ms)
run_workers "$PROCS" "$ITERS" "$(bound 120 600)" $RLK_WRAP "$bin" -u "$seed" run -t 5s -w 60s "$xname" -- ||
  bad "the workers did not finish in time"
echo "# $total runs on $xname (node $owner) in $(( $(now_ms) - t0 )) ms"
expect_eq "every resplock run exited 0" "$(head -5 "$work/errors")" ""
expect_eq "the counter is exactly $total" "$(cat "$work/counter")" "$total"
expect_eq "the log has a start and an end per run" "$(wc -l <"$work/log")" $((2 * total))
expect_eq "fences strictly increase, each section's start and end adjacent" "$(log_verdict "$work/log")" ok
expect_eq "the lock is free at the end" "$(redis-cli -p "$port" exists "$xname")" 0

no_ttl=$(for p in "${primaries[@]}"; do
  redis-cli -p "${RLK_CLUSTER_PORTS[$p]}" --scan | while read -r k; do
    [ "$(redis-cli -p "${RLK_CLUSTER_PORTS[$p]}" pttl "$k")" = -1 ] && echo "$k"; done
done)
expect_eq "every key left behind has a TTL" "$no_ttl" ""

finish
