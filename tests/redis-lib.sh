# SPDX-License-Identifier: BSD-3-Clause
# Starting and stopping throwaway redis-server processes on free loopback
# ports, for test scripts and the demo.  Source it; needs bash.
#
#   rlk_redis_start NAME DIR [extra redis-server args...]
#       starts a server with its files in DIR/NAME; sets RLK_REDIS_PORT and
#       RLK_REDIS_PID; waits (with a deadline) until it answers PING.
#   rlk_redis_stop_all
#       stops every server this shell started.
#   rlk_redis_identity PORT
#       what the server on PORT says it is (INFO server), as "NAME
#       VERSION": "valkey" with valkey_version where it has server_name
#       valkey or a valkey_version line, else "redis" with redis_version.
#   rlk_redis_need_server
#       for a test that needs a server: returns when the server program is
#       there; else the script ends, as automake reads it: exit 77 (SKIP)
#       with why on stdout, or, when RLK_REQUIRE_SERVER is set (not empty,
#       not 0), exit 99 (ERROR).
#
# The server is the one the test programs start (tests/server.h):
# $RLK_REDIS_SERVER when it names one by its path, whose directory then
# goes first on PATH so that the redis-cli beside it is used too (the
# directories `scripts/servers path NAME` prints hold both); else
# redis-server and redis-cli on PATH.

case ${RLK_REDIS_SERVER:-} in
  */*) PATH=${RLK_REDIS_SERVER%/*}:$PATH ;;
esac

RLK_REDIS_PIDS=()

rlk_redis_need_server() {
  local prog=${RLK_REDIS_SERVER:-redis-server} what
  if [[ $prog == */* ]]; then [ -f "$prog" ] && [ -x "$prog" ] && return 0
  else command -v "$prog" >/dev/null 2>&1 && return 0; fi
  if [ -n "${RLK_REDIS_SERVER:-}" ]; then what="RLK_REDIS_SERVER=$RLK_REDIS_SERVER"
  else what="RLK_REDIS_SERVER unset, none on PATH"; fi
  case ${RLK_REQUIRE_SERVER:-0} in
    0) echo "SKIP: redis-server not found ($what); install it: scripts/install-deps, or set RLK_REQUIRE_SERVER=1 to make this a failure"
       exit 77 ;;
  esac
  echo "ERROR: redis-server not found ($what), and RLK_REQUIRE_SERVER is set: a failure; install it: scripts/install-deps"
  echo "0 passed, 1 failed"
  exit 99
}

# A port nobody listens on now.  A server may still take it before us;
# rlk_redis_start tries again with another port when binding fails.
rlk_free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$(( (RANDOM << 15 | RANDOM) % 40000 + 20000 ))
    if ! (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
  return 1
}

# rlk_closed_port
#     sets RLK_CLOSED_PORT to a loopback port that refuses connections for
#     as long as this shell lives: a process keeps a socket bound to it
#     without listening (connecting gets "refused"), and without
#     SO_REUSEADDR, so no server (redis-server sets it) can bind the port
#     meanwhile.  A port that is merely free now may be taken by a server
#     of this or another test, and then a "server unreachable" check
#     reaches it.  The holder ends with rlk_redis_stop_all, or by itself
#     once this shell is gone (it looks twice a second).
rlk_closed_port() {
  local fifo line fd
  fifo=$(mktemp -u) && mkfifo "$fifo" || return 1
  # Opened read-write, which does not wait for a writer: a holder that
  # fails to start is a failure within 10 s, not a hang.
  exec {fd}<>"$fifo"
  /usr/bin/python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
parent = os.getppid()
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % s.getsockname()[1])
while os.getppid() == parent:
    time.sleep(0.5)
' "$fifo" &
  RLK_REDIS_PIDS+=("$!")
  read -r -t 10 -u "$fd" line
  exec {fd}<&-
  rm -f "$fifo"
  RLK_CLOSED_PORT=$line
  [ -n "$RLK_CLOSED_PORT" ]
}

rlk_redis_start() {
  local name=$1 dir=$2; shift 2
  local attempt port pid deadline
  mkdir -p "$dir/$name"
  for attempt in 1 2 3 4 5; do
    port=$(rlk_free_port) || return 1
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir/$name" --logfile "$dir/$name/redis.log" "$@" &
    pid=$!
    deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ]; do
      if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
        RLK_REDIS_PORT=$port RLK_REDIS_PID=$pid
        RLK_REDIS_PIDS+=("$pid")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break   # exited: the port was taken
      sleep 0.05
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  return 1
}

# rlk_redis_start_tls NAME DIR CERTDIR [extra args...]
#     a server with TLS only (no plaintext port), certificates from
#     tests/gen-certs.sh in CERTDIR; sets RLK_REDIS_PORT and RLK_REDIS_PID.
rlk_redis_start_tls() {
  local name=$1 dir=$2 certs=$3; shift 3
  local attempt port pid deadline
  mkdir -p "$dir/$name"
  for attempt in 1 2 3 4 5; do
    port=$(rlk_free_port) || return 1
    redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key" \
      --tls-ca-cert-file "$certs/ca.crt" --tls-auth-clients no \
      --dir "$dir/$name" --logfile "$dir/$name/redis.log" "$@" &
    pid=$!
    deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ]; do
      # Readiness only: the certificate under test may be one that fails.
      if redis-cli --tls --insecure --cert "$certs/client.crt" --key "$certs/client.key" \
           -p "$port" ping 2>/dev/null | grep -q PONG; then
        RLK_REDIS_PORT=$port RLK_REDIS_PID=$pid
        RLK_REDIS_PIDS+=("$pid")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  return 1
}

rlk_redis_stop_all() {
  local pid
  for pid in "${RLK_REDIS_PIDS[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  RLK_REDIS_PIDS=()
}

# rlk_redis_kill PID [SIGNAL]
#     kills a server this shell started (SIGKILL by default: a crash),
#     reaps it, and takes it off the list rlk_redis_stop_all stops.
rlk_redis_kill() {
  local pid=$1 sig=${2:-KILL} p keep=()
  kill -s CONT "$pid" 2>/dev/null   # a stopped server would not die of TERM
  kill -s "$sig" "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  for p in "${RLK_REDIS_PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  RLK_REDIS_PIDS=("${keep[@]}")
}

# rlk_redis_restart NAME DIR PORT PID [extra redis-server args...]
#     kills server PID (SIGKILL, as a crash) and starts a new, empty one on
#     the same PORT with its files in DIR/NAME; sets RLK_REDIS_PORT and
#     RLK_REDIS_PID; waits (with a deadline) until it answers PING.
rlk_redis_restart() {
  local name=$1 dir=$2 port=$3 old=$4; shift 4
  local pid deadline
  rlk_redis_kill "$old"
  mkdir -p "$dir/$name"
  deadline=$((SECONDS + 10))
  while [ $SECONDS -lt $deadline ]; do
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir/$name" --logfile "$dir/$name/redis.log" "$@" &
    pid=$!
    while [ $SECONDS -lt $deadline ]; do
      if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
        RLK_REDIS_PORT=$port RLK_REDIS_PID=$pid
        RLK_REDIS_PIDS+=("$pid")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break   # exited: the port is not free yet
      sleep 0.02
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  return 1
}

rlk_redis_identity() {
  redis-cli -p "$1" INFO server 2>/dev/null | tr -d '\r' | awk -F: '
    $1 == "server_name"    { name = $2 }
    $1 == "valkey_version" { vv = $2 }
    $1 == "redis_version"  { rv = $2 }
    END {
      if (name == "valkey" || vv != "") { if (vv != "") print "valkey", vv }
      else if (rv != "") print "redis", rv
    }'
}
