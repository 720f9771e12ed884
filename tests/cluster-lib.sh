# SPDX-License-Identifier: BSD-3-Clause
# A Redis Cluster of 3 primaries and 3 replicas on free loopback ports, for
# test scripts: the shell twin of tests/cluster.[ch].  Source it after
# tests/redis-lib.sh; needs bash and Linux (/proc).  Nodes are numbered
# 0..5 in the order they were started.
#
#   rlk_cluster_start DIR [NODE_TIMEOUT_MS]
#       starts six nodes (files in DIR/node0..node5; node timeout 2000 ms
#       by default), makes them one cluster with
#       `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`
#       and waits until it is ready.  Sets RLK_CLUSTER_PORTS and
#       RLK_CLUSTER_PIDS (by node).  On failure nothing is left running.
#   rlk_cluster_wait_ready [SECONDS]
#       until every running, unpaused node says cluster_state:ok with all
#       16384 slots assigned and ok, agrees with the others on which node
#       serves which slot (a running primary not seen failing) and on
#       every running node's role (a replica's primary included), lists
#       every such node as online in CLUSTER SHARDS, and (a replica) has
#       its link to its primary up.  Why it was not is in
#       RLK_CLUSTER_WHY.
#   rlk_cluster_node_of_port PORT, rlk_cluster_owner SLOT,
#   rlk_cluster_replica_of NODE
#       print a node number (owner: the primary serving SLOT).
#   rlk_cluster_kill NODE         kill -9, reaped
#   rlk_cluster_pause NODE, rlk_cluster_resume NODE
#                                 SIGSTOP / SIGCONT, once the kernel shows it
#   rlk_cluster_wait_primary NODE [SECONDS]
#       until NODE is a primary serving slots and the cluster is ready.
#   rlk_cluster_stop              kills every node (their data is throwaway)
#
# A script that sources it needs a server: without one it skips (exit
# 77), or fails with RLK_REQUIRE_SERVER set (rlk_redis_need_server).

rlk_redis_need_server

RLK_CLUSTER_PORTS=() RLK_CLUSTER_PIDS=() RLK_CLUSTER_STATE=() RLK_CLUSTER_WHY=

_rlk_cluster_live() { [ "${RLK_CLUSTER_STATE[$1]:-}" = up ]; }

_rlk_cluster_cli() { redis-cli -p "${RLK_CLUSTER_PORTS[$1]}" "${@:2}" 2>/dev/null | tr -d '\r'; }

# rlk_cluster_start DIR [NODE-TIMEOUT-MS]: the cluster, started once
# more on other ports when its nodes did not join (redis-cli --cluster
# create waits 60 s for them: a bus connection of a node that never came
# up on a loaded machine), saying so on stderr.
rlk_cluster_start() {
  _rlk_cluster_start_once "$@" && return 0
  echo "cluster: not formed; started again on other ports, in $1/again" >&2
  mkdir -p "$1/again" && _rlk_cluster_start_once "$1/again" "${@:2}"
}

_rlk_cluster_start_once() {
  local dir=$1 timeout=${2:-2000} i bus addrs=() attempt started
  RLK_CLUSTER_PORTS=() RLK_CLUSTER_PIDS=() RLK_CLUSTER_STATE=()
  for i in 0 1 2 3 4 5; do
    # The bus port is chosen too: port + 10000 may be taken or too big.
    # A port nobody listens on may still be the local end of a connection
    # (binding it fails): then every try of rlk_redis_start fails, and
    # another bus port is chosen.
    # A replica syncs at once (no 5 s wait for a shared diskless sync)
    # and its primary pings it every second, so every node soon sees it
    # online; replicas fail over however long their link was down (tests
    # pause nodes) and stay with their primary.
    started=0
    for attempt in 1 2 3 4; do
      bus=$(rlk_free_port) || break
      if rlk_redis_start "node$i" "$dir" --cluster-enabled yes --cluster-config-file nodes.conf \
           --cluster-node-timeout "$timeout" --cluster-port "$bus" \
           --cluster-replica-validity-factor 0 --cluster-allow-replica-migration no \
           --repl-diskless-sync-delay 0 --repl-ping-replica-period 1; then
        started=1; break
      fi
    done
    [ "$started" = 1 ] || { echo "cluster: node $i did not start" >&2; rlk_cluster_stop; return 1; }
    RLK_CLUSTER_PORTS+=("$RLK_REDIS_PORT") RLK_CLUSTER_PIDS+=("$RLK_REDIS_PID")
    RLK_CLUSTER_STATE+=(up) addrs+=("127.0.0.1:$RLK_REDIS_PORT")
  done
  if ! timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
       >"$dir/cluster-create.log" 2>&1; then
    echo "cluster: redis-cli --cluster create failed:" >&2
    tail -n 20 "$dir/cluster-create.log" >&2
    rlk_cluster_stop; return 1
  fi
  rlk_cluster_wait_ready 30 || { rlk_cluster_stop; return 1; }
}

# One look: 0 ready, 1 not (RLK_CLUSTER_WHY says why).
rlk_cluster_ready_once() {
  local i live=" " first= first_roles= roles summary bad health
  for i in "${!RLK_CLUSTER_PORTS[@]}"; do
    _rlk_cluster_live "$i" && live+="${RLK_CLUSTER_PORTS[$i]} "
  done
  for i in "${!RLK_CLUSTER_PORTS[@]}"; do
    _rlk_cluster_live "$i" || continue
    summary=$(_rlk_cluster_cli "$i" cluster info)
    if ! grep -qx 'cluster_state:ok' <<<"$summary" ||
       ! grep -qx 'cluster_slots_assigned:16384' <<<"$summary" ||
       ! grep -qx 'cluster_slots_ok:16384' <<<"$summary"; then
      RLK_CLUSTER_WHY="node $i: $(grep -m1 cluster_state <<<"$summary")"; return 1
    fi
    # CLUSTER NODES: "id ip:port@bus flags master ... slot-ranges".
    summary=$(_rlk_cluster_cli "$i" cluster nodes)
    bad=$(awk -v live="$live" '{
        split($2, a, "[:@]"); port = a[2]; up = index(live, " " port " ") > 0; slots = 0
        for (k = 9; k <= NF; k++) if (substr($k, 1, 1) != "[") slots = 1
        if (up && $3 ~ /(^|,)fail\??(,|$)/) { print "port " port " seen failing"; exit }
        if (slots && (!up || $3 !~ /master/)) { print "slots served by port " port; exit }
      }' <<<"$summary")
    [ -z "$bad" ] || { RLK_CLUSTER_WHY="node $i: $bad"; return 1; }
    summary=$(awk '{ split($2, a, "[:@]"); s = ""
        for (k = 9; k <= NF; k++) if (substr($k, 1, 1) != "[") s = s " " $k
        if (s != "") print a[2] s }' <<<"$summary" | sort)
    [ -n "$first" ] || first=$summary
    [ "$summary" = "$first" ] || { RLK_CLUSTER_WHY="node $i: other slot owners"; return 1; }
    # Every live node's role, and a replica's primary, as all of them say
    # (a replica's is told by gossip, after it replicates already).
    roles=$(_rlk_cluster_cli "$i" cluster nodes | awk -v live="$live" '
        { split($2, a, "[:@]"); port[NR] = a[2]; id[$1] = a[2]; flags[NR] = $3; master[NR] = $4 }
        END {
          for (k = 1; k <= NR; k++) {
            if (!index(live, " " port[k] " ")) continue
            if (flags[k] ~ /master/) print port[k], "primary"
            else print port[k], "replica of", (master[k] in id) ? id[master[k]] : "?"
          }
        }' | sort)
    [ -n "$first_roles" ] || first_roles=$roles
    [ "$roles" = "$first_roles" ] || { RLK_CLUSTER_WHY="node $i: other roles"; return 1; }
    # CLUSTER SHARDS: every live node listed, online (not loading).
    health=$(_rlk_cluster_cli "$i" cluster shards |
             awk 'prev == "port" { port = $0 } prev == "health" { print port, $0 } { prev = $0 }')
    for bad in $live; do
      grep -qx "$bad online" <<<"$health" ||
        { RLK_CLUSTER_WHY="node $i: port $bad not online in CLUSTER SHARDS"; return 1; }
    done
    summary=$(_rlk_cluster_cli "$i" info replication)
    if grep -qx 'role:slave' <<<"$summary" && ! grep -qx 'master_link_status:up' <<<"$summary"
    then
      RLK_CLUSTER_WHY="node $i: link to its primary down"; return 1
    fi
  done
  [ "$live" != " " ] || { RLK_CLUSTER_WHY="no node is running"; return 1; }
}

rlk_cluster_wait_ready() {
  local deadline=$((SECONDS + ${1:-30}))
  until rlk_cluster_ready_once; do
    if [ $SECONDS -ge $deadline ]; then
      echo "cluster: not ready in time: $RLK_CLUSTER_WHY" >&2; return 1
    fi
    sleep 0.05
  done
}

rlk_cluster_node_of_port() {
  local i
  for i in "${!RLK_CLUSTER_PORTS[@]}"; do
    [ "${RLK_CLUSTER_PORTS[$i]}" = "$1" ] && { echo "$i"; return 0; }
  done
  return 1
}

# CLUSTER NODES of the first live node.
_rlk_cluster_nodes() {
  local i
  for i in "${!RLK_CLUSTER_PORTS[@]}"; do
    _rlk_cluster_live "$i" && { _rlk_cluster_cli "$i" cluster nodes; return 0; }
  done
  return 1
}

rlk_cluster_owner() {
  local port
  port=$(_rlk_cluster_nodes | awk -v s="$1" '{
      split($2, a, "[:@]")
      for (k = 9; k <= NF; k++) {
        if (substr($k, 1, 1) == "[") continue
        n = split($k, r, "-"); lo = r[1] + 0; hi = (n > 1 ? r[2] : r[1]) + 0
        if (s + 0 >= lo && s + 0 <= hi) { print a[2]; exit }
      }
    }')
  [ -n "$port" ] && rlk_cluster_node_of_port "$port"
}

rlk_cluster_replica_of() {
  local id port
  id=$(_rlk_cluster_cli "$1" cluster myid)
  port=$(_rlk_cluster_nodes | awk -v id="$id" '$4 == id { split($2, a, "[:@]"); print a[2]; exit }')
  [ -n "$port" ] && rlk_cluster_node_of_port "$port"
}

rlk_cluster_kill() {
  rlk_redis_kill "${RLK_CLUSTER_PIDS[$1]}" KILL
  RLK_CLUSTER_STATE[$1]=killed
}

# Waits until /proc shows process $1 stopped (T) or not (want "run").
_rlk_cluster_wait_state() {
  local deadline=$((SECONDS + 10)) st
  while [ $SECONDS -lt $deadline ]; do
    st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    if [ "$2" = stop ]; then [ "$st" = T ] && return 0; else [ "$st" != T ] && return 0; fi
    sleep 0.01
  done
  return 1
}

rlk_cluster_pause() {
  kill -s STOP "${RLK_CLUSTER_PIDS[$1]}" && _rlk_cluster_wait_state "${RLK_CLUSTER_PIDS[$1]}" stop &&
    RLK_CLUSTER_STATE[$1]=paused
}

rlk_cluster_resume() {
  kill -s CONT "${RLK_CLUSTER_PIDS[$1]}" && _rlk_cluster_wait_state "${RLK_CLUSTER_PIDS[$1]}" run &&
    RLK_CLUSTER_STATE[$1]=up
}

rlk_cluster_wait_primary() {
  local deadline=$((SECONDS + ${2:-30})) port=${RLK_CLUSTER_PORTS[$1]}
  until _rlk_cluster_cli "$1" info replication | grep -qx 'role:master' &&
        _rlk_cluster_cli "$1" cluster nodes | awk '$3 ~ /myself/ && NF > 8 { f = 1 } END { exit !f }'
  do
    if [ $SECONDS -ge $deadline ]; then
      echo "cluster: node $1 (port $port) not a primary in time" >&2; return 1
    fi
    sleep 0.05
  done
  rlk_cluster_wait_ready $((deadline - SECONDS > 0 ? deadline - SECONDS : 1))
}

rlk_cluster_stop() {
  local i
  for i in "${!RLK_CLUSTER_PIDS[@]}"; do
    [ "${RLK_CLUSTER_STATE[$i]}" = killed ] || rlk_redis_kill "${RLK_CLUSTER_PIDS[$i]}" KILL
    RLK_CLUSTER_STATE[$i]=killed
  done
}
