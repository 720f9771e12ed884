#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rlk_strerror() knows every status: the status codes are the members of
# the unnamed enums of the public headers (include/resplock/resp.h, include/resplock/resplock.h),
# read from the headers here, so that a new code without its words fails.
# Each must have words of its own (not "unknown status", and no two codes
# the same), and every number near them that is no code must give
# "unknown status".  The program is compiled as a user's would be, against
# the built library.
set -u
: "${top_srcdir:?top_srcdir must be set (make check sets it)}" "${top_builddir:?}"
cc=${RLK_CC:-cc}
cflags=${RLK_CFLAGS:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL $1"; shift; printf '  %s\n' "$@"; echo "0 passed, 1 failed"; exit 1; }

. "$top_srcdir/tests/api-lib.sh"
names=$(rlk_status_codes)
count=$(printf '%s\n' "$names" | grep -c .)
[ "$count" -ge 18 ] || fail "the headers' status codes: $count found, want at least 18" $names

mkdir -p "$work/include/resplock"
ln -s "$top_srcdir/include/resplock/resplock.h" "$top_srcdir/include/resplock/resp.h" "$top_builddir/include/resplock/resplock_version.h" \
  "$work/include/resplock/"
{
  cat <<'C'
#include <resplock/resplock.h>
#include <stdio.h>
#include <string.h>

struct code { const char *name; int value; };
static const struct code codes[] = {
C
  for n in $names; do printf '    {"%s", %s},\n' "$n" "$n"; done
  cat <<'C'
};
#define NCODES (sizeof codes / sizeof codes[0])

static int pass, fail;
static void check(int ok, const char *what, int value, const char *got)
{
    printf("%s %s (%d): \"%s\"\n", ok ? "ok  " : "FAIL", what, value, got);
    if (ok) pass++; else fail++;
}

static int is_code(int v)
{
    for (size_t i = 0; i < NCODES; i++)
        if (codes[i].value == v) return 1;
    return 0;
}

int main(void)
{
    const char *unknown = rlk_strerror(-1000000);
    int lo = 0, hi = 0;
    for (size_t i = 0; i < NCODES; i++) {
        const char *s = rlk_strerror(codes[i].value);
        int own = s && *s && strcmp(s, unknown) != 0;
        for (size_t j = 0; own && j < NCODES; j++)
            if (j != i && codes[j].value != codes[i].value && strcmp(s, rlk_strerror(codes[j].value)) == 0)
                own = 0;
        check(own, codes[i].name, codes[i].value, s ? s : "(null)");
        if (codes[i].value < lo) lo = codes[i].value;
        if (codes[i].value > hi) hi = codes[i].value;
    }
    check(strcmp(unknown, "unknown status") == 0, "a number far from any code", -1000000, unknown);
    /* Every other number from below the lowest code to above the highest. */
    for (int v = lo - 3; v <= hi + 3; v++) {
        if (is_code(v)) continue;
        const char *s = rlk_strerror(v);
        check(strcmp(s, "unknown status") == 0, "no code", v, s);
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail != 0;
}
C
} >"$work/strerror.c"

if ! $cc $cflags -Wall -Wextra -Werror -I"$work/include" -c -o "$work/strerror.o" "$work/strerror.c" \
     >"$work/build.log" 2>&1 ||
   ! "$top_builddir/libtool" --quiet --mode=link --tag=CC $cc $cflags -static \
     -o "$work/strerror" "$work/strerror.o" "$top_builddir/libresplock.la" -pthread >>"$work/build.log" 2>&1; then
  fail "the status table program compiles and links" "$(cat "$work/build.log")"
fi
echo "the headers' status codes: $(echo $names)"
${RLK_WRAP:-} "$work/strerror"
