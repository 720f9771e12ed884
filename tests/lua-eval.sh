#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The server-side scripts in src/lua/ run alone with redis-cli --eval, as
# each file's header says ("Try it:"): that line is taken from the file
# and run as it is written.  Then one lock's life through the scripts by
# hand: the keys are in the order every script shares.
. "$top_srcdir/tests/cli-lock-lib.sh"

rlk_redis_start lua "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
R() { redis-cli -p "$port" "$@"; }
lua="$top_srcdir/src/lua"

for f in "$lua"/*.lua; do
  base=$(basename "$f")
  # The "Try it:" line and its continuation lines, without the comment
  # marks and the backslashes.
  cmd=$(sed -n '/^-- Try it:/,/^[^-]/p' "$f" | grep '^--' |
        sed -e 's/^-- *Try it: *//' -e 's/^-- *//' -e 's/\\$//' | tr '\n' ' ')
  if [ -z "$cmd" ]; then bad "$base: no 'Try it:' line"; continue; fi
  R FLUSHALL >/dev/null
  R SET job tok1 PX 30000 >/dev/null # a lock to look at, extend, renew, release
  out=$(cd "$lua" && eval "${cmd/redis-cli/redis-cli -p $port}" 2>&1)
  code=$?
  if [ "$code" = 0 ] && ! printf '%s\n' "$out" | grep -q 'ERR\|error'; then
    ok "$base runs alone: $(printf '%s' "$out" | tr '\n' ' ')"
  else
    bad "$base runs alone" "exit $code: $out"
  fi
done

# One lock's life.
ev() { local f=$1; shift; (cd "$lua" && redis-cli -p "$port" --eval "$f" "$@"); }
K="job {job}:queue {job}:waiters"
R FLUSHALL >/dev/null
expect_eq "acquire (mode 0) takes a free lock" "$(ev acquire.lua $K , tokA 30000 s 0 | head -1)" 1
expect_eq "the lock holds the token" "$(R GET job)" tokA
expect_eq "another holder is refused" "$(ev acquire.lua $K , tokB 30000 s w 3000 ch:b 2000 | head -1)" 0
expect_eq "... and joins the line" "$(R LRANGE '{job}:queue' 0 -1)" tokB
expect_eq "extend by the holder" "$(ev extend.lua job , tokA 45000 set s)" 45000
expect_eq "extend by another: -2" "$(ev extend.lua job , tokB 45000 set s)" -2
expect_eq "renew: renewed" "$(ev renew.lua job , s tokA 30000)" 1
# ... no holder facts (tokA is no rlk: token), and a lock (0).
expect_match "status: held, its TTL, one waiter" "$(ev status.lua $K | tr '\n' ' ')" '^1 string (29[0-9]{3}|30000) 0 1  0 $'
# tokB's channel has no listener: the release skips it and frees the lock.
expect_eq "release by the holder" \
  "$(ev release.lua $K , tokA)" 1
expect_eq "the lock is free" "$(R EXISTS job)" 0
expect_eq "release again: not held" \
  "$(ev release.lua $K , tokX)" 0
expect_eq "release re-sent within the validity: released" "$(ev release.lua $K , tokX 1)" 1
R FLUSHALL >/dev/null
ev acquire.lua $K , tokC 30000 s 0 >/dev/null
expect_eq "an uncontended release: released" "$(ev release.lua $K , tokC)" 1
expect_eq "... and nothing is left" "$(R DBSIZE)" 0
# A reentrant lock: two holds, two releases, each with its tombstone.
expect_eq "reentrant: taken" "$(ev acquire.lua $K , f1 30000 r 0 | sed -n 3p)" 1
expect_eq "reentrant: taken again" "$(ev acquire.lua $K , f1 30000 r 0 | sed -n 3p)" 2
expect_eq "reentrant: one hold fewer" "$(ev release.lua $K '{job}:released:id1' , f1 0 5000)" 2
expect_eq "reentrant: the same release re-sent: the same answer" \
  "$(ev release.lua $K '{job}:released:id1' , f1 0 5000)" 2
expect_eq "reentrant: released" "$(ev release.lua $K '{job}:released:id2' , f1 0 5000)" 1
expect_eq "reentrant: free" "$(R EXISTS job)" 0
expect_range "reentrant: the tombstones expire" "$(R PTTL '{job}:released:id2')" 1 5000

# A limiter's life (rate.lua): 10 per second, a burst of 3.
RK=resplock:rate:api
R FLUSHALL >/dev/null
expect_eq "rate: a look (n 0) at an idle limiter: allowed, 3 left, idle" \
  "$(ev rate.lua $RK , 10 1000 3 0 | tr '\n' ' ')" "1 0 3 0 "
expect_eq "rate: ... and writes nothing" "$(R DBSIZE)" 0
# The next three in one pipeline on one connection, so that no
# interval passes between them however slow the machine (a redis-cli
# each, under ASan at -j4: the fourth was let through).
sha=$(R SCRIPT LOAD "$(cat "$lua/rate.lua")")
three=$(printf 'EVALSHA %s 1 %s 10 1000 3 %s\n' "$sha" "$RK" 1 "$sha" "$RK" 2 "$sha" "$RK" 1 | R)
expect_eq "rate: the first of a burst: allowed, 2 left" "$(sed -n 3p <<<"$three")" 2
expect_eq "rate: two at once: allowed, none left" "$(sed -n '5p;7p' <<<"$three" | tr '\n' ' ')" "1 0 "
out=$(sed -n '9,12p' <<<"$three" | tr '\n' ' ')
expect_match "rate: the fourth is refused, its wait at most one interval (100 ms)" "$out" '^0 ([1-9][0-9]?|100) 0 ([23][0-9]{2}) $'
expect_range "rate: the key expires when the limiter is idle again" "$(R PTTL $RK)" 1 300
expect_match "rate: the key holds the TAT, server microseconds" "$(R GET $RK)" '^[0-9]{16}$'
expect_match "rate: n > burst is an error" "$(ev rate.lua $RK , 10 1000 3 4 2>&1)" 'n > burst'
expect_match "rate: a rate of 0 is an error" "$(ev rate.lua $RK , 0 1000 3 1 2>&1)" 'positive integers'
expect_match "rate: a burst of 0 is an error" "$(ev rate.lua $RK , 10 1000 0 0 2>&1)" 'positive integers'
# The TAT counts the server's microseconds: an emission interval below
# one would not move it (SET ... PX 0, a count of what is left one short).
expect_match "rate: more than one decision a microsecond is an error" \
    "$(ev rate.lua $RK , 1000000000 1000 3 1 2>&1)" 'over one decision a microsecond'
expect_match "rate: ... 1,000,001 a second too" "$(ev rate.lua $RK , 1000001 1000 3 1 2>&1)" \
    'over one decision a microsecond'
R DEL $RK >/dev/null
expect_eq "rate: one a microsecond (10^6 a second, burst 10^6): allowed, 999,999 left" \
    "$(ev rate.lua $RK , 1000000 1000 1000000 1 2>&1 | sed -n '1p;3p' | tr '\n' ' ')" "1 999999 "
R DEL $RK >/dev/null
R SET $RK notanumber >/dev/null
expect_match "rate: a key that is no limiter's is an error" "$(ev rate.lua $RK , 10 1000 3 1 2>&1)" "no limiter"
expect_eq "rate: ... and is left as it was" "$(R GET $RK)" notanumber

# A semaphore's life (sem_*.lua): 3 permits.
S='resplock:sem:{db}'
SK="$S $S:line"
CH="$S:wake"
R FLUSHALL >/dev/null
expect_eq "sem: 2 of 3 taken" "$(ev sem_acquire.lua $SK , 3 2 30000 t1 0 $CH p h=x | sed -n '1p;3p;4p' | tr '\n' ' ')" "1 2 3 "
expect_eq "sem: 2 more refused, no place asked for" "$(ev sem_acquire.lua $SK , 3 2 30000 t2 0 $CH p h=x | head -1)" 0
expect_eq "... none taken" "$(R ZCARD $S:line)" 0
expect_eq "sem: with a lease: refused" "$(ev sem_acquire.lua $SK , 3 2 30000 t2 5000 $CH p h=x | head -1)" 0
expect_eq "... and in line" "$(R ZRANGE $S:line 0 -1)" t2
expect_eq "sem: 1 behind a waiter for 2 refused, though 1 is free (head of line)" \
  "$(ev sem_acquire.lua $SK , 3 1 30000 t3 5000 $CH p h=x | sed -n '1,2p' | tr '\n' ' ')" "0 1 "
expect_eq "sem: renew (p) of a holder" "$(ev renew.lua $S , p t1 60000)" 1
expect_match "... its expiry moved on the server's clock" "$(R HGET $S h:t1)" '^2 [0-9]+ [0-9]{13}$'
expect_range "... the key lives as long" "$(R PTTL $S)" 50000 60000
R HSET $S h:old "1 5 1000" >/dev/null # a holder whose expiry passed (1970), not pruned yet
expect_eq "sem: renew of a holder whose expiry passed: not renewed" "$(ev renew.lua $S , p old 30000)" -2
expect_eq "... left as it was" "$(R HGET $S h:old)" "1 5 1000"
expect_eq "sem: its release: not held" "$(ev sem_release.lua $SK , old $CH p r)" 0
expect_eq "... and pruned" "$(R HEXISTS $S h:old)" 0
expect_eq "sem: the holder's release" "$(ev sem_release.lua $SK , t1 $CH p r)" 1
expect_eq "sem: the head of the line gets its 2, one more fence" \
  "$(ev sem_acquire.lua $SK , 3 2 30000 t2 5000 $CH p h=x | sed -n '1p' )" 1
expect_eq "... and leaves the line" "$(R ZRANGE $S:line 0 -1)" t3
expect_eq "sem: the waiter behind it leaves the line" "$(ev sem_release.lua $SK , t3 $CH p l)" 1
expect_eq "sem: status: a semaphore of 3, fence, no waiter, one holder of 2" \
  "$(ev sem_status.lua $SK | sed -n '1p;4p;5p;6p' | tr '\n' ' ')" "1 0 t2 2 "
expect_match "sem: k > size is an error" "$(ev sem_acquire.lua $SK , 3 4 30000 t4 0 $CH p h=x 2>&1)" 'k <= size'
R SET 'resplock:sem:{s}' str PX 60000 >/dev/null
expect_match "sem: keys of another type: an error" \
  "$(ev sem_acquire.lua 'resplock:sem:{s}' 'resplock:sem:{s}:line' , 3 1 30000 t1 0 ch p h=x 2>&1)" 'WRONGTYPE'
expect_eq "... left as they were" "$(R GET 'resplock:sem:{s}')" str

finish
