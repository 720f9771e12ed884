#!/usr/bin/env bash
# scripts/pack-text and src/net/unpack.c, both ways: texts packed by the
# one and unpacked by the other come back byte for byte (the usage text,
# the Lua scripts, bytes that are not ASCII, a run longer than a match,
# back references further than 4 KB and than 64 KB away, the empty text,
# text whose every byte is a literal), two functions of one text (the
# second's after a NUL), and the packed form of the usage text is at
# most 60% of it.  Ends with "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/main.c" <<'C'
#include <stdio.h>
#include <string.h>
const char *packed_text(void);
int main(void)
{
    const char *t = packed_text();
    fwrite(t, 1, strlen(t), stdout);
    return 0;
}
C
# round NAME FILE: FILE packed, compiled, unpacked and compared.
round() {
  if ! sh "$top/scripts/pack-text" --function packed_text <"$2" >"$work/p.c"; then
    bad "$1: pack-text failed"; return
  fi
  if ! ${CC:-cc} -Wall -Wextra -Werror -I"$top/src/net" -o "$work/t" "$work/main.c" "$work/p.c" \
      "$top/src/net/unpack.c" 2>"$work/cc.err"; then
    bad "$1: the packed text does not compile"; sed 's/^/  /' "$work/cc.err"; return
  fi
  if "$work/t" | cmp -s - "$2"; then ok "$1: unpacked as it was ($(wc -c <"$2") bytes)"
  else bad "$1: unpacked differs"; fi
}
round "the usage text" "$top/src/cli/usage.txt"
cat "$top"/src/lua/*.lua >"$work/lua"
round "the Lua scripts" "$work/lua"
printf 'd\303\251j\303\240 vu \342\200\224 d\303\251j\303\240 vu \342\200\224 \377\200\201\n' >"$work/utf8"
round "bytes that are not ASCII" "$work/utf8"
head -c 1000 /dev/zero | tr '\0' ' ' >"$work/run"
round "a run of 1000 spaces" "$work/run"
{ echo "the first line, said again at the end"; seq 1 20000; echo "the first line, said again at the end"; } >"$work/far"
round "100 KB, its first line again past the 64 KB reach" "$work/far"
: >"$work/empty"
round "the empty text" "$work/empty"
printf 'abcdefghijklmnopqrstuvwxyz0123456789' >"$work/lit"
round "no match at all" "$work/lit"
cat >"$work/two.c" <<'C'
#include <stdio.h>
#include <string.h>
const char *first(void);
const char *second(void);
int main(void)
{
    printf("%s|%s|%s\n", first(), second(), second() + strlen(second()) + 1);
    return 0;
}
C
printf 'the first text\0the second\0and after it' >"$work/nul"
if sh "$top/scripts/pack-text" --function first second <"$work/nul" >"$work/p2.c" &&
    ${CC:-cc} -Wall -Wextra -Werror -I"$top/src/net" -o "$work/t2" "$work/two.c" "$work/p2.c" \
      "$top/src/net/unpack.c" &&
    [ "$("$work/t2")" = "the first text|the second|and after it" ]; then
  ok "two functions, the second's text after the first NUL"
else bad "two functions, the second's text after the first NUL"; fi
p=$(sh "$top/scripts/pack-text" <"$top/src/cli/usage.txt" | sed '$d' |
    sed -e 's/^ *"//' -e 's/"$//' -e 's/\\[0-7][0-7][0-7]/x/g' | tr -d '\n' | wc -c)
n=$(wc -c <"$top/src/cli/usage.txt")
if [ $((p * 100)) -le $((n * 60)) ]; then ok "the usage text packs to $p of $n bytes"
else bad "the usage text packs to $p of $n bytes (more than 60%)"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
