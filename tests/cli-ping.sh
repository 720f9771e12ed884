#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock ping against real servers: plain TCP, IPv6, Unix socket, a
# password, TLS (verified, mutual, insecure) and every TLS
# misconfiguration, each with its exit code and a one-line reason.
set -u
RLK_WRAP=${RLK_WRAP:-}
. "$top_srcdir/tests/redis-lib.sh"
rlk_redis_need_server
bin="$top_builddir/src/resplock"
work=$(mktemp -d)
trap 'rlk_redis_stop_all; rm -rf "$work"' EXIT
pass=0 fail=0

# check NAME EXPECTED-EXIT STDOUT-REGEX STDERR-REGEX -- resplock args...
check() {
  local name=$1 want=$2 out_re=$3 err_re=$4; shift 5
  local code
  $RLK_WRAP "$bin" "$@" >"$work/out" 2>"$work/err"
  code=$?
  if [ "$code" != "$want" ]; then
    echo "FAIL $name: exit $code, want $want"; sed 's/^/  out: /' "$work/out"; sed 's/^/  err: /' "$work/err"
    fail=$((fail + 1)); return
  fi
  if [ -n "$out_re" ] && ! grep -Eq "$out_re" "$work/out"; then
    echo "FAIL $name: stdout does not match /$out_re/"; sed 's/^/  out: /' "$work/out"
    fail=$((fail + 1)); return
  fi
  if [ -n "$err_re" ] && ! grep -Eq "$err_re" "$work/err"; then
    echo "FAIL $name: stderr does not match /$err_re/"; sed 's/^/  err: /' "$work/err"
    fail=$((fail + 1)); return
  fi
  # A failure is explained in one line (valgrind's own lines aside).
  if [ "$want" != 0 ] && [ "$want" != 64 ] && [ "$(grep -vc '^==' "$work/err")" != 1 ]; then
    echo "FAIL $name: stderr is not one line"; sed 's/^/  err: /' "$work/err"
    fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

certs="$work/certs"
bash "$top_srcdir/tests/gen-certs.sh" "$certs" >/dev/null || { echo "gen-certs.sh failed"; echo "0 passed, 1 failed"; exit 1; }

rlk_redis_start plain "$work" --unixsocket "$work/redis.sock" --unixsocketperm 700 || { echo "no redis-server"; echo "0 passed, 1 failed"; exit 1; }
p=$RLK_REDIS_PORT
check "plain TCP" 0 '^protocol: +RESP3' '' -- -u "redis://127.0.0.1:$p" ping
# The server and version HELLO gave: what INFO server says (Valkey says
# "valkey", not the Redis version it claims for compatibility).
ident=$(rlk_redis_identity "$p")
check "plain shows server and version (INFO server: '$ident')" 0 "^server: +${ident//./\\.}\$" '' -- -u "redis://127.0.0.1:$p" ping
check "plain: no TLS, default user, round trip" 0 'round trip: [0-9.]+ ms' '' -- -u "redis://127.0.0.1:$p" ping
REDIS_URL="redis://127.0.0.1:$p" check "REDIS_URL is the default" 0 "address: +127\.0\.0\.1:$p" '' -- ping
check "unix socket" 0 "address: +$work/redis.sock" '' -- -u "unix://$work/redis.sock" ping
check "options after the command" 0 '^protocol' '' -- ping -u "redis://127.0.0.1:$p"
redis-cli -p "$p" ACL SETUSER alice on '>s3cret' '~*' '+@all' >/dev/null
check "ACL user" 0 '^user: +alice' '' -- -u "redis://alice:s3cret@127.0.0.1:$p" ping
REDIS_URL="redis://alice:nope@127.0.0.1:$p" check "wrong password" 69 '' '^resplock: authentication failed: WRONGPASS' -- ping
if grep -q nope "$work/err"; then echo "FAIL the password appears in the message"; fail=$((fail + 1)); fi
check "connection refused" 69 '' 'Connection refused' -- -u "redis://127.0.0.1:1" ping
check "bad URL: a usage error" 64 '' '^resplock: URL' -- -u "http://127.0.0.1" ping
check "unknown option" 64 '' "unknown option" -- ping --nope
check "bad timeout" 64 '' "bad --timeout" -- -T 5parsecs ping
check "usage: extra argument" 64 '' "no arguments" -- ping extra
check "--version" 0 '^resplock [0-9]' '' -- --version
check "--version names the TLS library" 0 '^TLS: (OpenSSL|not compiled in)' '' -- --version
check "--help" 0 'Exit codes' '' -- --help

if "$bin" --version | grep -q '^TLS: not compiled in'; then
  # Built without OpenSSL: every rediss:// URL fails, clearly, at once,
  # as a configuration error.
  check "TLS not compiled in" 78 '' '^resplock: TLS support not compiled in' -- -u "rediss://127.0.0.1:$p" ping
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ]; exit
fi
rlk_redis_start_tls tls "$work" "$certs" || { echo "no TLS redis-server"; echo "$pass passed, $((fail + 1)) failed"; exit 1; }
t=$RLK_REDIS_PORT
check "TLS verified" 0 '^tls: +TLSv1\.[23] ' '' -- -u "rediss://127.0.0.1:$t" --tls-ca "$certs/ca.crt" ping
check "TLS with a CA directory" 0 '^tls: +TLSv1' '' -- -u "rediss://127.0.0.1:$t" --tls-ca-dir "$certs/cadir" ping
# The certificate's DNS name, checked without a name to resolve.
check "TLS by host name" 0 '^tls: +TLSv1' '' -- -u "rediss://127.0.0.1:$t" --tls-ca "$certs/ca.crt" --tls-server-name redis.resplock.test ping
check "TLS wrong CA" 69 '' '^resplock: TLS: certificate verify failed' -- -u "rediss://127.0.0.1:$t" --tls-ca "$certs/other-ca.crt" ping
check "TLS wrong server name" 69 '' '^resplock: TLS: certificate verify failed: .*(hostname|mismatch)' -- -u "rediss://127.0.0.1:$t" --tls-ca "$certs/ca.crt" --tls-server-name wrong.example ping
check "TLS insecure" 0 'NOT verified' 'warning: --tls-insecure' -- -u "rediss://127.0.0.1:$t" --tls-ca "$certs/other-ca.crt" --tls-insecure ping
check "plaintext against the TLS port" 69 '' '^resplock: ' -- -T 2s -u "redis://127.0.0.1:$t" ping
check "TLS against the plain port" 69 '' '^resplock: TLS' -- -T 2s -u "rediss://127.0.0.1:$p" --tls-ca "$certs/ca.crt" ping
check "TLS CA file missing" 69 '' '^resplock: TLS.*nosuch' -- -u "rediss://127.0.0.1:$t" --tls-ca "$work/nosuch.pem" ping

start_tls() { # a failure to start counts, never skips
  rlk_redis_start_tls "$@" && return 0
  echo "FAIL could not start the TLS server '$1'"; fail=$((fail + 1)); return 1
}
if start_tls wronghost "$work" "$certs" --tls-cert-file "$certs/wrong-host.crt" --tls-key-file "$certs/wrong-host.key"; then
  check "TLS certificate for another host" 69 '' '^resplock: TLS: certificate verify failed: .*(hostname|mismatch)' -- -u "rediss://127.0.0.1:$RLK_REDIS_PORT" --tls-ca "$certs/ca.crt" ping
fi
if start_tls expired "$work" "$certs" --tls-cert-file "$certs/expired.crt" --tls-key-file "$certs/expired.key"; then
  check "TLS expired certificate" 69 '' '^resplock: TLS: certificate verify failed: .*expired' -- -u "rediss://127.0.0.1:$RLK_REDIS_PORT" --tls-ca "$certs/ca.crt" ping
fi
if start_tls mutual "$work" "$certs" --tls-auth-clients yes; then
  m=$RLK_REDIS_PORT
  check "mutual TLS" 0 '^tls: +TLSv1' '' -- -u "rediss://127.0.0.1:$m" --tls-ca "$certs/ca.crt" --tls-cert "$certs/client.crt" --tls-key "$certs/client.key" ping
  check "mutual TLS without a client certificate" 69 '' 'TLS.*certificate required' -- -u "rediss://127.0.0.1:$m" --tls-ca "$certs/ca.crt" ping
  check "mutual TLS with a certificate from another CA" 69 '' 'TLS' -- -u "rediss://127.0.0.1:$m" --tls-ca "$certs/ca.crt" --tls-cert "$certs/other-client.crt" --tls-key "$certs/other-client.key" ping
fi

# A server flooding push messages (tests/test_conn serves one): -T holds
# all the same.
coproc FLOOD { exec "$top_builddir/tests/test_conn" --serve-flood; }
if read -r -t 10 fport <&"${FLOOD[0]}"; then
  start=$(date +%s%N)
  check "push flood: -T 2s ping ends" 69 '' 'timed out' -- -T 2s -u "redis://127.0.0.1:$fport" ping
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  if [ -n "$RLK_WRAP" ]; then limit=12000; else limit=3000; fi
  if [ "$took" -lt "$limit" ]; then
    echo "ok   push flood: ended in $took ms"; pass=$((pass + 1))
  else
    echo "FAIL push flood: took $took ms (limit $limit)"; fail=$((fail + 1))
  fi
  eval "exec ${FLOOD[1]}>&-"
  wait "$FLOOD_PID"
else
  echo "FAIL push flood: the flooding server did not start"; fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
