#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# TLS_TESTS (Makefile.am) names the server tests that reach the code a
# build without OpenSSL changes: the TLS transport and its "TLS support
# not compiled in" branches, and the SHA1 of scripts (OpenSSL's, or the
# internal one).  scripts/check-all's phase without OpenSSL runs only
# those and NO_SERVER_TESTS (make check-notls), so a server test that
# names rediss, TLS, SHA1 or OpenSSL in its source and is missing from
# TLS_TESTS would never meet that build: it fails here.  A word counts
# when no letter touches it (RLK_HAVE_OPENSSL and _tls count, but
# not ttls nor redisson).  The source is tests/NAME.c or the script.
set -u
pass=0 fail=0
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
ok() { echo "ok   $1"; pass=$((pass + 1)); }
[ -n "${RLK_TESTS:-}" ] && [ -n "${RLK_SERVER_TESTS:-}" ] && [ -n "${RLK_TLS_TESTS:-}" ] ||
  { echo "FAIL RLK_TESTS, RLK_SERVER_TESTS or RLK_TLS_TESTS unset (run by make check)"; echo "0 passed, 1 failed"; exit 1; }

source_of() {
  case $1 in
    *.sh) echo "$top_srcdir/$1" ;;
    *) echo "$top_srcdir/$1.c" ;;
  esac
}
names_tls() { grep -qiE '(^|[^a-z])(rediss|tls|sha1|openssl)([^a-z]|$)' "$1"; }
in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

for t in $RLK_TESTS; do
  [ "$t" != tests/tls-tests.sh ] || continue   # this script names those words
  in_list "$t" "$RLK_SERVER_TESTS" || continue  # the no-server tests all run without OpenSSL
  src=$(source_of "$t")
  [ -f "$src" ] || { bad "$t: no source $src"; continue; }
  if names_tls "$src"; then
    in_list "$t" "$RLK_TLS_TESTS" && ok "$t names TLS or SHA1: in TLS_TESTS" ||
      bad "$t names TLS or SHA1 (rediss, TLS, SHA1, OpenSSL), not in TLS_TESTS"
  fi
done
for t in $RLK_TLS_TESTS; do
  src=$(source_of "$t")
  if [ ! -f "$src" ]; then bad "TLS_TESTS names $t, which has no source"
  elif ! in_list "$t" "$RLK_SERVER_TESTS"; then bad "TLS_TESTS names $t, which is not in SERVER_TESTS"
  elif ! names_tls "$src"; then bad "TLS_TESTS names $t, which names no TLS nor SHA1"
  else ok "TLS_TESTS: $t names TLS or SHA1"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
