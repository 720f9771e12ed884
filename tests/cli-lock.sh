#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock run, acquire, release, extend and status against real servers:
# every exit code, the command's environment, descriptors and standard
# streams, signal forwarding, --hold-min, waking on release (RESP3 and
# RESP2), SCRIPT FLUSH, interop with redis-py's Lock, and --help against
# the man page.  The mutual exclusion and the ways a lock is lost are in
# cli-lock-exclusion.sh and cli-lock-failures.sh.
. "$top_srcdir/tests/cli-lock-lib.sh"
man="$top_srcdir/doc/resplock.1"
py=/usr/bin/python3

rlk_redis_start main "$work" --unixsocket "$work/redis.sock" --unixsocketperm 700 ||
  die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
# The server's clock in microseconds (TIME).
server_us() { R TIME | { read -r s; read -r u; echo $((s * 1000000 + u)); }; }
# Conditions to wait on (evaluated at every try).
key_gone() { [ "$(redis-cli -p "${2:-$port}" EXISTS "$1")" = 0 ]; }
subscribed() { [ "$(redis-cli -p "${2:-$port}" PUBSUB NUMSUB "redisson_lock__channel:{$1}" | sed -n 2p)" = 1 ]; }
# in_line NAME URL N: resplock status counts N waiters in NAME's line.
in_line() { "$bin" -u "$2" status "$1" 2>/dev/null | grep -Eq "^waiting: +$3\$"; }
down="redis://127.0.0.1:$closed_port"

# ------------------------------------------------------------ exit codes of run
check "run: the command's exit code" 7 '' '' -- -u "$url" run ec -- sh -c 'exit 7'
expect_eq "run: the lock is released after the command" "$(R EXISTS ec)" 0
check "run: 0 when the command succeeds" 0 '' '' -- -u "$url" run ec -- true
check "run: 128+N when the command dies of signal N (kill -9: 137)" 137 '' '' -- -u "$url" run ec -- sh -c 'kill -9 $$'
expect_eq "run: released after the command died of a signal" "$(R EXISTS ec)" 0
# When exec fails, the child forked from resplock exits by itself.  Under
# valgrind that child is still valgrind's, with resplock's whole heap
# "still reachable", and exits with valgrind's error code instead: these
# three run natively then.
printf '#!/bin/sh\necho should not run\n' >"$work/noexec"; chmod 644 "$work/noexec"
if [ -n "$RLK_WRAP" ]; then echo "# 126/127: natively, not under RLK_WRAP"; fi
RLK_WRAP= check "run: 126 when the command is not executable" 126 '' "cannot run '.*noexec': Permission denied" -- -u "$url" run ec -- "$work/noexec"
RLK_WRAP= check "run: 127 when the command does not exist" 127 '' "cannot run '.*no-such-command': No such file" -- -u "$url" run ec -- "$work/no-such-command"
RLK_WRAP= check "run: 127 when the command is not on PATH" 127 '' "cannot run 'resplock-test-no-such-command'" -- -u "$url" run ec -- resplock-test-no-such-command
expect_eq "run: released after 126/127" "$(R EXISTS ec)" 0
check "run: options after NAME, COMMAND without --" 3 '' '' -- -u "$url" run ec -t 5s sh -c 'exit 3'
check "run: options before NAME" 4 '' '' -- -u "$url" run -t 5s ec -- sh -c 'exit 4'
check "run: global options after the command word" 5 '' '' -- run -u "$url" ec -- sh -c 'exit 5'
check "run: arguments after -- belong to the command" 0 '^-t 1s --bogus$' '' -- -u "$url" run ec -- echo -t 1s --bogus
REDIS_URL=$url check "run: REDIS_URL is the default server" 6 '' '' -- run ec -- sh -c 'exit 6'
check "run over the Unix socket" 0 '^unix$' '' -- -u "unix://$work/redis.sock" run ec -- echo unix

# ---------------------------------------------- a lock held by someone else
us0=$(server_us)
acq=$($RLK_WRAP "$bin" -u "$url" acquire held -t 60s) || bad "acquire held: exit $?"
us1=$(server_us)
expect_match "acquire prints TOKEN FENCE" "$acq" '^rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)? [0-9]+$'
read -r tok fence <<<"$acq"
expect_eq "acquire: the key holds the token" "$(R GET held)" "$tok"
expect_range "acquire: the fence is the server's clock at the acquisition (us)" "$fence" "$us0" "$us1"
expect_eq "acquire: nothing but the lock is written" "$(R KEYS '*held*')" held
expect_range "acquire -t 60s: the key's TTL" "$(R PTTL held)" 55000 60000
check "run -n on a held lock: 1" 1 '' '' -- -u "$url" run -n held -- touch "$work/ran"
expect_eq "run -n on a held lock: the command did not run" "$(test -e "$work/ran" && echo ran)" ""
expect_eq "run -n on a held lock: a skip is silent" "$(grep -v '^==' "$work/err")" ""
check "run -v -n on a held lock: 1" 1 '' '' -- -v -u "$url" run -n held -- true
expect_match "run -v -n on a held lock: says why" "$(cat "$work/err")" "lock 'held' is held by someone else"
check "run -n -E 3 on a held lock: 3" 3 '' '' -- -u "$url" run -n -E 3 held -- true
check "run --conflict-exit-code 0 on a held lock: 0" 0 '' '' -- -u "$url" run -n --conflict-exit-code 0 held -- touch "$work/ran"
expect_eq "... and the command did not run" "$(test -e "$work/ran" && echo ran)" ""
check "run -q -n on a held lock: 1" 1 '' '' -- -q -u "$url" run -n held -- true
expect_eq "run -q: nothing on stderr" "$(grep -v '^==' "$work/err")" ""
check "acquire -n on a held lock: 1" 1 '' '' -- -u "$url" acquire -n held
expect_eq "acquire -n on a held lock: a skip is silent" "$(grep -v '^==' "$work/err")" ""
expect_eq "acquire -n on a held lock: nothing on stdout" "$(cat "$work/out")" ""
t0=$(now_ms)
check "run -w 400ms on a held lock: 1 after the wait" 1 '' '' -- -u "$url" run -w 400ms held -- true
expect_range "run -w 400ms waited 400 ms (elapsed ms)" $(( $(now_ms) - t0 )) 400 $(( 400 + 600 * SLOW ))
# The waiter marked the holder's value "+w" as it joined the line.
expect_eq "the holder's key is intact (marked by the waiter)" "$(R GET held)" "$tok+w"

# ------------------------------------------------------------------ status
check "status of a held lock: 0" 0 '^held: +yes$' '' -- -u "$url" status held
grep -Eq '^ttl: +[0-9]+ ms$' "$work/out" &&
  grep -Eq "^kind: +simple: resplock's layout" "$work/out" && grep -Eq '^waiting: +0$' "$work/out" &&
  ok "status shows kind, ttl and waiters" ||
  bad "status shows kind, ttl and waiters" "$(cat "$work/out")"
check "status of a free lock: 1" 1 '^held: +no$' '' -- -u "$url" status never-taken

# ------------------------------------------------------------------ extend
check "extend TOKEN 90s: 0" 0 '' '' -- -u "$url" extend held "$tok" 90s
expect_range "extend 90s: the TTL" "$(R PTTL held)" 85000 90000
check "extend TOKEN 10s --add: 0" 0 '' '' -- -u "$url" extend held "$tok" 10s --add
expect_range "extend --add 10s: the TTL" "$(R PTTL held)" 95000 100000
check "extend with another token: 1" 1 '' "extend: lock 'held' is held by someone else" -- -u "$url" extend held 0123456789abcdef0123456789abcdef 1s
expect_range "extend with another token: the TTL is unchanged" "$(R PTTL held)" 90000 100000
check "extend -E 4 with another token: 4" 4 '' 'held by someone else' -- -u "$url" extend -E 4 held wrong 1s
check "extend of a free lock: 1" 1 '' "extend: lock 'never-taken' is not held" -- -u "$url" extend never-taken "$tok" 1s
check "extend: bad duration: 64" 64 '' 'bad DURATION' -- -u "$url" extend held "$tok" soon

# ----------------------------------------------------------------- release
check "release with another token: 1" 1 '' "release: lock 'held' is held by someone else" -- -u "$url" release held 0123456789abcdef0123456789abcdef
expect_eq "release with another token: nothing deleted" "$(R GET held)" "$tok+w"
check "release -E 5 with another token: 5" 5 '' 'held by someone else' -- -u "$url" release -E 5 held wrong
check "release with the token: 0" 0 '' '' -- -u "$url" release held "$tok"
expect_eq "release: the key is gone" "$(R EXISTS held)" 0
check "release again with the same token: 1" 1 '' "release: lock 'held' is not held: released already, expired, or never taken" -- -u "$url" release held "$tok"
check "release of a lock never taken: 1" 1 '' "release: lock 'never-taken' is not held" -- -u "$url" release never-taken "$tok"
$RLK_WRAP "$bin" -u "$url" acquire full >/dev/full 2>"$work/err" </dev/null
expect_eq "acquire >/dev/full: 70" "$?" 70
expect_match "acquire >/dev/full: says so" "$(grep -v '^==' "$work/err")" 'cannot write the token'
expect_eq "acquire >/dev/full: the lock nobody has the token of is not left held" "$(R EXISTS full)" 0
R SET no-ttl someone >/dev/null
check "status of a key without a TTL: 0, never expires" 0 '^ttl: +none' '' -- -u "$url" status no-ttl
acq=$($RLK_WRAP "$bin" -u "$url" acquire short -t 100ms); read -r stok _ <<<"$acq"
wait_until 5 key_gone short || bad "acquire -t 100ms: the key did not expire"
check "release of an expired lock: 1" 1 '' "release: lock 'short' is not held" -- -u "$url" release short "$stok"
check "acquire after it expired: 0" 0 '^rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)? [0-9]+$' '' -- -u "$url" acquire short -t 100ms

# ---------------------------------------------------------- usage errors: 64
check "usage: unknown option" 64 '' "unknown option '--bogus'" -- -u "$url" run ul --bogus -- true
check "usage: unknown short option" 64 '' "unknown option '-z'" -- -u "$url" run -z ul -- true
check "usage: option value missing" 64 '' "needs a value" -- -u "$url" run ul -t
check "usage: run without a command" 64 '' 'needs a lock NAME and a COMMAND' -- -u "$url" run ul
check "usage: run with -- and no command" 64 '' 'needs a lock NAME and a COMMAND' -- -u "$url" run ul --
check "usage: run without a name" 64 '' 'needs a lock NAME' -- -u "$url" run
check "usage: bad duration" 64 '' "bad --ttl '5parsecs'" -- -u "$url" run -t 5parsecs ul -- true
check "usage: zero TTL" 64 '' "bad --ttl '0'" -- -u "$url" run -t 0 ul -- true
check "usage: negative TTL" 64 '' "bad --ttl" -- -u "$url" run -t -1s ul -- true
check "usage: bad --wait" 64 '' "bad --wait" -- -u "$url" run -w soon ul -- true
check "usage: bad --hold-min" 64 '' "bad --hold-min" -- -u "$url" run --hold-min 1x ul -- true
check "usage: bad --timeout" 64 '' "bad --timeout" -- -u "$url" -T 0 run ul -- true
check "usage: --kill-after too large for the TTL" 64 '' "--kill-after 2000ms does not fit in --ttl 3000ms" -- -u "$url" run -t 3s --kill-after 2s ul -- touch "$work/ran"
expect_eq "usage error: the command did not run" "$(test -e "$work/ran" && echo ran)" ""
check "--kill-after that fits the TTL" 0 '' '' -- -u "$url" run -t 3s --kill-after 1s ul -- true
check "usage: a TTL too short for any --kill-after" 64 '' "ttl" -- -u "$url" run -t 10ms ul -- true
check "usage: -E out of range" 64 '' "bad --conflict-exit-code '256'" -- -u "$url" run -E 256 ul -- true
check "usage: -E not a number" 64 '' "bad --conflict-exit-code" -- -u "$url" run -E x ul -- true
check "usage: empty lock name" 64 '' "" -- -u "$url" run '' -- true
check "usage: acquire with an extra word" 64 '' 'usage: resplock acquire' -- -u "$url" acquire ul extra
check "usage: release without a token" 64 '' 'usage: resplock release' -- -u "$url" release ul
check "usage: extend without a duration" 64 '' 'usage: resplock extend' -- -u "$url" extend ul tok
check "usage: status without a name" 64 '' 'usage: resplock status' -- -u "$url" status
check "usage: unknown command" 64 '' "unknown command 'frobnicate'" -- -u "$url" frobnicate
check "usage: no command: the usage on stderr" 64 '' '^usage: resplock' --
check "usage errors come before connecting (unreachable server)" 64 '' 'bad --ttl' -- -u "$down" run -t 1y ul -- true
check "usage: extend's bad DURATION before connecting" 64 '' 'bad DURATION' -- -u "$down" extend ul tok soon
check "usage: empty name before connecting" 64 '' 'NAME' -- -u "$down" acquire ''
check "usage: --kill-after before connecting" 64 '' 'does not fit' -- -u "$down" run -t 3s --kill-after 2s ul -- true

# --------------------------------------------------- server unreachable: 69
check "run: server unreachable: 69" 69 '' 'Connection refused' -- -u "$down" run ul -- touch "$work/ran"
expect_eq "server unreachable: the command did not run" "$(test -e "$work/ran" && echo ran)" ""
check "acquire: server unreachable: 69" 69 '' 'Connection refused' -- -u "$down" acquire ul
check "release: server unreachable: 69" 69 '' 'Connection refused' -- -u "$down" release ul tok
check "extend: server unreachable: 69" 69 '' 'Connection refused' -- -u "$down" extend ul tok 1s
check "status: server unreachable: 69" 69 '' 'Connection refused' -- -u "$down" status ul
check "run -n -E 3: server unreachable is still 69" 69 '' 'Connection refused' -- -u "$down" run -n -E 3 ul -- true
if REDISCLI_AUTH=s3cret-pw rlk_redis_start auth "$work" --requirepass s3cret-pw; then
  aport=$RLK_REDIS_PORT
  check "run with the right password" 0 '' '' -- -u "redis://:s3cret-pw@127.0.0.1:$aport" run al -- true
  REDIS_URL="redis://:wrong-pw@127.0.0.1:$aport" check "run: wrong password: 69" 69 '' '^resplock: (connect: )?authentication failed: WRONGPASS' -- run al -- touch "$work/ran"
  expect_eq "wrong password: the command did not run" "$(test -e "$work/ran" && echo ran)" ""
  grep -q wrong-pw "$work/err" && bad "the password appears in the message" "$(cat "$work/err")" || ok "the password is not in the message"
  REDIS_URL="redis://:wrong-pw@127.0.0.1:$aport" check "acquire: wrong password: 69" 69 '' 'authentication failed' -- acquire al
  check "run without the password: 69" 69 '' 'authentication failed|NOAUTH' -- -u "redis://127.0.0.1:$aport" run al -- true
else
  bad "could not start redis-server with requirepass"
fi

# A server that accepts connections and never answers: --timeout bounds
# the wait.
if rlk_redis_start frozen "$work"; then
  fpid=$RLK_REDIS_PID fport=$RLK_REDIS_PORT
  kill -s STOP "$fpid"
  # Under valgrind the bound grows with what starting resplock costs
  # now (measured just before, as loaded as the machine is): a wrapped
  # start on a busy machine took 2 s or more, and the run's own work
  # scales the same way.  Natively the bound stays 1.5 s, well short of
  # the 5 s default that a dropped -T would wait.
  t0=$(now_ms); $RLK_WRAP "$bin" --version >/dev/null 2>&1; t_start=$(( $(now_ms) - t0 ))
  t0=$(now_ms)
  check "run: a server that never answers: 69" 69 '' 'tim' -- -T 500ms -u "redis://127.0.0.1:$fport" run fl -- touch "$work/ran"
  expect_range "run -T 500ms: gives up after the timeout (ms)" $(( $(now_ms) - t0 )) 500 "$(bound 1500 $((2500 + 3 * t_start)))"
  expect_eq "a server that never answers: the command did not run" "$(test -e "$work/ran" && echo ran)" ""
  rlk_redis_kill "$fpid"
else
  bad "could not start redis-server"
fi

# ------------------------------------------------------------------ TLS
tls_rc=69   # --tls against a server that is down: unreachable
"$bin" --version | grep -q '^TLS: not compiled in' && tls_rc=78
if "$bin" --version | grep -q '^TLS: not compiled in'; then
  # Built without OpenSSL: a rediss:// URL fails at once with that reason,
  # before the command runs or anything is sent.  The exit code is the one
  # cli-ping.sh expects for the same error.
  turl="rediss://127.0.0.1:$port" notls_rc=78 notls_re='^resplock: (.*: )?TLS support not compiled in'
  check "run over TLS, not compiled in" "$notls_rc" '' "$notls_re" -- -u "$turl" run tl -- touch "$work/ran-tls"
  expect_eq "run over TLS, not compiled in: the command did not run" "$(test -e "$work/ran-tls" && echo ran)" ""
  check "acquire over TLS, not compiled in" "$notls_rc" '' "$notls_re" -- -u "$turl" acquire tl
  check "release over TLS, not compiled in" "$notls_rc" '' "$notls_re" -- -u "$turl" release tl 0123456789abcdef0123456789abcdef
  expect_eq "over TLS, not compiled in: no key was written" "$(R EXISTS tl)" 0
elif bash "$top_srcdir/tests/gen-certs.sh" "$work/certs" >/dev/null 2>&1 &&
   rlk_redis_start_tls tls "$work" "$work/certs"; then
  turl="rediss://127.0.0.1:$RLK_REDIS_PORT"
  # Under valgrind, on a busy machine, OpenSSL's handshake alone can take
  # more than the 5 s default timeout: this check is of the exit code.
  check "run over TLS" 9 '' '' -- -u "$turl" --tls-ca "$work/certs/ca.crt" -T "$(bound 5s 60s)" run tl -t 1s -- sh -c 'sleep 0.8; exit 9'
  check "run over TLS with the wrong CA: 69" 69 '' 'certificate verify failed' -- -u "$turl" --tls-ca "$work/certs/other-ca.crt" run tl -- true
  acq=$($RLK_WRAP "$bin" -u "$turl" --tls-ca "$work/certs/ca.crt" acquire tl </dev/null); read -r ttok _ <<<"$acq"
  check "release over TLS" 0 '' '' -- -u "$turl" --tls-ca "$work/certs/ca.crt" release tl "$ttok"
else
  bad "could not make certificates or start a TLS redis-server"
fi

# ------------------------------------------------- the command's environment
$RLK_WRAP "$bin" -u "$url" run -t 5s envl -- sh -c \
  'printf "%s\n" "$RESPLOCK_NAME" "$RESPLOCK_TOKEN" "$RESPLOCK_FENCE" "$RESPLOCK_TTL_MS" \
     "$(redis-cli -p '"$port"' GET envl)" \
     "$(redis-cli -p '"$port"' TIME | { read -r s; read -r u; echo $((s * 1000000 + u)); })"' \
  </dev/null >"$work/env" 2>"$work/err"
code=$?
expect_eq "env: run exit" "$code" 0
mapfile -t e <"$work/env"
expect_eq "env: RESPLOCK_NAME" "${e[0]-}" envl
expect_match "env: RESPLOCK_TOKEN is rlk:, 32 hex digits and the facts" "${e[1]-}" '^rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)?$'
expect_eq "env: RESPLOCK_TOKEN is the value of the key" "${e[1]-}" "${e[4]-}"
expect_match "env: RESPLOCK_FENCE is a number" "${e[2]-}" '^[1-9][0-9]*$'
expect_range "env: RESPLOCK_FENCE is the server's clock at the acquisition (us)" "${e[2]-}" "$us1" "${e[5]-0}"
expect_eq "env: RESPLOCK_TTL_MS" "${e[3]-}" 5000
out=$($RLK_WRAP "$bin" -u "$url" run -t 1.5s envl -- sh -c 'echo "$RESPLOCK_TTL_MS $RESPLOCK_FENCE $RESPLOCK_TOKEN"' </dev/null)
read -r ttl2 fence2 tok2 <<<"$out"
expect_eq "env: RESPLOCK_TTL_MS of -t 1.5s" "$ttl2" 1500
expect_gt "env: the next run's fence is higher" "$fence2" "${e[2]-0}"
[ -n "$tok2" ] && [ "$tok2" != "${e[1]-}" ] && ok "env: every run has a new token" || bad "env: every run has a new token" "$tok2"
# Descriptors and the signal mask are those resplock was given, not its own.
sh -c 'ls /proc/$$/fd' </dev/null >"$work/fd-direct" 2>/dev/null
$RLK_WRAP "$bin" -u "$url" run fdl -- sh -c 'ls /proc/$$/fd' </dev/null >"$work/fd-run" 2>/dev/null
expect_eq "the command inherits no descriptor of resplock's (socket, signalfd)" \
  "$(tr '\n' ' ' <"$work/fd-run")" "$(tr '\n' ' ' <"$work/fd-direct")"
# (grep reads its own status: a shell blocks signals while it waits.)
out=$($RLK_WRAP "$bin" -u "$url" run fdl -- grep "^SigBlk" /proc/self/status </dev/null)
expect_match "the command starts with no signal blocked" "$out" '^SigBlk:[[:space:]]+0+$'

# ------------------------------------------------------ standard streams
out=$(printf 'hello\nworld\n' | $RLK_WRAP "$bin" -u "$url" run io -- tr a-z A-Z)
expect_eq "stdin and stdout are the command's" "$out" "HELLO
WORLD"
head -c 1048576 /dev/urandom >"$work/big"
$RLK_WRAP "$bin" -u "$url" run io -- cat <"$work/big" >"$work/big.out" 2>"$work/err"
cmp -s "$work/big" "$work/big.out" && ok "1 MiB of binary data piped through the command" ||
  bad "1 MiB of binary data piped through the command" "$(ls -l "$work/big.out")"
$RLK_WRAP "$bin" -u "$url" run io -- sh -c 'echo to-stderr >&2; echo to-stdout' </dev/null >"$work/out" 2>"$work/err"
grep -qx to-stderr "$work/err" && grep -qx to-stdout "$work/out" && ! grep -q to-stderr "$work/out" &&
  ok "stderr is the command's" || bad "stderr is the command's" "$(cat "$work/out" "$work/err")"

# ------------------------------------------------------ signals forwarded
cat >"$work/sig-child.sh" <<'EOF'
# Writes the name of the signal it gets to $1 and exits with 100 + N.
out=$1 s=
trap 'echo INT >"$out"; kill $s 2>/dev/null; exit 102' INT
trap 'echo HUP >"$out"; kill $s 2>/dev/null; exit 101' HUP
trap 'echo QUIT >"$out"; kill $s 2>/dev/null; exit 103' QUIT
trap 'echo TERM >"$out"; kill $s 2>/dev/null; exit 115' TERM
sleep 60 & s=$!
echo $$ >"$out.ready"
wait $s
echo none >"$out"
EOF
for sig in INT TERM HUP QUIT; do
  case $sig in INT) n=2 ;; HUP) n=1 ;; QUIT) n=3 ;; TERM) n=15 ;; esac
  bg "$work/sig-$sig.out" "$work/sig-$sig.err" -u "$url" run -t 10s "sig$sig" -- sh "$work/sig-child.sh" "$work/sig-$sig"
  pid=$BGPID
  if ! wait_until $((5 * SLOW)) test -s "$work/sig-$sig.ready"; then
    bad "SIG$sig: the command did not start" "$(cat "$work/sig-$sig.err")"; reap "$pid" 1; continue
  fi
  kill -s "$sig" "$pid"   # resplock alone, not its process group
  reap "$pid" $((10 * SLOW)) || bad "SIG$sig: run did not exit" "$(cat "$work/sig-$sig.err")"
  expect_eq "SIG$sig to run: exit with the command's code" "$CODE" $((100 + n))
  expect_eq "SIG$sig to run: the command got SIG$sig" "$(cat "$work/sig-$sig" 2>/dev/null)" "$sig"
  expect_eq "SIG$sig to run: the lock is released" "$(R EXISTS "sig$sig")" 0
done
bg "$work/sig-plain.out" "$work/sig-plain.err" -u "$url" run sigplain -- sh -c 'echo $$ >'"$work/sig-plain.ready"'; exec sleep 60'
pid=$BGPID
if wait_until $((5 * SLOW)) test -s "$work/sig-plain.ready"; then
  kill -s TERM "$pid"
  reap "$pid" $((10 * SLOW))
  expect_eq "SIGTERM to run, the command does not trap it: 128+15" "$CODE" 143
  expect_eq "... and the lock is released (resplock did not die of it)" "$(R EXISTS sigplain)" 0
else
  bad "SIGTERM to run: the command did not start"; reap "$pid" 1
fi

# ---------------------------------------------------------------- --hold-min
# run returns when its command ends and leaves the rest of the hold to the
# key's TTL: the lock is still there when it has returned (a run that
# waited the hold out would have released it), with a TTL no longer than
# the hold.  Under valgrind starting resplock alone takes seconds: the hold
# is longer there.
hm=$(bound 3 8)
t0=$(now_ms)
check "run -n --hold-min ${hm}s NAME -- true: 0" 0 '' '' -- -u "$url" run -n --hold-min "${hm}s" hm -- true
expect_range "--hold-min ${hm}s: run returned with the lock still held, its TTL shortened to what is left" \
  "$(R PTTL hm)" 1 $((hm * 1000))
check "run -n inside the hold time: 1" 1 '' '' -- -v -u "$url" run -n hm -- touch "$work/ran"
expect_match "run -n inside the hold time: held (-v)" "$(cat "$work/err")" "lock 'hm' is held by someone else"
expect_eq "... and the command did not run" "$(test -e "$work/ran" && echo ran)" ""
wait_until $((hm + 3)) key_gone hm || bad "--hold-min ${hm}s: the lock was not freed after $((hm + 3)) s"
expect_range "--hold-min ${hm}s: held at least ${hm} s after acquiring (ms)" $(( $(now_ms) - t0 )) $((hm * 1000)) $((hm * 1000 + 2000))
check "run -n after the hold time: 0" 0 '' '' -- -u "$url" run -n hm -- true
check "--hold-min shorter than the command: 0" 0 '' '' -- -u "$url" run --hold-min 50ms hm2 -- sh -c 'sleep 0.3'
expect_eq "--hold-min shorter than the command: released at once" "$(R EXISTS hm2)" 0

# ------------------------------------------------------------- wake on release
# wake_test LABEL URL PORT: a waiter gets the lock within a bound after the
# release, far below the 1 s re-check and the holder's 60 s TTL.  The
# release is made by the plain binary even under valgrind: its start-up
# time is not what is measured.
wake_test() {
  local label=$1 u=$2 p=$3 round acq tok fence pid t_rel t_got
  for round in 1 2; do
    acq=$($RLK_WRAP "$bin" -u "$u" acquire wk -t 60s </dev/null) || { bad "$label: acquire"; return; }
    read -r tok fence <<<"$acq"
    rm -f "$work/wake.out"
    bg "$work/wake.out" "$work/wake.err" -u "$u" run -w 30s wk -- sh -c 'date +%s%3N; echo "$RESPLOCK_FENCE"'
    pid=$BGPID
    if ! wait_until $((5 * SLOW)) subscribed wk "$p"; then
      bad "$label: the waiter did not subscribe" "$(cat "$work/wake.err")"; reap "$pid" 1; return
    fi
    if ! wait_until $((5 * SLOW)) in_line wk "$u" 1; then
      bad "$label: status does not show the waiter in line" "$("$bin" -u "$u" status wk 2>&1)"
      reap "$pid" 1; return
    fi
    expect_eq "$label, round $round: the waiter waits while the lock is held" "$(cat "$work/wake.out")" ""
    t_rel=$(now_ms)
    "$bin" -u "$u" release wk "$tok" || bad "$label: release"
    reap "$pid" $((10 * SLOW))
    expect_eq "$label, round $round: the waiter's exit" "$CODE" 0
    t_got=$(sed -n 1p "$work/wake.out")
    expect_range "$label, round $round: the waiter runs soon after the release (ms)" $(( ${t_got:-0} - t_rel )) 0 "$(bound 250 600)"
    # Handed over by the release: the next fence, and nobody left in line.
    expect_gt "$label, round $round: the waiter's fence is higher" "$(sed -n 2p "$work/wake.out")" "$fence"
    in_line wk "$u" 0 && ok "$label, round $round: nobody left in line" ||
      bad "$label, round $round: nobody left in line" "$("$bin" -u "$u" status wk 2>&1)"
  done
}
wake_test "wake on release (RESP3)" "$url" "$port"
# A server without HELLO: the handshake falls back to RESP2 and the waiter
# subscribes on a second connection.
if rlk_redis_start resp2 "$work" --rename-command HELLO ''; then
  p2=$RLK_REDIS_PORT
  check "a server without HELLO: RESP2" 0 '^protocol: +RESP2' '' -- -u "redis://127.0.0.1:$p2" ping
  wake_test "wake on release (RESP2)" "redis://127.0.0.1:$p2" "$p2"
else
  bad "could not start redis-server without HELLO"
fi

# ------------------------------------------ a user without channel permission
# A user made the Redis 7 way (acl-pubsub-default resetchannels): it may
# not subscribe, nor publish.  Its acquire gets no error and shifts no
# reply: busy is 1, leaving the holder's lock as it was and nothing of
# its own; free, it takes and releases the lock; a wait re-checks, and
# -v says so.  One that may not run SUBSCRIBE, likewise.
R ACL SETUSER lk-nochan on '>pw' '~*' '+@all' >/dev/null
R ACL SETUSER lk-nosub on '>pw' '~*' '&*' '+@all' -subscribe >/dev/null
# ucheck: check as $user (its password from the environment, unwarned).
ucheck() { REDISCLI_AUTH=pw check "$@"; }
for user in lk-nochan lk-nosub; do
  R SET acl-held someone PX 60000 >/dev/null
  ucheck "$user: acquire -n on a held lock: 1" 1 '' '' -- -u "$url" --user "$user" acquire -n acl-held
  expect_eq "$user: acquire -n on a held lock: nothing on stderr" "$(grep -v '^==' "$work/err")" ""
  expect_eq "$user: acquire -n on a held lock: the holder's lock is intact" "$(R GET acl-held)" someone
  expect_eq "$user: acquire -n on a held lock: nothing else written" "$(R KEYS '*acl-held*')" acl-held
  ucheck "$user: -v acquire -n on a held lock: 1" 1 '' '' -- -v -u "$url" --user "$user" acquire -n acl-held
  expect_match "$user: -v says the waits re-check" "$(cat "$work/err")" "SUBSCRIBE refused \\(NOPERM .*\\): waits re-check"
  ucheck "$user: acquire -n on a free lock: 0" 0 '^rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)? [0-9]+$' '' -- -u "$url" --user "$user" acquire -n acl-free
  read -r utok _ <"$work/out"
  expect_eq "$user: acquire -n on a free lock: held by its token" "$(R GET acl-free)" "$utok"
  ucheck "$user: release: 0" 0 '' '' -- -u "$url" --user "$user" release acl-free "$utok"
  expect_eq "$user: release: the key is gone" "$(R EXISTS acl-free)" 0
  R SET acl-wait someone PX 700 >/dev/null
  ucheck "$user: run -w 10s on a lock held for 700 ms: 0" 0 '^ran$' '' -- -u "$url" --user "$user" run -w 10s acl-wait -- echo ran
  expect_eq "$user: run: released after the command" "$(R EXISTS acl-wait)" 0
  expect_eq "$user: run: nobody in line" "$(R EXISTS '{acl-wait}:queue')" 0
  R DEL acl-held >/dev/null
done
R ACL DELUSER lk-nochan lk-nosub >/dev/null

# ---------------------------------------- SCRIPT FLUSH and FUNCTION FLUSH
acq=$($RLK_WRAP "$bin" -u "$url" acquire sf -t 30s); read -r tok _ <<<"$acq"
R SCRIPT FLUSH >/dev/null; R FUNCTION FLUSH >/dev/null
check "SCRIPT FLUSH between acquire and extend: extend 0" 0 '' '' -- -u "$url" extend sf "$tok" 20s
expect_range "... the TTL is set" "$(R PTTL sf)" 15000 20000
R SCRIPT FLUSH >/dev/null; R FUNCTION FLUSH >/dev/null
check "SCRIPT FLUSH between acquire and release: release 0" 0 '' '' -- -u "$url" release sf "$tok"
expect_eq "... and the key is gone" "$(R EXISTS sf)" 0
R SCRIPT FLUSH >/dev/null; R FUNCTION FLUSH >/dev/null
check "SCRIPT FLUSH before status" 1 '^held: +no' '' -- -u "$url" status sf
# Renewals every 300 ms go on after each flush; without them the lock would
# be reported lost (75) before the command ends.
check "SCRIPT FLUSH while run renews: the command's code, not 75" 0 '' '' -- -u "$url" run -t 900ms sf -- \
  sh -c "redis-cli -p $port SCRIPT FLUSH >/dev/null; redis-cli -p $port FUNCTION FLUSH >/dev/null; sleep 0.5; redis-cli -p $port SCRIPT FLUSH >/dev/null; redis-cli -p $port FUNCTION FLUSH >/dev/null; sleep 0.5"
expect_eq "... and the lock is released" "$(R EXISTS sf)" 0

# acquire -w by handoff, its confirmation's script flushed: acquire hands
# its token on and stops, so it ends only with the lock at its full TTL.
# An ACL user without FCALL calls the scripts by EVALSHA (as on Redis 6),
# whose NOSCRIPT is answered by a re-send as EVAL.
R ACL SETUSER noeval on '>pw' '~*' '&*' +@all -fcall -function >/dev/null
acq=$($RLK_WRAP "$bin" -u "$url" acquire hf -t 60s); read -r tok _ <<<"$acq"
bg "$work/hf.out" "$work/hf.err" -u "redis://noeval:pw@127.0.0.1:$port" acquire hf -w 20s -t 60s
hf=$BGPID
if wait_until "$(bound 10 60)" in_line hf "$url" 1; then
  R SCRIPT FLUSH >/dev/null
  check "handoff to acquire -w: the holder releases" 0 '' '' -- -u "$url" release hf "$tok"
  reap "$hf" "$(bound 10 60)"
  expect_eq "... acquire -w exits 0" "$CODE" 0
  read -r tok2 _ <"$work/hf.out"
  expect_eq "... it printed the token the key holds" "$(R GET hf)" "${tok2:-none}"
  expect_range "... the key's TTL is the full TTL, not the claim" "$(R PTTL hf)" 50000 60000
else
  bad "handoff to acquire -w: no waiter in line" "$(cat "$work/hf.err")"
fi
R DEL hf >/dev/null; R ACL DELUSER noeval >/dev/null

# ------------------------------------------------------- redis-py's Lock
cat >"$work/pylock.py" <<'EOF'
import sys
import redis
from redis.exceptions import LockNotOwnedError

port, op, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
r = redis.Redis(host="127.0.0.1", port=port)
lock = r.lock(name, timeout=30)
if op == "hold":                 # acquire and keep it; print the token
    if not lock.acquire(blocking=False):
        sys.exit(1)
    print(lock.local.token.decode())
elif op == "try":                # non-blocking acquire: True or False
    got = lock.acquire(blocking=False)
    print(got)
    if got:
        lock.release()
elif op == "release":            # release with the token given
    lock.local.token = sys.argv[4].encode()
    try:
        lock.release()
        print("released")
    except LockNotOwnedError:
        print("LockNotOwnedError")
EOF
if ! $py -c 'import redis' 2>/dev/null; then
  bad "redis-py: /usr/bin/python3 cannot import redis (Debian package python3-redis)"
else
  pyl() { $py "$work/pylock.py" "$port" "$@"; }
  ptok=$(pyl hold pyl) || bad "redis-py: could not take its lock"
  check "redis-py holds the lock: run -n exits 1" 1 '' '' -- -v -u "$url" run -n pyl -- touch "$work/ran"
  expect_match "redis-py holds the lock: held (-v)" "$(cat "$work/err")" "lock 'pyl' is held by someone else"
  expect_eq "... and the command did not run" "$(test -e "$work/ran" && echo ran)" ""
  check "redis-py's lock: status 0, simple" 0 '^kind: +simple' '' -- -u "$url" status pyl
  check "resplock release of redis-py's lock with a wrong token: 1" 1 '' 'held by someone else' -- -u "$url" release pyl 0123456789abcdef0123456789abcdef
  expect_eq "... and redis-py's key is intact" "$(R GET pyl)" "$ptok"
  check "resplock extend of redis-py's lock with a wrong token: 1" 1 '' 'held by someone else' -- -u "$url" extend pyl wrong 1s
  expect_eq "redis-py releases its own lock" "$(pyl release pyl "$ptok")" released
  check "then run -n takes it: 0" 0 '' '' -- -u "$url" run -n pyl -- true

  acq=$($RLK_WRAP "$bin" -u "$url" acquire rl -t 30s); read -r tok _ <<<"$acq"
  expect_eq "resplock holds the lock: redis-py's non-blocking acquire is False" "$(pyl try rl)" False
  expect_eq "redis-py with a wrong token cannot release it: LockNotOwnedError" "$(pyl release rl 0123456789abcdef0123456789abcdef)" LockNotOwnedError
  expect_eq "... and resplock's key is intact" "$(R GET rl)" "$tok"
  expect_eq "redis-py with resplock's token releases it" "$(pyl release rl "$tok")" released
  expect_eq "... then redis-py can take it" "$(pyl try rl)" True

  # redis-py does not publish on release: a resplock waiter still gets the
  # lock at its next re-check, within a second.
  ptok=$(pyl hold pw) || bad "redis-py: could not take its lock"
  bg "$work/pw.out" "$work/pw.err" -u "$url" run -w 30s pw -- date +%s%3N
  pid=$BGPID
  if wait_until $((5 * SLOW)) subscribed pw; then
    t_rel=$(now_ms)
    expect_eq "redis-py releases while resplock waits" "$(pyl release pw "$ptok")" released
    reap "$pid" $((10 * SLOW))
    expect_eq "the resplock waiter's exit" "$CODE" 0
    expect_range "the waiter gets a lock redis-py released within the 1 s re-check (ms)" \
      $(( $(cat "$work/pw.out" || echo 0) - t_rel )) 0 $((1000 + 250 * SLOW))
  else
    bad "the waiter did not subscribe" "$(cat "$work/pw.err")"; reap "$pid" 1
  fi
fi

# ------------------------------------------------------ --help and the man page
"$bin" --help >"$work/help" 2>&1
help_long=$(grep -oE -- '--[a-z][a-z-]*[a-z]' "$work/help" | sort -u)
man_long=$(grep -oE '\\-\\-[a-z]([a-z]|\\-)*[a-z]' "$man" | sed 's/\\-/-/g' | sort -u)
[ -n "$help_long" ] && [ -n "$man_long" ] || bad "no long options found in --help or the man page"
for o in $help_long; do
  grep -qx -- "$o" <<<"$man_long" && ok "--help's $o is in the man page" || bad "--help's $o is not in the man page"
done
for o in $man_long; do
  grep -qx -- "$o" <<<"$help_long" && ok "the man page's $o is in --help" || bad "the man page's $o is not in --help"
done
# Short and long forms pair up the same way.
help_pairs=$(sed -nE 's/^  -([a-zA-Z]), (--[a-z-]+).*/-\1 \2/p' "$work/help" | sort)
man_pairs=$(sed -nE 's/^\.BR \\-([a-zA-Z]) ", " \\-\\-([a-z\\-]+).*/-\1 --\2/p' "$man" | sed 's/\\-/-/g' | sort)
expect_eq "short options pair with the same long ones in --help and the man page" "$help_pairs" "$man_pairs"
# Every option of the man page is accepted: with a value of the kind its
# placeholder names, against a closed port, the answer is "unreachable"
# (69), not a usage error.
echo pw >"$work/file"   # a password for --pass-file; ignored by the TLS options of redis://
man_opts=$(awk '/^\.(B|BR|BI) .*\\-/ {
    line = $0; gsub(/\\-/, "-", line); gsub(/\\f[IRB]/, "", line); gsub(/"/, "", line)
    n = split(line, w, /[ ,]+/); long = ""; short = ""; ph = ""
    for (i = 2; i <= n; i++) {
      if (w[i] ~ /^--[a-z]/) long = w[i]
      else if (w[i] ~ /^-[a-zA-Z]$/) short = w[i]
      else if (long != "" && w[i] ~ /^[A-Z]+$/) ph = w[i]
    }
    if (long != "") { print long, ph; if (short != "") print short, ph }
  }' "$man")
for o in $man_long; do grep -q -- "^$o " <<<"$man_opts" || man_opts+=$'\n'"$o "; done
while read -r o ph; do
  [ -n "$o" ] || continue
  case $ph in
    DURATION) v=(2s) ;; N) v=(3) ;; FILE) v=("$work/file") ;; DIR) v=("$work") ;;
    URL) v=("$down") ;; NAME) v=(redis.resplock.test) ;; HOST) v=(127.0.0.1) ;; PORT) v=("$closed_port") ;;
    PASSWORD) v=(pw) ;; USER) v=(alice) ;; STR) v=(app:) ;; STRING) v=(true) ;;
    '') v=() ;; *) bad "$o: unknown placeholder $ph"; continue ;;
  esac
  case $o in
    --help|-\?) check "the man page's $o is accepted" 0 '^usage: resplock' '' -- "$o" ;;
    --command|-c) check "the man page's $o ${v[*]} is accepted (run)" 69 '' '' -- -u "$down" run optl "$o" "${v[@]}" ;;
    # An empty standard input has no password to read.
    --askpass) check "the man page's $o is accepted (run)" 78 '' 'no password' -- -u "$down" run optl "$o" -- true ;;
    --version|-V) check "the man page's $o is accepted" 0 '^resplock [0-9]' '' -- "$o" ;;
    --add) check "the man page's $o is accepted (extend)" 69 '' '' -- -u "$down" extend optl tok 1s "$o" ;;
    --rate) check "the man page's $o is accepted (rate)" 69 '' '' -- -u "$down" rate optl "$o" 1/s -- true ;;
    --burst) check "the man page's $o is accepted (rate)" 69 '' '' -- -u "$down" rate optl --rate 1/s "$o" 3 -- true ;;
    --json) check "the man page's $o is accepted (status)" 69 '' '' -- -u "$down" status optl "$o" ;;
    --permits|-p) check "the man page's $o is accepted (sem run)" 69 '' '' -- -u "$down" sem run optl "$o" 2 -- true ;;
    --take|-k|--layout|--lock-timeout)
      [ "$o" = --layout ] && v=(resplock)
      check "the man page's $o ${v[*]} is accepted (sem run)" 69 '' '' \
        -- -u "$down" sem run optl -p 3 "$o" "${v[@]}" -- true ;;
    --read|--write) check "the man page's $o is accepted (rw run)" 69 '' '' -- -u "$down" rw run optl "$o" -- true ;;
    --replicas-timeout) check "the man page's $o is accepted (run, with --replicas)" 69 '' '' \
      -- -u "$down" run optl --replicas 1 "$o" "${v[@]}" -- true ;;
    # Without TLS compiled in, asking for it is a configuration error.
    --tls) check "the man page's $o is accepted (run)" "$tls_rc" '' '' -- -u "$down" run optl "$o" -- true ;;
    --redlock) check "the man page's $o is accepted (run, 3 servers)" 69 '' '' \
                 -- -u "$down" -u "$down" -u "$down" run -n optl "$o" -- true ;;
    *) check "the man page's $o${v[*]:+ ${v[*]}} is accepted (run)" 69 '' '' -- -u "$down" run optl "$o" "${v[@]}" -- true ;;
  esac
done <<<"$man_opts"
# The exit codes of --help and of the man page's EXIT STATUS (0 aside).
help_codes=$(sed -n '/^Exit codes:/,$p' "$work/help" | sed 's/resplock([0-9])//g; s#/# #g' |
  grep -oE '128\+N|[0-9]+' | sort -u | tr '\n' ' ')
man_codes=$(awk '/^\.SH/ { on = $0 == ".SH EXIT STATUS"; next } on' "$man" | sed -n '/^\.TP/{n;p}' |
  sed -E 's/^\.B //; s/\\f[IRB]//g; s/,/ /g' | tr ' ' '\n' | grep -vx 0 | grep . | sort -u | tr '\n' ' ')
[ -n "$help_codes" ] && expect_eq "the exit codes of --help are the man page's EXIT STATUS" "$help_codes" "$man_codes" ||
  bad "no exit codes found in --help"
# Every command of --help has an entry in COMMANDS.
for c in $(sed -nE 's/^  (run|acquire|release|extend|status|ping|[a-z]+) .*/\1/p' "$work/help" | sort -u); do
  grep -qE "^\.B $c( |$)" "$man" && ok "command '$c' is in the man page" || bad "command '$c' is not in the man page"
done
expect_match "the man page's version is resplock's" "$(sed -n 's/^\.TH .*"resplock \([^"]*\)".*/\1/p' "$man")" \
  "^$("$bin" --version | sed 's/^resplock //')\$"
expect_eq "the man page has no section twice" "$(grep '^\.SH' "$man" | sort | uniq -d)" ""
if command -v groff >/dev/null; then
  expect_eq "groff -t -ww finds nothing to warn about" "$(groff -t -man -ww -z "$man" 2>&1)" ""
else
  bad "groff -ww: groff is not installed (Debian: groff-base)"
fi
# The protocol page (its tables are checked by tests/test_protocol_layout):
# tbl's tables, said so on its first line for man.
proto="$top_srcdir/doc/resplock-protocol.7"
expect_eq "resplock-protocol.7 asks man for tbl" "$(head -n 1 "$proto")" "'\\\" t"
expect_match "resplock-protocol.7's version is resplock's" \
  "$(sed -n 's/^\.TH .*"resplock \([^"]*\)".*/\1/p' "$proto")" "^$("$bin" --version | sed 's/^resplock //')\$"
expect_eq "resplock-protocol.7 has no section twice" "$(grep '^\.SH' "$proto" | sort | uniq -d)" ""
if command -v groff >/dev/null; then
  expect_eq "groff -t -ww finds nothing to warn about in resplock-protocol.7" \
    "$(groff -t -man -ww -z "$proto" 2>&1)" ""
fi

finish
