#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/dist-files.sh TARBALL: every file that git tracks in this tree is
# in the tarball (made by make dist), but those of NOT_SHIPPED below.
# make distcheck builds the tarball and runs its tests with no server
# (make distcheck-noserver); a file that only a server test, a script of
# scripts/ or the README needs would pass that and be missing for a
# user: it fails here.  Run by scripts/check-all after make distcheck;
# it needs git and the tree's .git (a fresh clone has them), and fails
# without them.
set -u
pass=0 fail=0
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
top=$(cd "$(dirname "$0")/.." && pwd)
# Tracked, and of no use in the tarball (.gitignore: a tarball is no
# git tree).
NOT_SHIPPED=" .gitignore "
end() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

[ $# -eq 1 ] || { echo "usage: tests/dist-files.sh TARBALL" >&2; exit 64; }
[ -f "$1" ] || { bad "no tarball $1"; end; }
tracked=$(git -C "$top" ls-files) && [ -n "$tracked" ] ||
  { bad "git ls-files in $top gave no file (no git, or not a git checkout)"; end; }
# The tarball's files, without their first component (resplock-VERSION/).
shipped=$(tar -tzf "$1" | sed -n 's|^[^/]*/||p' | grep -v '/$') ||
  { bad "tar -tzf $1 failed"; end; }
declare -A in_tar=()
while IFS= read -r f; do [ -z "$f" ] || in_tar[$f]=1; done <<<"$shipped"

n=0
while IFS= read -r f; do
  case "$NOT_SHIPPED" in *" $f "*) continue ;; esac
  if [ -n "${in_tar[$f]:-}" ]; then
    n=$((n + 1)); pass=$((pass + 1))
  else
    bad "$f is tracked by git but not in $(basename "$1") (add it to EXTRA_DIST or a _SOURCES)"
  fi
done <<<"$tracked"
echo "ok   $n tracked files in $(basename "$1")"
for f in $NOT_SHIPPED; do
  if grep -qxF "$f" <<<"$tracked"; then pass=$((pass + 1))
  else bad "NOT_SHIPPED names $f, which git does not track"; fi
done
end
