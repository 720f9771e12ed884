#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock -u given several times on a real 3+3 Redis Cluster: seeds of
# one cluster.  Names on each shard run with three seeds; a seed that is
# a standalone server, or no node of the cluster, is a configuration
# error (exit 78, nothing run); with the first seed's node killed (a
# primary, failed over), the second seed finds the cluster and a name on
# the failed shard runs on its new primary, where one dead URL alone
# cannot connect.  Seeds of two clusters, or the same standalone server
# twice (also as 127.0.0.1 and localhost), exit 78 at once, naming the
# seed, whatever the wait (none, 2 s, 10 min, for ever): a mismatch found
# after the request was sent fails that request, it does not leave it
# waiting for a connection that will never come.  A slot in a MOVED loop
# (each of two primaries says the other serves it, after a bad CLUSTER
# SETSLOT) is tried again while the wait lasts, then exits 69 naming the
# loop.  A seed killed and failed over under a run whose user may not
# read CLUSTER SHARDS (so that later tables, from CLUSTER SLOTS, do not
# name it): the run's lock is kept.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"
trap 'rlk_cluster_stop; rlk_cleanup' EXIT

# A second cluster first (rlk_cluster_start keeps one cluster's arrays;
# rlk_cleanup stops every server it started).
rlk_cluster_start "$work/cluster2" || die "the second cluster did not start"
Q=("${RLK_CLUSTER_PORTS[@]}")
rlk_cluster_start "$work/cluster" || die "the cluster did not start"
P=("${RLK_CLUSTER_PORTS[@]}")
url() { echo "redis://127.0.0.1:$1"; }
slot_of() { redis-cli -p "${P[0]}" cluster keyslot "$1" | tr -d '\r'; }

# A name on each primary's shard (by the cluster's own hash).
declare -A name_of
for n in a b c d e f g h i j k l; do
  o=$(rlk_cluster_owner "$(slot_of "$n")") || continue
  [ -n "${name_of[$o]:-}" ] || name_of[$o]=$n
done
expect_eq "names on three shards" "${#name_of[@]}" 3

for o in "${!name_of[@]}"; do
  n=${name_of[$o]}
  check "run $n (node $o's shard) with three seeds" 0 '^held$' '' -- \
    -u "$(url "${P[3]}")" -u "$(url "${P[4]}")" -u "$(url "${P[5]}")" -T 5s \
    run -w 5s "$n" -- sh -c "echo held"
  got=$(redis-cli -p "${P[$o]}" exists "$n" | tr -d '\r')
  expect_eq "no key $n left on its primary" "$got" 0
done

# A standalone server among the seeds.
rlk_redis_start alone "$work" || die "no standalone server"
check "a standalone seed: exit 78" 78 '' 'not' -- \
  -u "$(url "${P[0]}")" -u "$(url "$RLK_REDIS_PORT")" -T 5s run -w 5s x -- echo ran
check "a standalone first seed: exit 78" 78 '' 'not' -- \
  -u "$(url "$RLK_REDIS_PORT")" -u "$(url "${P[0]}")" -T 5s run -w 5s x -- echo ran

# refused NAME ERR_RE ARGS...: exit 78 within the test's own bound (a
# hang fails, it does not hang the suite), nothing on stdout (nothing
# ran), one line on stderr matching ERR_RE.
limit=$(bound 20 90)
refused() {
  local name=$1 err_re=$2 code; shift 2
  timeout -k 5 "$limit" $RLK_WRAP "$bin" "$@" </dev/null >"$work/out" 2>"$work/err"
  code=$?
  if [ "$code" != 78 ]; then
    [ "$code" = 124 ] && code="124 (still running after ${limit}s)"
    bad "$name: exit $code, want 78" \
      "$(sed 's/^/out: /' "$work/out")" "$(sed 's/^/err: /' "$work/err")"
  elif [ -s "$work/out" ]; then
    bad "$name: something ran" "$(sed 's/^/out: /' "$work/out")"
  elif ! grep -Eq -- "$err_re" "$work/err" || [ "$(grep -vc '^==' "$work/err")" != 1 ]; then
    bad "$name: stderr is not one line matching /$err_re/" "$(sed 's/^/err: /' "$work/err")"
  else
    ok "$name"
  fi
}
# Every form of wait: acquire's for ever (-t is its TTL), none, 2 s, 10
# minutes, run's for ever.
refused_forms() {
  local what=$1 err_re=$2; shift 2
  refused "$what: acquire -t 5s" "$err_re" "$@" -T 5s acquire x -t 5s
  refused "$what: run -n" "$err_re" "$@" -T 5s run -n x -- echo ran
  refused "$what: run -w 2s" "$err_re" "$@" -T 5s run -w 2s x -- echo ran
  refused "$what: run -w 10m" "$err_re" "$@" -T 5s run -w 10m x -- echo ran
  refused "$what: run, waiting for ever" "$err_re" "$@" -T 5s run x -- echo ran
}
A=$RLK_REDIS_PORT
refused_forms "the same standalone server twice" \
  "^resplock: .*seed [12] \(127\.0\.0\.1:$A\) is not a Redis Cluster node" \
  -u "$(url "$A")" -u "$(url "$A")"
refused_forms "the same standalone server as 127.0.0.1 and localhost" \
  "^resplock: .*seed [12] \((127\.0\.0\.1|localhost):$A\) is not a Redis Cluster node" \
  -u "$(url "$A")" -u "redis://localhost:$A"
two="seed [12] \(127\.0\.0\.1:(${P[0]}|${Q[0]})\) is not a node of the cluster of seed [12] \(127\.0\.0\.1:(${P[0]}|${Q[0]})\)"
refused_forms "nodes of two clusters" "^resplock: acquire: $two" -u "$(url "${P[0]}")" -u "$(url "${Q[0]}")"
refused_forms "nodes of two clusters, the other first" "^resplock: acquire: $two" \
  -u "$(url "${Q[0]}")" -u "$(url "${P[0]}")"

# A MOVED loop: the two primaries of a name's slot each say the other
# serves it.  run -w 3s tries again while its wait lasts (the loop ends
# a try, not the wait), then exits 69 naming the loop; -n ends with the
# first try.
nodes=(${!name_of[*]})
lo=${nodes[0]} lo2=${nodes[1]}
ln=${name_of[$lo]} ls=$(slot_of "${name_of[$lo]}")
id_of() { redis-cli -p "${P[$1]}" cluster myid | tr -d '\r'; }
redis-cli -p "${P[$lo]}" cluster setslot "$ls" node "$(id_of "$lo2")" >/dev/null
redis-cli -p "${P[$lo2]}" cluster setslot "$ls" node "$(id_of "$lo")" >/dev/null
moved_to() { redis-cli -p "${P[$1]}" set "$ln" x 2>&1 | tr -d '\r'; }
case "$(moved_to "$lo") / $(moved_to "$lo2")" in
  "MOVED $ls 127.0.0.1:${P[$lo2]} / MOVED $ls 127.0.0.1:${P[$lo]}") ok "slot $ls in a MOVED loop" ;;
  *) bad "slot $ls is not in a MOVED loop: $(moved_to "$lo") / $(moved_to "$lo2")" ;;
esac
loop_re='^resplock: acquire: a redirect loop \(more than 16 MOVED in a row: .*MOVED '"$ls"' 127\.0\.0\.1:'
t0=$(now_ms)
check "a MOVED loop, run -w 3s: exit 69 naming the loop" 69 '' "$loop_re" -- \
  -u "$(url "${P[$lo]}")" -T 5s run -w 3s "$ln" -- echo ran
took=$(( $(now_ms) - t0 ))
# No sooner than the wait's end: the loop did not end it.
expect_gt "the MOVED loop's run waited its 3 s (ms)" "$took" 2999
check "a MOVED loop, run -n: exit 69 naming the loop" 69 '' "$loop_re" -- \
  -u "$(url "${P[$lo]}")" -T 5s run -n "$ln" -- echo ran
# Mended: the slot is its first primary's again, in every node's view.
redis-cli -p "${P[$lo]}" cluster setslot "$ls" node "$(id_of "$lo")" >/dev/null
rlk_cluster_wait_ready 30 || die "the cluster did not agree on slot $ls again"
check "the loop mended: run $ln" 0 '^held$' '' -- \
  -u "$(url "${P[$lo2]}")" -T 5s run -w 5s "$ln" -- sh -c "echo held"

# The first seed's node killed and failed over, while a run holds a lock
# on another shard through seeds given to a user refused CLUSTER SHARDS:
# its tables come from CLUSTER SLOTS, which names no node that serves
# no slot, and the dead seed no longer appears in them after the
# failover.  The seeds were checked against the first table; a later
# table that lacks a seed's node (failed, or removed from the cluster)
# must not make the client refuse everything, its held lock included.
victim=${!name_of[*]}; victim=${victim%% *}   # a primary with a name on its shard
n=${name_of[$victim]}
other=
for o in "${!name_of[@]}"; do [ "$o" = "$victim" ] || other=$o; done
n2=${name_of[$other]}
r=$(rlk_cluster_replica_of "$victim") || die "no replica of node $victim"
for i in 0 1 2 3 4 5; do
  _rlk_cluster_cli "$i" acl setuser noshards on '>pw' '~*' '&*' '+@all' '-cluster|shards' >/dev/null
done
surl() { echo "redis://noshards:pw@127.0.0.1:$1"; }
pttl2() { redis-cli -p "${P[$other]}" pttl "$n2" | tr -d '\r'; }
$RLK_WRAP "$bin" --no-auth-warning -u "$(surl "${P[$victim]}")" -u "$(surl "${P[$other]}")" -T 5s run -t 10s "$n2" -- \
  sh -c "while [ ! -e '$work/done' ]; do sleep 0.05; done" </dev/null >"$work/hold.out" 2>"$work/hold.err" &
hold=$!
BG_PIDS+=("$hold")
has_n2() { [ "$(redis-cli -p "${P[$other]}" exists "$n2" | tr -d '\r')" = 1 ]; }
wait_until "$(bound 10 60)" has_n2 || bad "run $n2 did not take its lock" "$(sed 's/^/err: /' "$work/hold.err")"
rlk_cluster_kill "$victim" || die "kill -9 of node $victim"
rlk_cluster_wait_primary "$r" 60 || die "node $r was not promoted"
gone_from_slots() { ! _rlk_cluster_cli "$r" cluster slots | grep -qx "${P[$victim]}"; }
if wait_until 30 gone_from_slots; then ok "the dead seed is in no CLUSTER SLOTS reply after the failover"
else bad "node $victim still in CLUSTER SLOTS after the failover"; fi
# The lock renewed twice more after that (its PTTL going up), over a
# few of the route's table readings (every 250 ms while a primary is
# down, then at each MOVED or minute).  Its TTL of 10 s outlasts the
# failover, while which every node answers CLUSTERDOWN (a renewal
# refused then is tried again within the lock's validity).
rises=0 last=$(pttl2) end=$(( $(now_ms) + 25000 ))
while [ "$rises" -lt 2 ] && [ "$(now_ms)" -lt "$end" ] && kill -0 "$hold" 2>/dev/null; do
  cur=$(pttl2)
  [[ $cur =~ ^[0-9]+$ && $last =~ ^-?[0-9]+$ ]] && [ "$cur" -gt "$last" ] && rises=$((rises + 1))
  last=$cur
  sleep 0.05
done
expect_eq "after the failover, $n2 renewed twice more through the seeds" "$rises" 2
touch "$work/done"
wait "$hold"; code=$?
if [ "$code" = 0 ] && [ ! -s "$work/hold.err" ]; then ok "that run exits 0, nothing on stderr"
else bad "that run: exit $code, want 0" "$(sed 's/^/err: /' "$work/hold.err")"; fi
check "the first seed dead: the second finds the cluster, $n runs" 0 '^held$' '' -- \
  -u "$(url "${P[$victim]}")" -u "$(url "${P[$r]}")" -T 5s run -w 10s "$n" -- sh -c "echo held"
check "that dead URL alone cannot connect: exit 69" 69 '' '.' -- \
  -u "$(url "${P[$victim]}")" -T 2s run -w 2s "$n" -- echo ran
finish
