#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The layers' names: the request core and everything under it (the
# drivers, the route, the transports) names no primitive: no lock, lease,
# waiter, handoff, fence or token, no primitive's header or the
# session's, so that every primitive (lock today; semaphore, read-write
# lock, rate limiter, delay queue later) sits on them as an equal and
# they call none.  And the client reaches the drivers only through the
# route: client.c names no rlk__driver.  Fails, naming each line.
set -u
src="${top_srcdir:-.}/src"
words='lock|locks|locked|acquire[sd]?|release[sd]?|lease[sd]?|waiters?|handoffs?|fences?|tokens?|semaphores?|sessions?|rlk_session[a-z_]*|rlk__session[a-z_]*|rlk__locks?[a-z_]*|keys\.h|lua\.h|lease\.h|waiter\.h|lock\.h|session[a-z_]*\.h|client\.h'
pass=0 fail=0
# Every file of the floors below the primitives (src/net, src/core,
# src/route), but the two tables of the public API that every floor may
# use (status texts, the configurations' defaults): by design they name
# every status and structure.
files=$(cd "$src" && ls net/*.[ch] core/*.[ch] route/*.[ch] 2>/dev/null | grep -v -x -E 'core/(strerror|options)\.c')
[ -n "$files" ] || { echo "FAIL: no files under $src/net, core, route"; echo "0 passed, 1 failed"; exit 1; }
for f in $files; do
    if [ ! -f "$src/$f" ]; then
        echo "FAIL src/$f: missing"
        fail=$((fail + 1))
        continue
    fi
    hits=$(grep -n -i -w -E "$words" "$src/$f")
    if [ -n "$hits" ]; then
        echo "FAIL src/$f names a primitive:"
        echo "$hits"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
done
hits=$(grep -n 'rlk__driver' "$src/client/client.c")
if [ -n "$hits" ]; then
    echo "FAIL src/client/client.c reaches a driver past the route:"
    echo "$hits"
    fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
# The checks themselves can fail: a line naming a lock, a driver call.
if printf '/* the lock is held */\n' | grep -q -i -w -E "$words" &&
    printf 'rlk__driver_step(d, 0);\n' | grep -q 'rlk__driver'; then
    pass=$((pass + 1))
else
    echo "FAIL the word lists no longer catch what they are for"
    fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
