#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock over redis+sentinel:// against a primary, a replica and three
# sentinels (quorum 2) started here: ping, run and status reach the
# primary the sentinels name, ping shows what each sentinel names (one
# that is down, too); a name they do not know exits 69 saying
# so; Sentinel URLs refused with other server options; the data node's
# and the sentinel's credentials, each refused when wrong; SENTINEL
# FAILOVER under a running `run`: the command goes on, the lock kept on
# the new primary (the replica had it: the renewal finds the token
# there), and a new run lands there; kill -9 of the primary under a
# running `run` whose lock the replica lacks: reported lost once the
# sentinels promote the replica, the command stopped (exit 75), the new
# primary never given it.
. "$top_srcdir/tests/cli-lock-lib.sh"

rlk_redis_start primary "$work" || die "could not start the primary"
ports=("$RLK_REDIS_PORT") pids=("$RLK_REDIS_PID")
rlk_redis_start replica "$work" --replicaof 127.0.0.1 "${ports[0]}" --repl-diskless-sync-delay 0 ||
  die "could not start the replica"
ports+=("$RLK_REDIS_PORT") pids+=("$RLK_REDIS_PID")

# sentinel ID PORT-OF-PRIMARY NAME [CONFIG-LINE...]: a sentinel started
# with its own writable config (quorum 2), its port appended to sports.
sports=()
sentinel() {
  local dir=$work/sentinel$1 primary=$2 name=$3 attempt port pid
  shift 3
  mkdir -p "$dir"
  for attempt in 1 2 3 4 5; do
    port=$(rlk_free_port) || return 1
    printf '%s\n' "port $port" "bind 127.0.0.1" "dir $dir" "logfile $dir/log" \
      "sentinel monitor $name 127.0.0.1 $primary 2" "sentinel down-after-milliseconds $name 1000" \
      "sentinel failover-timeout $name 5000" "$@" > "$dir/sentinel.conf"
    redis-server "$dir/sentinel.conf" --sentinel &
    pid=$!
    if wait_until 10 sh -c "redis-cli -p $port ${SENTINEL_PW:+-a $SENTINEL_PW --no-auth-warning} PING 2>/dev/null | grep -q PONG"; then
      sports+=("$port")
      RLK_REDIS_PIDS+=("$pid")
      return 0
    fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  return 1
}
for s in 0 1 2; do sentinel "$s" "${ports[0]}" m || die "could not start sentinel $s"; done
url="redis+sentinel://127.0.0.1:${sports[0]},127.0.0.1:${sports[1]},127.0.0.1:${sports[2]}/m"

# named PORT: every sentinel names 127.0.0.1:PORT, sees the other two
# and one replica, and that node says it is the primary.
named() {
  local s
  for s in "${sports[@]}"; do
    [ "$(redis-cli -p "$s" SENTINEL get-master-addr-by-name m | tr '\n' ' ')" = "127.0.0.1 $1 " ] || return 1
    local m
    m=$(redis-cli -p "$s" SENTINEL master m | tr '\n' ' ')
    [[ $m == *"num-other-sentinels 2 "* && $m == *"num-slaves 1 "* ]] || return 1
  done
  redis-cli -p "$1" ROLE | head -1 | grep -qx master
}
linked() { redis-cli -p "$1" INFO replication | grep -q 'master_link_status:up'; }
wait_until 30 named "${ports[0]}" || die "the sentinels did not agree on the primary"
wait_until 10 linked "${ports[1]}" || die "the replica did not link"
P() { redis-cli -p "${ports[0]}" "$@"; }
R() { redis-cli -p "${ports[1]}" "$@"; }

check "ping through the sentinels" 0 "address: +127\.0\.0\.1:${ports[0]}" '' -- -u "$url" ping
expect_match "ping: what each sentinel names" "$(grep -c "names 127.0.0.1:${ports[0]}\$" "$work/out")" '^3$'
expect_match "ping: how many agree" "$(cat "$work/out")" "agreed: +3 of 3 sentinels name 127\.0\.0\.1:${ports[0]} as 'm'"
# One down (a port nobody listens on), listed first: passed over, shown.
down=$(rlk_free_port)
check "ping with a sentinel down" 0 "agreed: +2 of 3 sentinels" '' \
  -- -u "redis+sentinel://127.0.0.1:$down,127.0.0.1:${sports[1]},127.0.0.1:${sports[2]}/m" ping
expect_match "ping: the one down is shown" "$(cat "$work/out")" "127\.0\.0\.1:$down +connect"
check "run: the lock is on the primary" 0 '^rlk:' '' -- -u "$url" run sj -- redis-cli -p "${ports[0]}" GET sj
check "acquire" 0 '^rlk:[0-9a-f]{32}[^ ]* [0-9]+$' '' -- -u "$url" acquire -t 60s sa
tok=$(cut -d' ' -f1 "$work/out")
expect_eq "the primary holds it" "$(P GET sa)" "$tok"
check "status names the primary" 0 "node: +127\.0\.0\.1:${ports[0]} \\(the primary" '' -- -u "$url" status sa
expect_match "status: held" "$(cat "$work/out")" 'held: +yes'
check "release" 0 '' '' -- -u "$url" release sa "$tok"
check "a name the sentinels do not know: exit 69" 69 '' "no primary named 'nosuch'" \
  -- -u "redis+sentinel://127.0.0.1:${sports[0]}/nosuch" ping

check "a Sentinel URL without a name: exit 64" 64 '' "no primary's name" \
  -- -u "redis+sentinel://127.0.0.1:${sports[0]}" run sx -- true
check "with a second -u: exit 64" 64 '' 'lists its sentinels itself' \
  -- -u "$url" -u "redis://127.0.0.1:${ports[0]}" run sx -- true
check "with -a: exit 64" 64 '' 'carries its own user and password' \
  -- -u "$url" -a pw --no-auth-warning run sx -- true

# Credentials: the data node's in the URL, the sentinel's in the query.
rlk_redis_start secure "$work" || die "could not start the secured primary"
secport=$RLK_REDIS_PORT
redis-cli -p "$secport" CONFIG SET requirepass datapw >/dev/null
SENTINEL_PW=spw sentinel 9 "$secport" s2 "requirepass spw" "sentinel auth-pass s2 datapw" ||
  die "could not start the secured sentinel"
secs=${sports[3]}
unset 'sports[3]'
check "credentials: the data node's in the URL, the sentinel's in the query" 0 '^rlk:' '' \
  -- -u "redis+sentinel://:datapw@127.0.0.1:$secs/s2?sentinel_password=spw" run sc \
  -- redis-cli -p "$secport" -a datapw --no-auth-warning GET sc
check "a wrong sentinel password: exit 69, saying so" 69 '' 'WRONGPASS|invalid|auth' \
  -- -T 1s -u "redis+sentinel://:datapw@127.0.0.1:$secs/s2?sentinel_password=bad" run sc -- true
check "a wrong data password: exit 69, saying so" 69 '' 'WRONGPASS|invalid|auth' \
  -- -T 1s -u "redis+sentinel://:bad@127.0.0.1:$secs/s2?sentinel_password=spw" run sc -- true

# failover OLD NEW: the setup is whole again with NEW the primary.
settled() { named "$2" && linked "$1"; }

# SENTINEL FAILOVER under a running command, which keeps its lock.
bg "$work/f.out" "$work/f.err" -u "$url" run -t 8s sf -- \
  sh -c 'touch "$1/started"; until [ -e "$1/go" ]; do sleep 0.05; done' sh "$work"
wait_until 10 test -e "$work/started" || die "the command did not start"
wait_until 10 sh -c "[ \"\$(redis-cli -p ${ports[1]} EXISTS sf)\" = 1 ]" || die "the replica lacks the lock"
redis-cli -p "${sports[0]}" SENTINEL FAILOVER m >/dev/null
wait_until 30 settled "${ports[0]}" "${ports[1]}" || die "the failover did not settle"
ok "failed over to the replica"
# Past the TTL on the new primary: renewed there.
t0=$(now_ms)
renewed() { [ "$(R GET sf)" = "$(P GET sf)" ] && [ -n "$(R GET sf)" ] && [ $(( $(now_ms) - t0 )) -gt 9000 ]; }
wait_until 20 renewed || bad "the lock was not kept on the new primary"
running "$BGPID" && ok "the command still runs after the failover" || bad "the command ended"
check "a new run lands on the new primary" 0 '^rlk:' '' -- -u "$url" run sn -- redis-cli -p "${ports[1]}" GET sn
touch "$work/go"
reap "$BGPID" 20
expect_eq "the command ran to its end" "$CODE" 0; [ "$CODE" = 0 ] || sed 's/^/  /' "$work/f.err"
expect_eq "released on the new primary" "$(R EXISTS sf)" 0

# kill -9 of the primary (node 1 now) under a running command, whose
# lock the replica lacks: the lock is taken with a TTL of 30 s (the
# first renewal 10 s later), then removed from the replica by hand
# (writable for it: what a replica that never received it would hold),
# and the primary killed at once; the sentinels promote the replica
# within a few seconds, well before that renewal could have brought the
# lock back.  The renewal, on the new primary, finds no token: the lock
# is reported lost and the command stopped, and the new primary is never
# given it.
R2() { redis-cli -p "${ports[0]}" "$@"; }
rm -f "$work/started" "$work/go"
bg "$work/l.out" "$work/l.err" -u "$url" run -t 30s sl -- \
  sh -c 'touch "$1/started"; until [ -e "$1/go" ]; do sleep 0.05; done' sh "$work"
wait_until 10 test -e "$work/started" || die "the command did not start"
wait_until 10 sh -c "[ \"\$(redis-cli -p ${ports[0]} EXISTS sl)\" = 1 ]" || die "the replica lacks the lock"
R2 CONFIG SET replica-read-only no >/dev/null
expect_eq "removed from the replica" "$(R2 DEL sl)" 1
kill -9 "${pids[1]}"
wait "${pids[1]}" 2>/dev/null
wait_until 30 sh -c "redis-cli -p ${sports[0]} SENTINEL get-master-addr-by-name m | grep -qx ${ports[0]}" ||
  die "the sentinels did not promote the replica"
ok "the replica was promoted"
reap "$BGPID" 40
expect_eq "the lock is reported lost, the command stopped (exit 75)" "$CODE" 75
expect_match "lost, it says" "$(cat "$work/l.err")" "lock 'sl' lost"
expect_eq "the new primary was never given it" "$(R2 EXISTS sl)" 0
finish
