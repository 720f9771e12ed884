#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SERVER_TESTS (Makefile.am) names exactly the tests that talk to a real
# server: scripts/check-all runs those again against each server of
# scripts/servers, and a test that starts a server but is missing from
# the list would never meet them.  A test talks to a server when its
# source starts one: ts_start, tc_start or tsn_start (tests/server.h,
# cluster.h, sentinel.h), locktest_setup, or (a script)
# tests/redis-lib.sh, directly or through tests/cli-lock-lib.sh.  Every
# test of TESTS is looked at (its source is tests/NAME.c or the script
# itself): all of them under make check, those named under make check
# TESTS=....  NO_SERVER_TESTS names the others (make distcheck and a
# build without OpenSSL run them): each test of TESTS is in exactly one
# of the two lists.
set -u
pass=0 fail=0
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
ok() { echo "ok   $1"; pass=$((pass + 1)); }
[ -n "${RLK_TESTS:-}" ] && [ -n "${RLK_SERVER_TESTS:-}" ] && [ -n "${RLK_NO_SERVER_TESTS:-}" ] ||
  { echo "FAIL RLK_TESTS, RLK_SERVER_TESTS or RLK_NO_SERVER_TESTS unset (run by make check)"; echo "0 passed, 1 failed"; exit 1; }

source_of() {
  case $1 in
    *.sh) echo "$top_srcdir/$1" ;;
    *) echo "$top_srcdir/$1.c" ;;
  esac
}
talks() { grep -qE 'ts_start|tc_start|tsn_start|locktest_setup|redis-lib\.sh|cli-lock-lib\.sh' "$1"; }
listed() { case " $RLK_SERVER_TESTS " in *" $1 "*) return 0 ;; esac; return 1; }
unlisted() { case " ${RLK_NO_SERVER_TESTS:-} " in *" $1 "*) return 0 ;; esac; return 1; }

for t in $RLK_TESTS; do
  [ "$t" != tests/server-tests.sh ] || continue   # this script names those words
  src=$(source_of "$t")
  [ -f "$src" ] || { bad "$t: no source $src"; continue; }
  if talks "$src"; then
    listed "$t" && ok "$t talks to a server: in SERVER_TESTS" || bad "$t talks to a server, not in SERVER_TESTS"
  else
    listed "$t" && bad "$t starts no server, but is in SERVER_TESTS" || ok "$t: no server"
  fi
  if listed "$t"; then
    unlisted "$t" && bad "$t is in both SERVER_TESTS and NO_SERVER_TESTS" || ok "$t: in one list"
  else
    unlisted "$t" && ok "$t: in NO_SERVER_TESTS" || bad "$t is in neither SERVER_TESTS nor NO_SERVER_TESTS"
  fi
done
for t in ${RLK_NO_SERVER_TESTS:-}; do
  case " $RLK_TESTS " in *" $t "*) continue ;; esac
  # Under make check TESTS=..., a test left out is still a test of
  # Makefile.am's if its source is there.
  [ -f "$(source_of "$t")" ] && ok "NO_SERVER_TESTS: $t has a source" || bad "NO_SERVER_TESTS names $t, which has no source"
done
for t in $RLK_SERVER_TESTS; do
  src=$(source_of "$t")
  if [ -f "$src" ] && talks "$src"; then ok "SERVER_TESTS: $t starts a server"
  else bad "SERVER_TESTS names $t, which starts no server"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
