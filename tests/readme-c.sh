#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every ```c block of README.md is a whole program: each is compiled as it
# stands against the built library (warnings are errors), run against a
# throwaway redis-server (REDIS_URL, and HOST PORT as arguments; the
# five-minute example its URL as its argument), and must exit 0 with the
# output its kind of example prints (the rate limiter's: its refusal and
# its wait within the limiter's interval, its key left to expire; the
# semaphore's: a third holder busy, then in after a release).  A block this
# script does not know fails, so a new example comes with its check.
. "$top_srcdir/tests/cli-lock-lib.sh"
readme="$top_srcdir/README.md"
cc=${RLK_CC:-cc}
cflags=${RLK_CFLAGS:-}

rlk_redis_start main "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
R() { redis-cli -p "$port" "$@"; }

# The headers as installed: <resplock/resplock.h>, <resplock/resp.h>,
# <resplock/resplock_version.h> (made by configure),
# <resplock/adapters/poll.h>.
mkdir -p "$work/include/resplock"
ln -s "$top_srcdir/include/resplock/resplock.h" "$top_srcdir/include/resplock/resp.h" "$top_srcdir/include/resplock/adapters" \
  "$top_builddir/include/resplock/resplock_version.h" \
  "$work/include/resplock/"

# The blocks, one file each: readme-1.c, readme-2.c...
awk -v dir="$work" '
  /^```c$/ { n++; file = dir "/readme-" n ".c"; on = 1; next }
  on && /^```$/ { on = 0; close(file); next }
  on { print > file }
  END { if (on) exit 1 }' "$readme" || bad "README.md: a C block is not closed"
blocks=$(ls "$work"/readme-*.c 2>/dev/null | wc -l)
[ "$blocks" -ge 5 ] && ok "README.md has $blocks C blocks" ||
  bad "README.md has $blocks C blocks, want at least 5 (five minutes, client, event loop, session, codec)"

# build NAME: compiles and links $work/NAME.c into $work/NAME.
build() {
  $cc $cflags -Wall -Wextra -Werror -I"$work/include" -c -o "$work/$1.o" "$work/$1.c" \
    >"$work/$1.build" 2>&1 &&
    "$top_builddir/libtool" --quiet --mode=link --tag=CC $cc $cflags -static \
      -o "$work/$1" "$work/$1.o" "$top_builddir/libresplock.la" -pthread >>"$work/$1.build" 2>&1
}

for src in "$work"/readme-*.c; do
  name=$(basename "$src" .c)
  first=$(grep -m1 -E 'adapters/poll\.h|conn\.url = argc|rlk_client_new|rlk_session_new|rlk_resp_parser_init' "$src")
  grep -q 'rlk_rate_take(' "$src" && first=rate
  grep -q 'rlk_sem_acquire(' "$src" && first=sem
  case $first in
    rate) kind=rate ;;
    sem) kind=sem ;;
    *adapters/poll.h*) kind=loop ;;
    *"conn.url = argc"*) kind=quick ;;
    *rlk_client_new*) kind=client ;;
    *rlk_session_new*) kind=session ;;
    *rlk_resp_parser_init*) kind=codec ;;
    *) bad "$name: a C block this test does not know (give it a check)" "$(head -5 "$src")"
       continue ;;
  esac
  if ! build "$name"; then
    bad "$name ($kind): compiles and links" "$(sed 's/^/  /' "$work/$name.build")"
    continue
  fi
  ok "$name ($kind): compiles and links"
  # The five-minute example takes its URL as its argument, the others
  # REDIS_URL or HOST PORT.
  lock=orders args=(127.0.0.1 "$port")
  [ "$kind" != quick ] || { lock=nightly-report args=("redis://127.0.0.1:$port"); }
  [ "$kind" != rate ] || lock=resplock:rate:sms
  [ "$kind" != sem ] || lock='resplock:sem:{pool}'
  R DEL "$lock" >/dev/null
  REDIS_URL="redis://127.0.0.1:$port" $RLK_WRAP "$work/$name" "${args[@]}" \
    </dev/null >"$work/$name.out" 2>"$work/$name.err"
  code=$?
  show=("$(sed 's/^/out: /' "$work/$name.out")" "$(sed 's/^/err: /' "$work/$name.err")")
  if [ "$code" = 0 ]; then ok "$name ($kind): exit 0"; else bad "$name ($kind): exit $code" "${show[@]}"; fi
  out=$(cat "$work/$name.out")
  case $kind in
    client)
      want=$'writing with fence [0-9]+\nreleased' ;;
    quick)
      # Held past its TTL: only the watchdog's renewals keep it so.
      want=$'fence [0-9]+\nheld after 3 s of work with a 2 s TTL: renewed\nreleased' ;;
    session|loop)
      want=$'acquired orders fence [0-9]+\nreleased' ;;
    codec)
      want=$'1: "hello"\n1: 42\nneed more; [0-9]+ bytes kept for the next read' ;;
    sem)
      want=$'two held, fences [0-9]+ and [0-9]+\nthe third: busy\nafter a release the third holds one' ;;
    rate)
      # Two at once from idle, the third refused for about the 1 s
      # interval, the fourth taken after sleeping the server's wait.
      want=$'refused: allowed again in [0-9]+ ms\nsent 3, refused 1, then waited [0-9]+ ms' ;;
  esac
  if [[ "$out" =~ ^$want$ ]]; then ok "$name ($kind): its output"
  else bad "$name ($kind): its output" "want /$want/" "${show[@]}"; fi
  if [ "$kind" = rate ]; then
    rw=$(sed -n 's/^refused: allowed again in \([0-9]*\) ms$/\1/p' "$work/$name.out")
    rs=$(sed -n 's/^sent .*then waited \([0-9]*\) ms$/\1/p' "$work/$name.out")
    if [ -n "$rw" ] && [ "$rw" -gt 0 ] && [ "$rw" -le 1000 ] && [ -n "$rs" ] && [ "$rs" -gt 0 ] && [ "$rs" -le 1002 ]
    then ok "$name ($kind): refused for at most the 1 s interval ($rw ms), then slept about as long ($rs ms)"
    else bad "$name ($kind): refused for $rw ms, slept $rs ms (want 1..1000 and 1..1002)"; fi
    pt=$(R PTTL "$lock")
    if [ "$pt" -gt 0 ] 2>/dev/null; then ok "$name ($kind): the limiter's key expires ($pt ms)"
    else bad "$name ($kind): the limiter's key's PTTL is $pt"; fi
  elif [ "$kind" = sem ]; then
    # Every permit given back: the state (kept for its fence until the
    # last holder's TTL) holds no holder.
    expect_eq "$name ($kind): every permit is given back" "$(R HKEYS "$lock" | grep -c '^h:')" 0
  elif [ "$kind" != codec ]; then
    expect_eq "$name ($kind): the lock is released" "$(R EXISTS "$lock")" 0
  fi
done
finish
