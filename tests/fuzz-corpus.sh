#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Replays every file of the fuzz seed corpus through the harness built as a
# plain program (tests/fuzz_replay): each file must pass every property the
# harness checks.  Run by `make check`; RLK_WRAP (for example a valgrind
# command line) is put in front of the program.
set -u
: "${top_srcdir:?top_srcdir must be set (make check sets it)}"
: "${top_builddir:?top_builddir must be set (make check sets it)}"

# FUZZ_REPLAY and FUZZ_CORPUS name another harness and its corpus (see
# tests/fuzz-session-corpus.sh).
prog="$top_builddir/tests/${FUZZ_REPLAY:-fuzz_replay}"
corpus="$top_srcdir/fuzz/${FUZZ_CORPUS:-corpus}"
if [ ! -x "$prog" ]; then
    echo "fuzz-corpus: $prog not built" >&2
    exit 1
fi

pass=0 fail=0
shopt -s nullglob
files=("$corpus"/*)
if [ ${#files[@]} -eq 0 ]; then
    echo "fuzz-corpus: no files in $corpus" >&2
    exit 1
fi
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    # RLK_WRAP is a command line: word splitting is wanted here.
    # shellcheck disable=SC2086
    if out=$(${RLK_WRAP:-} "$prog" "$f" 2>&1); then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: ${f##*/}"
        printf '%s\n' "$out" | sed 's/^/    /'
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
