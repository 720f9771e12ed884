#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# doc/resplock.3 names every function the installed headers declare
# (include/resplock/resplock.h, include/resplock/resp.h, include/resplock/adapters/poll.h) and every status
# code, so that the page cannot fall behind the API; and groff renders it
# without a warning.
set -u
: "${top_srcdir:?top_srcdir must be set (make check sets it)}"
page="$top_srcdir/doc/resplock.3"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

. "$top_srcdir/tests/api-lib.sh"
functions=$(rlk_public_functions)
codes=$(rlk_status_codes)
nf=$(printf '%s\n' "$functions" | grep -c .)
[ "$nf" -ge 100 ] && ok "the headers declare $nf functions" ||
  bad "the headers declare $nf functions, want at least 100 (is the parsing broken?)"

# The page's words, with groff's escapes for hyphens taken out.
text=$(sed 's/\\-/-/g' "$page")
missing=()
for f in $functions; do
  grep -qE "(^|[^a-z0-9_])$f([^a-z0-9_]|$)" <<<"$text" || missing+=("$f")
done
[ ${#missing[@]} -eq 0 ] && ok "doc/resplock.3 names all $nf functions" ||
  bad "doc/resplock.3 does not name: ${missing[*]}"
missing=()
for c in $codes; do
  grep -qE "(^|[^A-Z0-9_])$c([^A-Z0-9_]|$)" <<<"$text" || missing+=("$c")
done
[ ${#missing[@]} -eq 0 ] && ok "doc/resplock.3 names every status code ($(echo $codes | wc -w))" ||
  bad "doc/resplock.3 does not name the statuses: ${missing[*]}"

for see in 'resplock (1)' 'resplock\-protocol (7)'; do
  grep -qF ".BR $see" "$page" && ok "SEE ALSO ${see/\\/}" || bad "SEE ALSO lacks ${see/\\/}"
done

if ! command -v groff >/dev/null; then
  bad "groff -ww: groff is not installed (Debian: groff-base)"
else
  warnings=$(groff -man -ww -z "$page" 2>&1)
  [ -z "$warnings" ] && ok "groff -man -ww finds nothing to warn about" ||
    { bad "groff -man -ww warns:"; printf '  %s\n' "$warnings"; }
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
