#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Where resplock's server and run settings come from, against real
# servers: -u, $RESPLOCK_URL, the configuration file, $REDIS_URL and the
# default, in that order, with a warning when $REDIS_URL is passed over;
# run defaults in the file; a malformed URL is 64 or 78, never 69; the
# hints of its messages; the journal's log mode; -v's "waiting".
. "$top_srcdir/tests/cli-lock-lib.sh"

export RESPLOCK_CONFIG_SYSTEM="$work/no-system.conf"
unset RESPLOCK_CONFIG RESPLOCK_URL REDIS_URL REDISCLI_AUTH JOURNAL_STREAM
errs() { grep -v '^==' "$work/err"; }

rlk_redis_start a "$work" || die "could not start redis-server A"
pa=$RLK_REDIS_PORT
rlk_redis_start b "$work" || die "could not start redis-server B"
pb=$RLK_REDIS_PORT
REDISCLI_AUTH=s3cret-pw rlk_redis_start auth "$work" --requirepass s3cret-pw || die "could not start redis-server with a password"
pp=$RLK_REDIS_PORT
A="redis://127.0.0.1:$pa" B="redis://127.0.0.1:$pb"
printf 's3cret-pw\n' >"$work/pw"

# The job says which server holds the lock while it runs.
where='for p in '"$pa $pb"'; do [ "$(redis-cli -p $p EXISTS "$RESPLOCK_NAME")" = 1 ] && echo "on $p"; done; true'

# -------------------------------------------------- the server's URL, in order
conf="$work/a.conf"
printf 'url = %s\n' "$A" >"$conf"
RESPLOCK_CONFIG=$conf REDIS_URL=$B check "file on A, \$REDIS_URL on B: locks on A" 0 "^on $pa\$" '' -- run order -- sh -c "$where"
expect_eq "file on A, \$REDIS_URL on B: only A" "$(cat "$work/out")" "on $pa"
expect_match "file on A, \$REDIS_URL on B: a warning naming both, and the choice" "$(errs)" \
  "^resplock: warning: \\\$REDIS_URL \(127\.0\.0\.1:$pb\) is not used: .*a\.conf.*\(127\.0\.0\.1:$pa\); .*-u or \\\$RESPLOCK_URL"
expect_eq "the warning is said once" "$(errs | grep -c 'warning')" 1
RESPLOCK_CONFIG=$conf REDIS_URL="$A/0" check "\$REDIS_URL names the file's server: no warning" 0 "^on $pa\$" '' -- run order -- sh -c "$where"
expect_eq "\$REDIS_URL names the file's server: nothing on stderr" "$(errs)" ""
RESPLOCK_CONFIG=$conf REDIS_URL=$A RESPLOCK_URL=$B check "\$RESPLOCK_URL beats the file" 0 "^on $pb\$" '' -- run order -- sh -c "$where"
expect_eq "\$RESPLOCK_URL: no warning" "$(errs)" ""
RESPLOCK_CONFIG=$conf RESPLOCK_URL=$B check "\$RESPLOCK_URL, -v: the file's server settings are not used" 0 '' '' -- -v run order -- true
expect_match "-v says the file's server is passed over" "$(errs)" "a\.conf, line 1: the file's server settings are not used: the server is \\\$RESPLOCK_URL's"
RESPLOCK_CONFIG=$conf REDIS_URL=$B RESPLOCK_URL=$B check "-u beats all" 0 "^on $pa\$" '' -- -u "$A" run order -- sh -c "$where"
REDIS_URL=$B check "no file: \$REDIS_URL beats the default" 0 "^on $pb\$" '' -- run order -- sh -c "$where"
printf 'ttl = 1m\nprefix = p:\n' >"$work/policy.conf"
RESPLOCK_CONFIG="$work/policy.conf" REDIS_URL=$B check "a file without server settings: \$REDIS_URL" 0 "^on $pb\$" '' -- run order -- sh -c "$where"
expect_eq "a file without server settings: no warning" "$(errs)" ""

# The file's password-file, user, host, port and tls belong to its own
# server: an environment URL is whole and takes none of them.
printf 'url = redis://127.0.0.1:%s\npassword-file = %s\n' "$pp" "$work/pw" >"$work/pw.conf"
RESPLOCK_CONFIG="$work/pw.conf" REDIS_URL="redis://127.0.0.1:$pp" check "password-file: kept over \$REDIS_URL (the same server)" 0 '' '' -- run order -- true
RESPLOCK_CONFIG="$work/pw.conf" RESPLOCK_URL="redis://127.0.0.1:$pp" check "password-file: not for \$RESPLOCK_URL, and the hint says so" 69 '' "NOAUTH.*--askpass or --pass-file FILE; the password-file of .*pw\\.conf, line 2, is for the file's server, not \\\$RESPLOCK_URL's" -- run order -- true
RESPLOCK_CONFIG="$work/pw.conf" RESPLOCK_URL="redis://:s3cret-pw@127.0.0.1:$pp" check "\$RESPLOCK_URL with its own password" 0 '' '' -- run order -- true
printf 'password-file = %s\n' "$work/pw" >"$work/pwonly.conf"
RESPLOCK_CONFIG="$work/pwonly.conf" REDIS_URL="redis://127.0.0.1:$pp" check "a file with only password-file: its server (the default), not \$REDIS_URL" 69 '' '' -- run order -- true
expect_match "a file with only password-file: the warning names both" "$(errs)" "warning: \\\$REDIS_URL \(127\.0\.0\.1:$pp\) is not used: .*\(127\.0\.0\.1:6379\)"

# -------------------------------------------------- run defaults in the file
ttl_of() { sh -c 'echo "$RESPLOCK_TTL_MS $RESPLOCK_NAME"'; }
printf 'url = %s\nttl = 10m\nprefix = app:\nhold-min = 3s\n' "$A" >"$work/run.conf"
RESPLOCK_CONFIG="$work/run.conf" check "ttl and prefix from the file" 0 '^600000 app:dflt$' '' -- run dflt -- sh -c 'echo "$RESPLOCK_TTL_MS $RESPLOCK_NAME"'
pttl=$(redis-cli -p "$pa" PTTL app:dflt)
expect_range "hold-min from the file: the lock stays after the job" "$pttl" 1 3000
redis-cli -p "$pa" DEL app:dflt >/dev/null
RESPLOCK_CONFIG="$work/run.conf" check "the options override the file" 0 '^5000 other:dflt$' '' -- run dflt -t 5s --prefix other: --hold-min 0 -- sh -c 'echo "$RESPLOCK_TTL_MS $RESPLOCK_NAME"'
expect_eq "--hold-min 0 overrides the file's: released" "$(redis-cli -p "$pa" EXISTS other:dflt)" 0
RESPLOCK_CONFIG="$work/run.conf" check "acquire takes the file's ttl" 0 '' '' -- acquire dflt2
pttl=$(redis-cli -p "$pa" PTTL app:dflt2)
expect_range "acquire: the file's ttl" "$pttl" 590000 600000
redis-cli -p "$pa" DEL app:dflt2 >/dev/null

redis-cli -p "$pa" SET app:busy someone PX 60000 >/dev/null
printf 'url = %s\nprefix = app:\nwait = 300ms\n' "$A" >"$work/wait.conf"
t0=$(now_ms)
RESPLOCK_CONFIG="$work/wait.conf" check "wait from the file: gives up" 1 '' '' -- run busy -- true
expect_range "wait from the file: after about 300 ms" $(( $(now_ms) - t0 )) 300 $((3000 * SLOW))
redis-cli -p "$pa" DEL app:busy >/dev/null

printf 'url = %s\nmax-time = 1s\nkill-after = 200ms\n' "$A" >"$work/max.conf"
t0=$(now_ms)
RESPLOCK_CONFIG="$work/max.conf" check "max-time from the file: 124" 124 '' 'ran past --max-time' -- run mt -- sleep 30
expect_range "max-time 1s, kill-after 200ms: stopped in time" $(( $(now_ms) - t0 )) 1000 $((4000 * SLOW))
RESPLOCK_CONFIG="$work/max.conf" check "max-time from the file is run's only" 0 '' '' -- acquire mt2
# As resplock(1) says: --max-time releases, unless --hold-min still keeps the lock.
check "--max-time with --hold-min: 124" 124 '' 'ran past --max-time' -- -u "$A" run mh --max-time 500ms --kill-after 100ms --hold-min 20s -- sleep 30
expect_range "--max-time with --hold-min: the lock is kept for the rest of --hold-min" "$(redis-cli -p "$pa" PTTL mh)" 10000 20000
check "--max-time without --hold-min: 124" 124 '' 'ran past --max-time' -- -u "$A" run mr --max-time 500ms --kill-after 100ms -- sleep 30
expect_eq "--max-time without --hold-min: released" "$(redis-cli -p "$pa" EXISTS mr)" 0
printf 'url = %s\nttl = 3s\nkill-after = 10s\n' "$A" >"$work/kill.conf"
RESPLOCK_CONFIG="$work/kill.conf" check "kill-after from the file that does not fit the ttl: 78" 78 '' 'kill\.conf, line 3: .*does not fit' -- run ka -- true

bad_default() { # KEY VALUE
  printf 'url = %s\n%s = %s\n' "$A" "$1" "$2" >"$work/bad.conf"
  RESPLOCK_CONFIG="$work/bad.conf" check "config $1 = $2: 78" 78 '' "bad\\.conf, line 2: $1: " -- run bd -- touch "$work/ran"
  expect_eq "config $1 = $2: the job did not run" "$(test -e "$work/ran" && echo ran)" ""
}
bad_default ttl 10x
bad_default ttl 0
bad_default ttl 1ms
bad_default wait soon
bad_default hold-min -1s
bad_default max-time 0
bad_default kill-after 5q
RESPLOCK_CONFIG="$work/bad.conf" check "a bad default stops the command line's run too" 78 '' 'kill-after' -- run bd --kill-after 1s -- true

# -------------------------------------------------- a malformed URL: 64 or 78
for u in "redis://127.0.0.1:99999" "ftp://x" "127.0.0.1:$pa"; do
  check "-u $u: 64" 64 '' '^resplock: (connect: )?URL: ' -- -u "$u" run bu -- true
  RESPLOCK_URL=$u check "\$RESPLOCK_URL=$u: 78" 78 '' '^resplock: \$RESPLOCK_URL: ' -- run bu -- true
  REDIS_URL=$u check "\$REDIS_URL=$u: 78" 78 '' '^resplock: \$REDIS_URL: ' -- run bu -- true
  printf 'url = %s\n' "$u" >"$work/url.conf"
  RESPLOCK_CONFIG="$work/url.conf" check "url = $u in the file: 78" 78 '' 'url\.conf, line 1: url: ' -- run bu -- true
done
check "-u ... ping: 64" 64 '' 'URL: ' -- -u "redis://127.0.0.1:99999" ping

# -------------------------------------------------- messages
check "NOAUTH: a hint of --askpass and --pass-file" 69 '' 'NOAUTH.*--askpass.*--pass-file.*password-file' -- -p "$pp" run m -- true
check "WRONGPASS: the hint too" 69 '' 'WRONGPASS.*--askpass.*--pass-file' -- -u "redis://:nope@127.0.0.1:$pp" --no-auth-warning status m
check "--no-auth-warning: no warning for the password in -u" 0 '' '' -- --no-auth-warning -u "redis://:s3cret-pw@127.0.0.1:$pp" run m -- true
expect_eq "--no-auth-warning: nothing on stderr" "$(errs)" ""
check "--no-auth-warning after -a" 0 '' '' -- -a s3cret-pw -p "$pp" run m --no-auth-warning -- true
expect_eq "--no-auth-warning after -a: nothing on stderr" "$(errs)" ""
check "without --no-auth-warning: the warning" 0 '' 'warning: a password on the command line' -- -u "redis://:s3cret-pw@127.0.0.1:$pp" run m -- true

tok=$($RLK_WRAP "$bin" -u "$A" acquire rel </dev/null | cut -d' ' -f1)
check "release: 0" 0 '' '' -- -u "$A" release rel "$tok"
check "release again: released already, or expired" 1 '' "release: lock 'rel' is not held: released already, expired, or never taken" -- -u "$A" release rel "$tok"
RESPLOCK_CONFIG="$work/nosuch.conf" check "a missing \$RESPLOCK_CONFIG file: named by the variable" 78 '' 'nosuch\.conf \(named by \$RESPLOCK_CONFIG\): No such file' -- -u "$A" run m -- true

if "$top_srcdir/tests/gen-certs.sh" "$work/certs" >/dev/null 2>&1 &&
   rlk_redis_start_tls tls "$work" "$work/certs"; then
  tp=$RLK_REDIS_PORT
  check "a plain connection to a TLS port: run hints rediss://" 69 '' 'does the server want TLS\? use rediss://' -- -p "$tp" run m -- true
  check "a plain connection to a TLS port: ping hints too" 69 '' 'does the server want TLS\? use rediss://' -- -p "$tp" ping
  check "a plain connection to a TLS port: status hints too" 69 '' 'does the server want TLS\? use rediss://' -- -p "$tp" status m
else
  bad "could not make certificates or start a TLS redis-server"
fi
check "a refused connection: no TLS hint" 69 '' 'refused' -- -p "$closed_port" run m -- true
if grep -q 'TLS' "$work/err"; then bad "a refused connection hints TLS" "$(errs)"; else ok "a refused connection hints nothing of TLS"; fi

# -------------------------------------------------- the journal's log mode
: >"$work/journal"
stream=$(stat -c '%d:%i' "$work/journal")
JOURNAL_STREAM=$stream $RLK_WRAP "$bin" -v -u "$A" run jl -- true </dev/null 2>>"$work/journal"
expect_eq "journal: run exits 0" "$?" 0
j=$(grep -v '^==' "$work/journal")
expect_match "journal: -v's lines are there, priority info" "$j" "^<6>acquired 'jl'"
if grep -Eq '[0-9]{2}:[0-9]{2}:[0-9]{2}' <<<"$j"; then bad "journal: no timestamps" "$j"; else ok "journal: no timestamps"; fi
if grep -qv '^<[0-7]>' <<<"$j"; then bad "journal: every line has a priority" "$j"; else ok "journal: every line has a priority"; fi
JOURNAL_STREAM=$stream $RLK_WRAP "$bin" -p "$closed_port" run jl -- true </dev/null 2>"$work/journal"
expect_match "journal: an error has priority err" "$(grep -v '^==' "$work/journal")" '^<3>connect: .*refused'
JOURNAL_STREAM=$stream check "JOURNAL_STREAM of another file: timestamps as usual" 0 '' '' -- -v -u "$A" run jl -- true
expect_match "not the journal: timestamps" "$(errs)" '^resplock: [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z acquired'

# -------------------------------------------------- -v: "waiting" only when it waits
check "-v, a free lock" 0 '' '' -- -v -u "$A" run wt -- true
if grep -q 'waiting' "$work/err"; then bad "-v, a free lock: says it waits" "$(errs)"; else ok "-v, a free lock: no 'waiting'"; fi
check "-v acquire, a free lock" 0 '' '' -- -v -u "$A" acquire wt2 -w 5s
if grep -q 'waiting' "$work/err"; then bad "-v acquire, a free lock: says it waits" "$(errs)"; else ok "-v acquire, a free lock: no 'waiting'"; fi
redis-cli -p "$pa" SET wt someone PX 60000 >/dev/null
check "-v, a held lock, -w 300ms -T 200ms" 1 '' '' -- -v -u "$A" -T 200ms run wt -w 300ms -- true
expect_match "-v, a held lock: waiting for it" "$(errs)" "waiting for 'wt'"
bg "$work/fw.out" "$work/fw.err" -v -u "$A" run wt -- true
if wait_until $((10 * SLOW)) grep -qs "waiting for 'wt'" "$work/fw.err"; then ok "-v, a held lock, waiting for ever: says so"
else bad "-v, a held lock, waiting for ever: says so" "$(cat "$work/fw.err")"; fi
kill -s KILL -- "-$BGPID" 2>/dev/null; reap "$BGPID" 10
# A wait shorter than --timeout is not preceded by a try of its own (which
# --timeout, not the wait, would bound): it does not claim to wait.
check "-v, a held lock, -w 200ms under -T 5s" 1 '' '' -- -v -u "$A" run wt -w 200ms -- true
if grep -q 'waiting' "$work/err"; then bad "-v -w 200ms: says it waits" "$(errs)"; else ok "-v -w 200ms: says it tries within the wait"; fi
check "-v -n, a held lock: no wait" 1 '' '' -- -v -u "$A" run wt -n -- true
if grep -q 'waiting' "$work/err"; then bad "-v -n: says it waits" "$(errs)"; else ok "-v -n: no 'waiting'"; fi

finish
