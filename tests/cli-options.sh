#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock's command line as cron and redis-cli users expect it: a silent
# skip, the man page's shell snippet (sh and bash), redis-cli's connection
# options and passwords off the command line, -v naming the server,
# compound durations, -c, status's kind of holder, TLS not compiled in
# (78), --max-time (124), the configuration files and --prefix.
. "$top_srcdir/tests/cli-lock-lib.sh"
man="$top_srcdir/doc/resplock.1"

# Never the machine's own /etc/resplock.conf: a file that does not exist.
export RESPLOCK_CONFIG_SYSTEM="$work/no-system.conf"
unset RESPLOCK_CONFIG REDIS_URL REDISCLI_AUTH

rlk_redis_start main "$work" --unixsocket "$work/redis.sock" --unixsocketperm 700 ||
  die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
ran() { test -e "$work/ran" && echo ran; rm -f "$work/ran"; }
errs() { grep -v '^==' "$work/err"; }
down="redis://127.0.0.1:$closed_port"
has_tls=1
"$bin" --version | grep -q '^TLS: not compiled in' && has_tls=0

# ---------------------------------------------------------- a skip is silent
acq=$($RLK_WRAP "$bin" -u "$url" acquire held -t 60s </dev/null) || bad "acquire held: exit $?"
read -r tok _ <<<"$acq"
check "run -n on a held lock: 1" 1 '' '' -- -u "$url" run held -n -- touch "$work/ran"
expect_eq "run -n on a held lock: nothing on stderr" "$(errs)" ""
expect_eq "run -n on a held lock: the command did not run" "$(ran)" ""
check "run -n -E 3 on a held lock: 3" 3 '' '' -- -u "$url" run held -n -E 3 -- true
expect_eq "run -n -E 3: nothing on stderr" "$(errs)" ""
check "acquire -n on a held lock: 1" 1 '' '' -- -u "$url" acquire held -n
expect_eq "acquire -n: nothing on stderr" "$(errs)" ""
expect_eq "acquire -n: nothing on stdout" "$(cat "$work/out")" ""
check "run -w 200ms on a held lock: 1" 1 '' '' -- -u "$url" run held -w 200ms -- true
expect_eq "run -w: a wait that ends is silent too" "$(errs)" ""
check "run -v -n on a held lock: 1" 1 '' '' -- -v -u "$url" run held -n -- true
expect_match "run -v -n on a held lock: says why" "$(errs)" "lock 'held' is held by someone else"
check "other failures still print: server unreachable" 69 '' 'Connection refused' -- -u "$down" run held -n -- true
check "other failures still print: release with another token" 1 '' "held by someone else" -- -u "$url" release held 0123456789abcdef0123456789abcdef
R DEL held >/dev/null

# ---------------------------------- a TTL within the drift allowance: 64
# (the lock would be valid for no time: every try would take it and give
# it back, tens of thousands of server calls a second).
R CONFIG RESETSTAT >/dev/null
check "acquire --ttl 1ms: usage error" 64 '' "--ttl 1ms is too short" -- -u "$url" acquire tiny -t 1ms -w 1s
check "run --ttl 2ms: usage error" 64 '' "--ttl 2ms is too short" -- -u "$url" run tiny -t 2ms -w 1s -- true
expect_eq "a TTL too short: no SET on the server" "$(R INFO commandstats | grep -c '^cmdstat_set:')" 0

# ------------------------------------------ the man page's shell snippet
# The snippet as printed (roff escapes undone), between "From a shell
# script" and its "...", run by sh (dash on Debian) and bash with a
# resplock that is this build.
snippet=$(awk '/^From a shell script/ { seen = 1; next } seen && /^\.nf/ { on = 1; next }
  on && (/^  \.\.\./ || /^\.fi/) { exit } on { print }' "$man" |
  sed 's/\\-/-/g; s/\\e/\\/g; s/^  //')
expect_match "the man page has the acquire snippet" "$snippet" 'resplock acquire batch'
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$RLK_WRAP" "$bin" >"$work/bin/resplock"
chmod +x "$work/bin/resplock"
printf '%s\n' "$snippet" 'echo "token=$token fence=$fence"' >"$work/snippet.sh"
for shell in sh bash; do
  if ! command -v "$shell" >/dev/null; then bad "$shell is not installed"; continue; fi
  R SET batch someone-else PX 60000 >/dev/null
  out=$(PATH="$work/bin:$PATH" REDIS_URL=$url "$shell" "$work/snippet.sh" 2>&1 </dev/null)
  code=$?
  expect_eq "snippet under $shell, lock held: the script stops with 1" "$code" 1
  expect_eq "snippet under $shell, lock held: nothing after the acquire runs" "$out" ""
  R DEL batch >/dev/null
  out=$(PATH="$work/bin:$PATH" REDIS_URL=$url "$shell" "$work/snippet.sh" 2>&1 </dev/null)
  code=$?
  expect_eq "snippet under $shell, lock free: exit 0" "$code" 0
  expect_match "snippet under $shell: TOKEN and FENCE" "$out" '^token=rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)? fence=[0-9]+$'
  expect_eq "snippet under $shell: the token holds the lock" "$(R GET batch)" "$(sed -n 's/^token=\(rlk:[^ ]*\) .*/\1/p' <<<"$out")"
  R DEL batch >/dev/null
done

# ------------------------------------------------ redis-cli's connection options
check "-h HOST -p PORT: the host, not the help" 0 '' '' -- -h 127.0.0.1 -p "$port" run hp -- touch "$work/ran"
expect_eq "-h HOST -p PORT: the command ran" "$(ran)" ran
check "--host and --port" 0 '' '' -- --host 127.0.0.1 --port "$port" run hp -- touch "$work/ran"
expect_eq "--host --port: the command ran" "$(ran)" ran
check "-p replaces the URL's port" 5 '' '' -- -u "$down" -p "$port" run hp -- sh -c 'exit 5'
REDIS_URL="redis://127.0.0.2:$port" check "-h replaces \$REDIS_URL's host, keeps its port" 6 '' '' -- -h 127.0.0.1 run hp -- sh -c 'exit 6'
check "-h with a unix:// URL connects over TCP" 0 '' '' -- -u "unix://$work/nosuch.sock" -h 127.0.0.1 -p "$port" run hp -- true
check "-p with the URL's database kept" 0 '' '' -- -u "redis://127.0.0.1:$closed_port/3" -p "$port" acquire dbl -t 60s
expect_eq "... the lock is in database 3" "$(R -n 3 EXISTS dbl)" 1
check "-p after the command" 0 '' '' -- run hp -p "$port" -- true
check "-?: the usage" 0 '^usage: resplock' '' -- '-?'
check "--help: the usage" 0 '^usage: resplock' '' -- --help
check "-h without a host: usage error" 64 '' 'needs a value' -- run hp -h
check "-h '': usage error" 64 '' "bad --host" -- -h '' run hp -- true
check "-p 0: usage error" 64 '' "bad --port '0'" -- -p 0 run hp -- true
check "-p x: usage error" 64 '' "bad --port 'x'" -- -p x run hp -- true

# ------------------------------------------------------- the option syntax
check "-t10s: the value in the word" 0 '^10000$' '' -- -u "$url" run os -t10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "-t 10s: the value in the next word" 0 '^10000$' '' -- -u "$url" run os -t 10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "--ttl=10s" 0 '^10000$' '' -- -u "$url" run os --ttl=10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "--ttl 10s" 0 '^10000$' '' -- -u "$url" run os --ttl 10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "--tt 10s: a long option shortened to a unique prefix" 0 '^10000$' '' -- -u "$url" run os --tt 10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "-nt10s: a flag and an option with its value in one word" 0 '^10000$' '' -- -u "$url" run os -nt10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "options before NAME" 0 '^10000$' '' -- -u "$url" run -t 10s os -- sh -c 'echo $RESPLOCK_TTL_MS'
check "global options after the command, before and after NAME" 0 '^10000$' '' -- run -u "$url" os -T 2s -t 10s -- sh -c 'echo $RESPLOCK_TTL_MS'
check "-- before the command" 0 '' '' -- -u "$url" -- run os -- true
check "COMMAND's own options after --: its own" 0 '^-n\|-t\|5s\|--ttl\|--\|$' '' -- -u "$url" run os -- printf '%s|' -n -t 5s --ttl --
check "COMMAND's own options without --: its own" 0 '^-n\|-t\|5s\|--ttl\|$' '' -- -u "$url" run os printf '%s|' -n -t 5s --ttl
check "options after NAME, then COMMAND's own" 0 '^10000 -n -x$' '' -- -u "$url" run os -t 10s sh -c 'echo $RESPLOCK_TTL_MS "$@"' sh -n -x
check "'-' is a NAME, not an option" 0 '^-$' '' -- -u "$url" run - -- sh -c 'echo "$RESPLOCK_NAME"'
acq=$($RLK_WRAP "$bin" -u "$url" acquire oheld -t 60s </dev/null) || bad "acquire oheld: exit $?"
check "-nv: bundled flags (-n and -v)" 1 '' '' -- -u "$url" run oheld -nv -- true
expect_match "-nv: -v took, it says why" "$(errs)" "lock 'oheld' is held by someone else"
check "--nonb: -n shortened" 1 '' '' -- -u "$url" run oheld --nonb -- true
expect_eq "--nonb: silent" "$(errs)" ""
check "--verb before the command: -v shortened" 0 '' 'connecting to' -- --verb -u "$url" ping
check "--c: an ambiguous prefix is a usage error" 64 '' "option '--c'" -- -u "$url" run os --c x -- true
check "--pas: ambiguous (--pass, --pass-file)" 64 '' "option '--pas'" -- --pas x -u "$url" run os -- true
check "--ttl= (empty): usage error" 64 '' "bad --ttl ''" -- -u "$url" run os --ttl= -- true
check "--ttl without its value" 64 '' "option '--ttl' needs a value" -- -u "$url" run os --ttl
check "--tt without its value" 64 '' "option '--tt' needs a value" -- -u "$url" run os --tt
check "-nt without its value" 64 '' "option '-nt' needs a value" -- -u "$url" run os -nt
check "-nz: the unknown one named" 64 '' "unknown option '-z'" -- -u "$url" run os -nz -- true
check "--bogus=1: usage error" 64 '' "unknown option '--bogus=1'" -- -u "$url" run os --bogus=1 -- true
check "--verbose=1: a flag takes no value" 64 '' "option '--?v" -- -u "$url" run os --verbose=1 -- true
check "--c: the candidates named" 64 '' "ambiguous option '--c' \\(--cacert, --cacertdir, --cert, --conflict-exit-code, --command\\)" -- -u "$url" run os --c x -- true
check "--tls=1: a flag given a value, named" 64 '' "option '--tls' takes no value" -- -u "$url" run os --tls=1 -- true
check "--ttl before the command: not a global option" 64 '' "unknown option '--ttl'" -- -u "$url" --ttl 10s run os -- true
RLK_WRAP= check "-t after -- is COMMAND's: the command to run" 127 '' "cannot run '-t'" -- -u "$url" run os -- -t 10s
check "run NAME --help: the usage" 0 '^usage: resplock' '' -- run os --help
check "-v?: the usage after a flag" 0 '^usage: resplock' '' -- '-v?'

if REDISCLI_AUTH=s3cret-pw rlk_redis_start auth "$work" --requirepass s3cret-pw; then
  ap=$RLK_REDIS_PORT
  redis-cli -p "$ap" -a s3cret-pw --no-auth-warning ACL SETUSER alice on '>al1ce pw' '~*' '+@all' >/dev/null
  check "-a PASSWORD: 0" 0 '' '' -- -p "$ap" -a s3cret-pw run ap -- true
  expect_match "-a PASSWORD: warns that others can see it" "$(errs)" '^resplock: warning: a password on the command line can be seen'
  expect_eq "-a PASSWORD: one line of warning, without the password" "$(errs | grep -c s3cret)" 0
  REDISCLI_AUTH=s3cret-pw check "REDISCLI_AUTH: 0" 0 '' '' -- -p "$ap" run ap -- true
  expect_eq "REDISCLI_AUTH: no warning" "$(errs)" ""
  printf 's3cret-pw\nsecond line\n' >"$work/pw"; chmod 600 "$work/pw"
  check "--pass-file FILE: 0" 0 '' '' -- -p "$ap" --pass-file "$work/pw" run ap -- true
  expect_eq "--pass-file: no warning" "$(errs)" ""
  check "--pass-file missing: 78" 78 '' "--pass-file .*nosuch: No such file" -- -p "$ap" --pass-file "$work/nosuch" run ap -- touch "$work/ran"
  expect_eq "--pass-file missing: the command did not run" "$(ran)" ""
  : >"$work/empty"
  check "--pass-file empty: 78" 78 '' "no password" -- -p "$ap" --pass-file "$work/empty" run ap -- true
  out=$(printf 's3cret-pw\nthe rest\n' | $RLK_WRAP "$bin" -p "$ap" --askpass run ap -- cat 2>"$work/err")
  expect_eq "--askpass from standard input: the command gets the rest of it" "$out" "the rest"
  expect_eq "--askpass from standard input: no prompt, no warning" "$(errs)" ""
  check "--askpass at the end of input: 78" 78 '' 'askpass: no password on standard input' -- -p "$ap" --askpass run ap -- true
  check "--user USER --pass-file: ping as alice" 0 '^user: +alice$' '' -- -p "$ap" --user alice --pass-file <(echo 'al1ce pw') ping
  check "--user in a URL, the password from -a" 0 '^user: +alice$' '' -- -u "redis://alice@127.0.0.1:$ap" -a 'al1ce pw' ping
  check "a password in --url: 0, with a warning" 0 '' 'warning: a password on the command line' -- -u "redis://:s3cret-pw@127.0.0.1:$ap" run ap -- true
  REDISCLI_AUTH=s3cret-pw REDIS_URL="redis://:wrong@127.0.0.1:$ap" check "the URL's own password comes before REDISCLI_AUTH" 69 '' 'WRONGPASS' -- status ap
  REDIS_URL="redis://:wrong@127.0.0.1:$ap" check "--pass-file replaces \$REDIS_URL's password" 1 '^held: +no' '' -- --pass-file "$work/pw" status ap
  REDISCLI_AUTH=wrong check "a wrong REDISCLI_AUTH: 69" 69 '' 'WRONGPASS' -- -p "$ap" status ap
  grep -q wrong "$work/err" && bad "the password is in the message" "$(cat "$work/err")" || ok "the password is not in the message"

  # --askpass at a terminal: a prompt, and the password is not echoed.
  cat >"$work/askpass-pty.py" <<'EOF'
import os, pty, select, shlex, sys, time
wrap, cmd = shlex.split(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp((wrap + cmd)[0], wrap + cmd)
out, sent, end = b"", False, time.monotonic() + float(os.environ.get("LIMIT", "10"))
while time.monotonic() < end:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if not sent and b"Password: " in out:
        os.write(fd, b"s3cret-pw\n")
        sent = True
for _ in range(2):
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.5)
if not done:
    os.kill(pid, 9)
    _, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 99)
EOF
  out=$(LIMIT=$((10 * SLOW)) python3 "$work/askpass-pty.py" "$RLK_WRAP" "$bin" -p "$ap" --askpass ping)
  code=$?
  expect_eq "--askpass at a terminal: ping 0" "$code" 0
  expect_match "--askpass at a terminal: the prompt" "$out" '^Password: '
  grep -q s3cret <<<"$out" && bad "--askpass at a terminal: the password was echoed" "$out" ||
    ok "--askpass at a terminal: the password is not echoed"
else
  bad "could not start redis-server with requirepass"
fi

# ------------------------------------------------------ -v and $REDIS_URL
check "-v names the server, the protocol, no TLS" 0 '' '' -- -v -p "$port" run vv -- true
expect_match "-v: connecting to host:port" "$(errs)" "connecting to 127\.0\.0\.1:$port\$"
# The server as INFO server names it (redis, or valkey with its own
# version).
ident=$(rlk_redis_identity "$port") identre=
[ -z "$ident" ] || identre="${ident%% *} server ${ident#* }" identre=${identre//./\\.}
expect_match "-v: connected, the protocol and TLS (INFO server: '$ident')" "$(errs)" \
  "connected to 127\.0\.0\.1:$port, $identre, RESP3, no TLS"
check "ping -v names the server" 0 '' "connecting to 127\.0\.0\.1:$port\$" -- -v -p "$port" ping
check "-v over a Unix socket" 0 '' "connecting to the Unix socket $work/redis\.sock" -- -v -u "unix://$work/redis.sock" run vv -- true
REDIS_URL="127.0.0.1:$port" check "a bad \$REDIS_URL says so: 78" 78 '' '^resplock: \$REDIS_URL: missing scheme' -- run vv -- true
REDIS_URL="redis://127.0.0.1:99999" check "a bad \$REDIS_URL from the library: named too" 78 '' '^resplock: \$REDIS_URL: bad port' -- run vv -- true
REDIS_URL="ftp://x" check "\$REDIS_URL with -p: still named" 78 '' '^resplock: \$REDIS_URL: unknown scheme' -- -p "$port" run vv -- true
check "a bad --url: a usage error" 64 '' '^resplock: (connect: )?URL: ' -- -u "ftp://x" run vv -- true

# --------------------------------------------------------------- durations
ttl_of() { $RLK_WRAP "$bin" -u "$url" run du -t "$1" -- sh -c 'echo "$RESPLOCK_TTL_MS"' </dev/null 2>"$work/err"; }
for d in 1m30s:90000 1h:3600000 2h30m:9000000 1m30.5s:90500 1h0m5s:3605000 500ms:500 10s:10000 2.5s:2500 5m:300000 7:7000 1s250ms:1250 \
         0.5m:30000 0.25h:900000 1.:1000 .5s:500 90.5:90500 1.0005s:1001 1.0015s:1002 00012.250s:12250; do
  expect_eq "duration ${d%%:*}" "$(ttl_of "${d%%:*}")" "${d#*:}"
done
for d in 1s1m 1m1m 30s5 '1m 30s' m 1x 1m30 .s 1e3s . 1.2.3s ..5s 1.5.s 0x10s infs; do
  check "bad duration '$d': 64" 64 '' "bad --ttl" -- -u "$url" run du -t "$d" -- true
done
check "compound --wait" 0 '' '' -- -u "$url" run du -w 1m30s -- true

# ---------------------------------------------------------------------- -c
check "run -c STRING: /bin/sh -c" 4 '^cl 0$' '' -- -u "$url" run cl -c 'echo "$RESPLOCK_NAME" $#; exit 4'
check "run --command STRING" 0 '^x y$' '' -- -u "$url" run --command 'echo x y' cl
check "run -c with a COMMAND too: 64" 64 '' 'not both' -- -u "$url" run cl -c 'touch ran' -- touch "$work/ran"
expect_eq "-c with a COMMAND: nothing ran" "$(ran)" ""
check "acquire -c: 64" 64 '' 'for run' -- -u "$url" acquire cl -c true

# ------------------------------------------------------- status: the holder
$RLK_WRAP "$bin" -u "$url" acquire st1 -t 60s </dev/null >/dev/null
check "status: resplock's token" 0 "^kind: +simple: resplock's layout \(an rlk: token\)$" '' -- -u "$url" status st1
R SET st2 my-client-token PX 60000 >/dev/null
check "status: another client's string" 0 "^kind: +simple: another client's string value$" '' -- -u "$url" status st2
R HSET st3 "0f5e3a4c-1b2d-4e6f-8a9b-0c1d2e3f4a5b:57" 1 >/dev/null; R PEXPIRE st3 60000 >/dev/null
check "status: Redisson's layout" 0 "^kind: +reentrant: Redisson's RLock layout" '' -- -u "$url" status st3
grep -Eq '^holds: +1$' "$work/out" && ok "status: the reentrant hold count" || bad "status: the reentrant hold count" "$(cat "$work/out")"
# A resplock client configured with a client_id: "ID:UUID:thread".
R HSET st6 "svc:0f5e3a4c-1b2d-4e6f-8a9b-0c1d2e3f4a5b:1" 1 >/dev/null; R PEXPIRE st6 60000 >/dev/null
check "status: resplock's layout with a client_id" 0 "^kind: +reentrant: Redisson's RLock layout" '' -- -u "$url" status st6
R HSET st4 some-field 1 >/dev/null
check "status: a hash without a TTL" 0 "^kind: +not a lock: a hash that never expires$" '' -- -u "$url" status st4
R RPUSH st5 a >/dev/null
check "status: a list" 0 "^kind: +not a lock: a list$" '' -- -u "$url" status st5

# ------------------------------------------------------- TLS not compiled in
if [ "$has_tls" = 0 ]; then
  check "--tls without TLS support: 78" 78 '' '^resplock: TLS support not compiled in' -- -p "$closed_port" --tls run nt -- touch "$work/ran"
  expect_eq "... the command did not run" "$(ran)" ""
  check "rediss:// without TLS support: 78" 78 '' 'TLS support not compiled in' -- -u "rediss://127.0.0.1:$port" acquire nt
  check "ping rediss:// without TLS support: 78" 78 '' 'TLS support not compiled in' -- -u "rediss://127.0.0.1:$port" ping
  printf 'url = redis://127.0.0.1:%s\ntls = yes\n' "$closed_port" >"$work/tls.conf"
  RESPLOCK_CONFIG="$work/tls.conf" check "tls = yes without TLS support: 78" 78 '' 'TLS support not compiled in' -- status nt
elif bash "$top_srcdir/tests/gen-certs.sh" "$work/certs" >/dev/null 2>&1 &&
     rlk_redis_start_tls tls "$work" "$work/certs" --tls-auth-clients optional; then
  tp=$RLK_REDIS_PORT c="$work/certs"
  check "--tls --cacert" 7 '' '' -- -v -p "$tp" --tls --cacert "$c/ca.crt" run tl -- sh -c 'exit 7'
  expect_match "-v: the TLS version" "$(errs)" "connected to 127\.0\.0\.1:$tp, $identre, RESP3, TLSv1\.[23]$"
  expect_match "-v: connecting ... with TLS" "$(errs)" "connecting to 127\.0\.0\.1:$tp with TLS"
  check "--tls-ca, the older name" 0 '' '' -- -p "$tp" --tls --tls-ca "$c/ca.crt" run tl -- true
  check "--cacertdir" 0 '' '' -- -p "$tp" --tls --cacertdir "$c/cadir" run tl -- true
  check "--sni with a wrong name: 69" 69 '' 'certificate verify failed' -- -p "$tp" --tls --cacert "$c/ca.crt" --sni wrong.example run tl -- true
  check "--cert --key: mutual TLS, ping" 0 '^tls: +TLSv1' '' -- -p "$tp" --tls --cacert "$c/ca.crt" --cert "$c/client.crt" --key "$c/client.key" ping
  check "--insecure with another CA: 0, warns" 0 '' 'not verified' -- -p "$tp" --tls --cacert "$c/other-ca.crt" --insecure run tl -- true
  check "--tls with a unix:// URL: 64" 64 '' 'Unix socket' -- -u "unix://$work/redis.sock" --tls run tl -- true
  printf 'url = redis://127.0.0.1:%s\ntls = yes\ncacert = %s\n' "$tp" "$c/ca.crt" >"$work/tls.conf"
  RESPLOCK_CONFIG="$work/tls.conf" check "config: tls = yes, cacert" 0 '' 'TLSv1' -- -v run tl -- true
else
  bad "could not make certificates or start a TLS redis-server"
fi

# ---------------------------------------------------------------- --max-time
t0=$(now_ms)
bg "$work/mt.out" "$work/mt.err" -u "$url" run mt --max-time 1s -- sh -c 'echo $$ >'"$work/mt.pid"'; sleep 30 & echo $! >'"$work/mt.child"'; wait'
pid=$BGPID
reap "$pid" $((10 * SLOW)) || bad "--max-time: run did not end" "$(cat "$work/mt.err")"
elapsed=$(( $(now_ms) - t0 ))
expect_eq "--max-time 1s: exit 124" "$CODE" 124
expect_range "--max-time 1s: stopped after a second (ms)" "$elapsed" 1000 "$(bound 2500 8000)"
expect_match "--max-time: says so" "$(grep -v '^==' "$work/mt.err")" "ran past --max-time"
expect_eq "--max-time: the lock is released" "$(R EXISTS mt)" 0
running "$(cat "$work/mt.child" 2>/dev/null || echo 0)" && bad "--max-time: the job's group is still running" ||
  ok "--max-time: the job's process group was stopped"
# A job that ignores SIGTERM gets SIGKILL --kill-after later.
t0=$(now_ms)
check "--max-time with a job that ignores SIGTERM: 124" 124 '' 'max-time' -- -u "$url" run mt --max-time 500ms --kill-after 500ms -- sh -c 'trap "" TERM; sleep 30'
expect_range "--max-time 500ms --kill-after 500ms: SIGKILL in time (ms)" $(( $(now_ms) - t0 )) 1000 "$(bound 2500 8000)"
expect_eq "... and the lock is released" "$(R EXISTS mt)" 0
check "--max-time not reached: the command's code" 3 '' '' -- -u "$url" run mt --max-time 1m -- sh -c 'exit 3'
check "--max-time 0: 64" 64 '' 'bad --max-time' -- -u "$url" run mt --max-time 0 -- true
check "acquire --max-time: 64" 64 '' 'for run' -- -u "$url" acquire mt --max-time 1s

# ---------------------------------------------------------- configuration
conf="$work/resplock.conf"
printf '# the server\n\n  url = %s  \n' "$url" >"$conf"
RESPLOCK_CONFIG=$conf check "RESPLOCK_CONFIG: the url" 0 '' '' -- run cf -- touch "$work/ran"
expect_eq "... the command ran" "$(ran)" ran
RESPLOCK_CONFIG=$conf check "-v names the file read" 0 '' "reading settings from $conf" -- -v run cf -- true
printf 'url = %s\n' "$url" >"$work/system.conf"
RESPLOCK_CONFIG_SYSTEM="$work/system.conf" check "the system file (RESPLOCK_CONFIG_SYSTEM)" 0 '' '' -- run cf -- true
printf 'url = %s\n' "$down" >"$work/system.conf"
RESPLOCK_CONFIG_SYSTEM="$work/system.conf" RESPLOCK_CONFIG=$conf check "RESPLOCK_CONFIG overrides the system file" 0 '' '' -- run cf -- true
RESPLOCK_CONFIG_SYSTEM="$work/system.conf" check "the system file's url is used" 69 '' 'refused' -- run cf -- true
printf 'url = %s\n' "$down" >"$work/down.conf"
RESPLOCK_CONFIG="$work/down.conf" REDIS_URL=$url check "the file overrides \$REDIS_URL" 69 '' '' -- run cf -- true
RESPLOCK_CONFIG="$work/down.conf" REDIS_URL=$down check "--url overrides both" 0 '' '' -- -u "$url" run cf -- true
RESPLOCK_CONFIG="$work/down.conf" check "-p overrides the file's url" 0 '' '' -- -p "$port" run cf -- true
printf 'host = 127.0.0.1\nport = %s\nprefix = app:\ntimeout = 1m30s\n' "$port" >"$work/hp.conf"
RESPLOCK_CONFIG="$work/hp.conf" check "host, port and prefix in the file" 0 '^app:cf$' '' -- run cf -- sh -c 'echo "$RESPLOCK_NAME"'
printf 'port = %s\n' "$closed_port" >"$work/port.conf"
RESPLOCK_CONFIG="$work/port.conf" REDIS_URL=$url check "the file's port is for its own url, not \$REDIS_URL's" 69 '' '' -- run cf -- true
expect_match "the file's port: the file's server is used" "$(errs)" "127\.0\.0\.1:$closed_port: Connection refused"
if [ -n "${ap-}" ]; then
  printf 'url = redis://127.0.0.1:%s\npassword-file = %s\n' "$ap" "$work/pw" >"$work/auth.conf"
  RESPLOCK_CONFIG="$work/auth.conf" check "password-file in the file" 0 '' '' -- run cf -- true
  expect_eq "... without a warning" "$(errs)" ""
fi
conf_error() { # NAME CONTENT STDERR-REGEX
  printf '%b' "$2" >"$work/bad.conf"
  RESPLOCK_CONFIG="$work/bad.conf" check "config: $1: 78" 78 '' "$3" -- -u "$url" run cf -- touch "$work/ran"
  expect_eq "config: $1: the command did not run" "$(ran)" ""
}
conf_error "unknown key" "# x\nurl = $url\nbogus = 1\n" "^resplock: $work/bad\.conf, line 3: unknown key 'bogus'$"
conf_error "a line without =" "url $url\n" "bad\.conf, line 1: expected 'key = value'"
conf_error "a key without a value" "prefix =\n" "bad\.conf, line 1: no value for 'prefix'"
conf_error "a bad port" "port = 70000\n" "bad\.conf, line 1: port: "
conf_error "a bad tls" "tls = maybe\n" "bad\.conf, line 1: tls: yes or no"
conf_error "a bad timeout" "\ntimeout = soon\n" "bad\.conf, line 2: timeout: "
printf 'url = 127.0.0.1\n' >"$work/badurl.conf"
RESPLOCK_CONFIG="$work/badurl.conf" check "config: a bad url names the file and line: 78" 78 '' "badurl\.conf, line 1: url: missing scheme" -- run cf -- true
printf 'url = redis://127.0.0.1:0\n' >"$work/badurl.conf"
RESPLOCK_CONFIG="$work/badurl.conf" check "config: a url the library refuses: 78" 78 '' "badurl\.conf, line 1: url: bad port" -- run cf -- true
RESPLOCK_CONFIG="$work/nosuch.conf" check "RESPLOCK_CONFIG names a missing file: 78" 78 '' "nosuch\.conf \(named by \\\$RESPLOCK_CONFIG\): No such file" -- -u "$url" run cf -- true
RESPLOCK_CONFIG="$work/bad.conf" check "usage errors come before the configuration" 64 '' 'bad --ttl' -- -u "$url" run cf -t soon -- true
RESPLOCK_CONFIG="$work/bad.conf" check "--help with a bad file: 0" 0 '^usage' '' -- --help

# ------------------------------------------------------------------ --prefix
check "--prefix: run's key is STR then NAME" 0 "^app:nightly rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)? 1$" '' -- -u "$url" --prefix app: run nightly -- \
  sh -c 'echo "$RESPLOCK_NAME $RESPLOCK_TOKEN $(redis-cli -p '"$port"' EXISTS app:nightly)"'
expect_eq "--prefix: nothing at the bare NAME" "$(R EXISTS nightly)" 0
acq=$($RLK_WRAP "$bin" -u "$url" --prefix a: acquire job -t 60s </dev/null); read -r ptok _ <<<"$acq"
expect_match "--prefix: acquire" "$acq" '^rlk:[0-9a-f]{32};h=[^ ;+]+;p=[0-9]+;t=[0-9]+(;c=[^ ;+]+)? [0-9]+$'
expect_eq "--prefix: acquire sets STR+NAME" "$(R GET a:job)" "$ptok"
check "--prefix: another application's lock of the same NAME is free" 0 '' '' -- -u "$url" --prefix b: run job -n -- touch "$work/ran"
expect_eq "... its command ran" "$(ran)" ran
check "--prefix: the same application's is held" 1 '' '' -- -u "$url" --prefix a: run job -n -- true
check "--prefix: status" 0 '^name: +a:job$' '' -- -u "$url" --prefix a: status job
check "--prefix: extend" 0 '' '' -- -u "$url" --prefix a: extend job "$ptok" 90s
expect_range "--prefix: extend set the TTL" "$(R PTTL a:job)" 85000 90000
check "--prefix: release" 0 '' '' -- -u "$url" --prefix a: release job "$ptok"
expect_eq "--prefix: released" "$(R EXISTS a:job)" 0
printf 'url = %s\nprefix = cfg/\n' "$url" >"$work/prefix.conf"
RESPLOCK_CONFIG="$work/prefix.conf" check "prefix in the file" 0 '^cfg/job$' '' -- run job -- sh -c 'echo "$RESPLOCK_NAME"'
RESPLOCK_CONFIG="$work/prefix.conf" check "--prefix overrides the file's" 0 '^opt-job$' '' -- --prefix opt- run job -- sh -c 'echo "$RESPLOCK_NAME"'

finish
