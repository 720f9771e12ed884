#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock ping and status on a real Redis Cluster (3 primaries, 3
# replicas, tests/cluster-lib.sh): ping lists every node with its role,
# its slots, its health and a PING of its own, the primaries' slots
# covering 0-16383 once; CLUSTER SLOTS where CLUSTER SHARDS is refused;
# status names the node serving the name's slot (as CLUSTER KEYSLOT and
# CLUSTER NODES say) and reads the lock there; after a kill -9 of a
# primary, ping shows it failed and not answering, its replica promoted
# with its slots, and status names the new primary.  On a server that is
# no cluster, neither says anything of one.
. "$top_srcdir/tests/cli-lock-lib.sh"
. "$top_srcdir/tests/cluster-lib.sh"
trap 'rlk_cluster_stop; rlk_cleanup' EXIT

rlk_cluster_start "$work/cluster" || die "the cluster did not start"
ports=("${RLK_CLUSTER_PORTS[@]}")
ok "cluster started: ${ports[*]}"

# The line of the node at PORT in the last ping's output.
node_line() { grep -E "^node: +127\.0\.0\.1:$1 " "$work/out"; }
# FIELD=value of the node at PORT ("" when absent).
field() { node_line "$1" | grep -oE " $2=[^ ]*" | head -n1 | cut -d= -f2-; }
# A node's slot ranges as CLUSTER NODES gives them, joined by commas
# (importing and migrating slots, in brackets, left out).
nodes_ranges() {
  _rlk_cluster_cli "$1" cluster nodes | awk -v p="$2" '{ split($2, a, "[:@]"); if (a[2] != p) next
      s = ""; for (k = 9; k <= NF; k++) if (substr($k, 1, 1) != "[") s = s (s == "" ? "" : ",") $k
      print s }'
}
# The port of a replica's primary, as the replica says (INFO replication).
primary_port() { _rlk_cluster_cli "$1" info replication | sed -n 's/^master_port://p'; }

# check_topology SEED LIVE-NODES...: the last ping's output lists the
# nodes as CLUSTER NODES and INFO replication of SEED and of each live
# node say, and the primaries' ranges cover 0-16383 once.
check_topology() {
  local seed=$1 i p role want got ranges="" problems=() n; shift
  n=$(grep -cE '^node: ' "$work/out")
  for i in "$@"; do
    p=${ports[$i]}
    [ "$(node_line "$p" | wc -l)" = 1 ] || { problems+=("port $p listed $(node_line "$p" | wc -l) times"); continue; }
    role=$(_rlk_cluster_cli "$i" info replication | sed -n 's/^role://p')
    if [ "$role" = master ]; then
      node_line "$p" | grep -qE "^node: +127\.0\.0\.1:$p primary " || problems+=("port $p: not shown as a primary")
      want=$(nodes_ranges "$seed" "$p") got=$(field "$p" slots)
      [ -n "$want" ] || want=none
      [ "$got" = "$want" ] || problems+=("port $p: slots=$got, CLUSTER NODES says $want")
      [ "$got" = none ] || ranges+="${got//,/ } "
    else
      want=$(primary_port "$i")
      node_line "$p" | grep -qE "^node: +127\.0\.0\.1:$p replica of=127\.0\.0\.1:$want " ||
        problems+=("port $p: not shown as a replica of port $want")
    fi
    [ "$(field "$p" health)" = online ] || problems+=("port $p: health=$(field "$p" health)")
    field "$p" ping | grep -qE '^[0-9]+\.[0-9]{3}ms$' || problems+=("port $p: ping=$(field "$p" ping)")
  done
  # The ranges, sorted, follow each other from 0 to 16383.
  local next=0 r lo hi
  for r in $(tr ' ' '\n' <<<"$ranges" | sed '/^$/d' | sort -t- -k1,1n); do
    lo=${r%-*} hi=${r#*-}
    [ "$lo" = "$next" ] || problems+=("range $r: slot $next expected first")
    next=$((hi + 1))
  done
  [ "$next" = 16384 ] || problems+=("the primaries' ranges end before 16383 ($next)")
  echo "${problems[@]/#/$'\n'  }"
  [ "${#problems[@]}" = 0 ]
}

# ------------------------------------------------------------ ping
# From a primary and from a replica: the same six nodes.
for seed in "$(rlk_cluster_owner 0)" "$(rlk_cluster_replica_of "$(rlk_cluster_owner 0)")"; do
  role=$(_rlk_cluster_cli "$seed" info replication | sed -n 's/^role://p')
  if check "ping from node $seed ($role): exit 0, the cluster said" 0 \
       '^cluster: +6 nodes, 16384 of 16384 slots served by 3 primaries \(CLUSTER SHARDS\)$' '' \
       -- -u "redis://127.0.0.1:${ports[$seed]}" ping; then
    expect_eq "ping from node $seed: six node lines" "$(grep -cE '^node: ' "$work/out")" 6
    why=$(check_topology "$seed" 0 1 2 3 4 5) && ok "ping from node $seed: roles, slots, health, round trips" ||
      bad "ping from node $seed: the topology" "$why" "$(cat "$work/out")"
    expect_match "ping from node $seed: the server's own lines too" "$(cat "$work/out")" '^round trip: [0-9.]+ ms'
  fi
done

# Where CLUSTER SHARDS is refused (an ACL user without it), CLUSTER SLOTS:
# the same nodes and slots, health not said.  The user exists on every
# node: each one is pinged with it.
for i in 0 1 2 3 4 5; do
  _rlk_cluster_cli "$i" acl setuser noshards on '>pw' '~*' '&*' '+@all' '-cluster|shards' >/dev/null
  _rlk_cluster_cli "$i" acl setuser notopo on '>pw' '~*' '&*' '+@all' '-cluster|shards' '-cluster|slots' >/dev/null
done
if check "ping without CLUSTER SHARDS: CLUSTER SLOTS" 0 \
     '^cluster: +6 nodes, 16384 of 16384 slots served by 3 primaries \(CLUSTER SLOTS\)$' '' \
     -- -u "redis://noshards:pw@127.0.0.1:${ports[0]}" ping; then
  problems=
  for i in 0 1 2 3 4 5; do
    p=${ports[$i]}
    [ "$(field "$p" health)" = unknown ] || problems+=" port $p: health=$(field "$p" health)"
    field "$p" ping | grep -qE '^[0-9]+\.[0-9]{3}ms$' || problems+=" port $p: ping=$(field "$p" ping)"
    if [ "$(_rlk_cluster_cli "$i" info replication | sed -n 's/^role://p')" = master ]; then
      [ "$(field "$p" slots)" = "$(nodes_ranges 0 "$p")" ] || problems+=" port $p: slots=$(field "$p" slots)"
    else
      node_line "$p" | grep -qE " replica of=127\.0\.0\.1:$(primary_port "$i") " || problems+=" port $p: not a replica"
    fi
  done
  expect_eq "CLUSTER SLOTS: every node, its slots, no health ($problems)" "$problems" ""
fi
check "ping when neither is allowed: the server answered, the reason said" 0 \
  '^cluster: +yes; the nodes cannot be read: .*NOPERM' '' -- -u "redis://notopo:pw@127.0.0.1:${ports[0]}" ping

# ------------------------------------------------------------ status
# status_on SEED NAME [resplock options]: status names the owner of NAME's
# slot (--prefix included) and exits as the lock is held or not.
status_on() {
  local seed=$1 name=$2 key slot owner want; shift 2
  key=$name
  [ "${1:-}" = --prefix ] && key=$2$name
  slot=$(_rlk_cluster_cli "$seed" cluster keyslot "$key")
  owner=$(rlk_cluster_owner "$slot") || { bad "no owner for slot $slot"; return; }
  want=0
  [ "$(redis-cli -c -p "${ports[$owner]}" exists "$key" | tr -d '\r')" = 1 ] || want=1
  check "status $key from node $seed: node $owner (slot $slot), exit $want" "$want" \
    "^node: +127\\.0\\.0\\.1:${ports[$owner]} \\(slot $slot\\)$" '' \
    -- -u "redis://127.0.0.1:${ports[$seed]}" "$@" status "$name"
}

# Held names on every shard: the lock is read where it lives.
declare -A shard_name=()
for n in $(seq 0 200); do
  slot=$(_rlk_cluster_cli 0 cluster keyslot "job$n")
  o=$(rlk_cluster_owner "$slot")
  [ -n "${shard_name[$o]:-}" ] || shard_name[$o]=job$n
  [ "${#shard_name[@]}" = 3 ] && break
done
expect_eq "names on the three shards (${shard_name[*]})" "${#shard_name[@]}" 3
seed=$(rlk_cluster_owner 0)
for o in "${!shard_name[@]}"; do
  n=${shard_name[$o]}
  redis-cli -c -p "${ports[$o]}" set "$n" rlk:0123456789abcdef0123456789abcdef PX 600000 >/dev/null
  status_on "$seed" "$n" &&
    expect_match "status $n: held, resplock's layout, read on its node" "$(cat "$work/out")" \
      "kind: +simple: resplock's layout"
  status_on "$seed" "free-$n"
done
# A hash tag chooses the slot; --prefix is part of the key.
status_on "$seed" '{job0}:x'
status_on "$seed" job7 --prefix 'app:'
# From a replica too.
status_on "$(rlk_cluster_replica_of "$seed")" "${shard_name[$seed]}"

# ------------------------------------------------------------ failover
# kill -9 of a primary other than the one asked: it is shown failed and
# not answering, its replica primary with its slots.
for i in 0 1 2 3 4 5; do
  [ "$(_rlk_cluster_cli "$i" info replication | sed -n 's/^role://p')" = master ] && [ "$i" != "$seed" ] &&
    { victim=$i; break; }
done
heir=$(rlk_cluster_replica_of "$victim")
victim_slots=$(nodes_ranges "$seed" "${ports[$victim]}")
rlk_cluster_kill "$victim"
if rlk_cluster_wait_primary "$heir" 30; then
  ok "node $victim (port ${ports[$victim]}) killed, node $heir promoted"
  # The seed has heard of the failure (the FAIL message), not only the heir.
  seen_failed() { _rlk_cluster_cli "$seed" cluster nodes | grep -qE " 127\.0\.0\.1:${ports[$victim]}@[0-9]+ [^ ]*fail[ ,]"; }
  wait_until 10 seen_failed || bad "node $seed never marked node $victim failed"
  if check "ping after the failover: exit 0" 0 \
       '^cluster: +6 nodes, 16384 of 16384 slots served by 3 primaries \(CLUSTER SHARDS\)$' '' \
       -- -u "redis://127.0.0.1:${ports[$seed]}" ping; then
    vp=${ports[$victim]}
    expect_match "the killed node: failed, not answering" "$(node_line "$vp")" \
      " health=failed ping=failed: .*(refused|closed)"
    expect_match "the killed node: no slots" "$(node_line "$vp")" " slots=none "
    expect_eq "the promoted node: its slots" "$(field "${ports[$heir]}" slots)" "$victim_slots"
    live=()
    for i in 0 1 2 3 4 5; do [ "$i" = "$victim" ] || live+=("$i"); done
    why=$(check_topology "$seed" "${live[@]}") && ok "the live nodes: roles, slots, health, round trips" ||
      bad "the live nodes" "$why" "$(cat "$work/out")"
  fi
  status_on "$seed" "${shard_name[$victim]}"
else
  bad "node $heir not promoted: $RLK_CLUSTER_WHY"
fi

# ------------------------------------------------------------ no cluster
rlk_redis_start single "$work" || die "no redis-server"
check "ping on a server that is no cluster: no cluster lines" 0 '^round trip' '' \
  -- -u "redis://127.0.0.1:$RLK_REDIS_PORT" ping
expect_eq "ping: no cluster or node line" "$(grep -cE '^(cluster|node):' "$work/out")" 0
check "status on a server that is no cluster: no node line" 1 '^held: +no$' '' \
  -- -u "redis://127.0.0.1:$RLK_REDIS_PORT" status job0
expect_eq "status: no node line" "$(grep -cE '^node:' "$work/out")" 0

finish
