#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The rule for a test that needs a server and has none: it is skipped
# (exit 77, automake's SKIP, with one line saying why and what to do)
# only when the server program is missing and RLK_REQUIRE_SERVER is not
# set; with RLK_REQUIRE_SERVER=1 (scripts/check-all and CI set it) the
# same is a failure (any exit but 0 and 77); a server program that is
# there but does not start is a failure either way.
#
# Checked on C programs (one on a single server, one on a cluster:
# tests/server.c, tests/cluster.c) and on shell suites (the lock suites'
# library, a suite on the plain server library, a cluster suite), each run
# with RLK_REDIS_SERVER naming a file that does not exist, then a program
# that exits 1.  Starts no server.
set -u
: "${top_srcdir:?top_srcdir must be set}" "${top_builddir:?top_builddir must be set}"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); shift; local l; for l in "$@"; do echo "  $l"; done; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/server-skip.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

missing=$tmp/no/such/redis-server
mkdir -p "$tmp/broken"
printf '#!/bin/sh\necho "not a server" >&2\nexit 1\n' >"$tmp/broken/redis-server"
chmod 755 "$tmp/broken/redis-server"
skip_line="SKIP: redis-server not found (RLK_REDIS_SERVER=$missing); install it: scripts/install-deps, or set RLK_REQUIRE_SERVER=1 to make this a failure"

# run TEST [VAR=value...]: runs tests/TEST (a program under RLK_WRAP, or a
# script) with the environment given, no stdin; sets code, and the output
# (stdout and stderr) in $tmp/out.
run() {
  local t=$1; shift
  case $t in
    *.sh) env -u RLK_REQUIRE_SERVER "$@" bash "$top_srcdir/tests/$t" ;;
    *) env -u RLK_REQUIRE_SERVER "$@" ${RLK_WRAP:-} "$top_builddir/tests/$t" ;;
  esac </dev/null >"$tmp/out" 2>&1
  code=$?
}
shown() { sed 's/^/    /' "$tmp/out" | tail -n 8; }

for t in test_lock_basic test_cluster_env cli-options.sh cli-ping.sh cli-cluster-env.sh; do
  run "$t" RLK_REDIS_SERVER="$missing"
  if [ "$code" = 77 ] && grep -qxF -- "$skip_line" "$tmp/out"; then
    ok "$t, no server program: skipped (77), saying why"
  else
    bad "$t, no server program: exit $code, want 77 and the line '$skip_line'" "$(shown)"
  fi

  run "$t" RLK_REDIS_SERVER="$missing" RLK_REQUIRE_SERVER=1
  if [ "$code" != 77 ] && [ "$code" != 0 ] &&
     grep -qF "redis-server not found (RLK_REDIS_SERVER=$missing), and RLK_REQUIRE_SERVER is set" "$tmp/out"; then
    ok "$t, no server program, RLK_REQUIRE_SERVER=1: a failure (exit $code), saying why"
  else
    bad "$t, no server program, RLK_REQUIRE_SERVER=1: exit $code, want a failure saying why" "$(shown)"
  fi

  run "$t" RLK_REDIS_SERVER="$tmp/broken/redis-server"
  if [ "$code" != 77 ] && [ "$code" != 0 ] && ! grep -q '^SKIP' "$tmp/out"; then
    ok "$t, a server program that does not start: a failure (exit $code), not a skip"
  else
    bad "$t, a server program that does not start: exit $code, want a failure" "$(shown)"
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
