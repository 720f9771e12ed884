#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs respdump over the cases in tests/respdump-cases.
#
# A case is NAME.resp (the input bytes) with any of:
#   NAME.json   expected stdout with --json
#   NAME.txt    expected stdout of the default display
#   NAME.code   expected exit status (default 0)
#   NAME.err    expected stderr (default: empty); a last line ending in
#               '*' matches any text from there on (the parser's reason)
#   NAME.args   options put before the others (split on spaces)
# Each expectation is checked with the input given as FILE, on standard
# input, fed one byte per write through a pipe, and split in two writes at
# a few points: a streaming tool must print the same whatever the reads.
# Under RLK_WRAP (valgrind is slow to start) only FILE, one byte per write
# and one split run: they reach every code path the others do.
#
# Also: --help, a missing file, a missing option value, too many files,
# '-' and '--'; and the man page's examples, run as the page writes them
# (so the tools they call must be there: nc and jq, from
# scripts/install-deps), the first against a server of its own.  Without a
# redis-server the script skips (exit 77), or fails with
# RLK_REQUIRE_SERVER set.
#
# Environment: top_srcdir, top_builddir (from make check), RLK_WRAP (a
# command such as valgrind put in front of every run of respdump).
set -u

: "${top_srcdir:?top_srcdir must be set}"
: "${top_builddir:?top_builddir must be set}"
bin="$top_builddir/resp/respdump"
cases="$top_srcdir/tests/respdump-cases"
wrap=${RLK_WRAP:-}

if [ ! -x "$bin" ]; then
    echo "respdump.sh: $bin not built" >&2
    exit 99
fi

. "$top_srcdir/tests/redis-lib.sh"
rlk_redis_need_server
tmp=$(mktemp -d "${TMPDIR:-/tmp}/respdump-test.XXXXXX") || exit 99
trap 'rlk_redis_stop_all; rm -rf "$tmp"' EXIT

passed=0
failed=0

# check LABEL WANT_OUT_FILE WANT_CODE WANT_ERR_FILE
# compares $tmp/out, $tmp/err and $code with the expectations.
check() {
    local label=$1 want_out=$2 want_code=$3 want_err=$4 ok=1
    if ! cmp -s "$tmp/out" "$want_out"; then
        ok=0
        echo "FAIL $label: stdout differs"
        diff "$want_out" "$tmp/out" | head -n 10 | cat -A | sed 's/^/    /'
    fi
    if [ "$code" != "$want_code" ]; then
        ok=0
        echo "FAIL $label: exit status $code, want $want_code"
    fi
    if ! err_matches "$want_err"; then
        ok=0
        echo "FAIL $label: stderr differs"
        echo "    got:"
        head -n 10 "$tmp/err" | sed 's/^/      /'
        echo "    want:"
        if [ -n "$want_err" ]; then sed 's/^/      /' "$want_err"; fi
    fi
    if [ $ok = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# err_matches FILE: $tmp/err against FILE (empty name: must be empty).
err_matches() {
    local want got last prefix
    if [ -z "$1" ]; then
        [ ! -s "$tmp/err" ]
        return
    fi
    want=$(cat "$1"; echo x)
    want=${want%x}
    got=$(cat "$tmp/err"; echo x)
    got=${got%x}
    last=${want%$'\n'}
    if [ "${last: -1}" = '*' ]; then
        prefix=${last%?}
        # The reason after the prefix is the parser's, on one line.
        [ "${got:0:${#prefix}}" = "$prefix" ] || return 1
        [ "${got: -1}" = $'\n' ] || return 1
        got=${got:${#prefix}}
        got=${got%$'\n'}
        [ -n "$got" ] && [ "${got/$'\n'/}" = "$got" ]
        return
    fi
    [ "$got" = "$want" ]
}

# run_modes LABEL INPUT WANT_OUT WANT_CODE WANT_ERR ARGS...
run_modes() {
    local label=$1 input=$2 want_out=$3 want_code=$4 want_err=$5
    shift 5
    local size k
    size=$(wc -c < "$input")

    $wrap "$bin" "$@" "$input" > "$tmp/out" 2> "$tmp/err"
    code=$?
    check "$label (file)" "$want_out" "$want_code" "$want_err"

    if [ -z "$wrap" ]; then
        $wrap "$bin" "$@" < "$input" > "$tmp/out" 2> "$tmp/err"
        code=$?
        check "$label (stdin)" "$want_out" "$want_code" "$want_err"
    fi

    # One byte per write: the reader sees the input in many small reads.
    dd if="$input" bs=1 status=none | $wrap "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
    code=$?
    check "$label (bytewise)" "$want_out" "$want_code" "$want_err"

    splits="1 $((size / 2)) $((size - 1))"
    [ -n "$wrap" ] && splits=$((size / 2))
    for k in $splits; do
        if [ "$k" -lt 1 ] || [ "$k" -ge "$size" ]; then continue; fi
        { head -c "$k" "$input"; tail -c +"$((k + 1))" "$input"; } |
            $wrap "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
        code=$?
        check "$label (split at $k)" "$want_out" "$want_code" "$want_err"
    done
}

ncases=0
for input in "$cases"/*.resp; do
    name=$(basename "$input" .resp)
    base="$cases/$name"
    ncases=$((ncases + 1))
    want_code=0
    [ -f "$base.code" ] && want_code=$(cat "$base.code")
    want_err=
    [ -f "$base.err" ] && want_err="$base.err"
    extra=()
    if [ -f "$base.args" ]; then read -r -a extra < "$base.args"; fi
    if [ ! -f "$base.json" ] && [ ! -f "$base.txt" ]; then
        echo "FAIL $name: no .json or .txt expectation"
        failed=$((failed + 1))
        continue
    fi
    if [ -f "$base.json" ]; then
        run_modes "$name --json" "$input" "$base.json" "$want_code" "$want_err" \
            ${extra[@]+"${extra[@]}"} --json
    fi
    if [ -f "$base.txt" ]; then
        run_modes "$name" "$input" "$base.txt" "$want_code" "$want_err" \
            ${extra[@]+"${extra[@]}"}
    fi
done
if [ "$ncases" -lt 10 ]; then
    echo "FAIL: only $ncases cases found in $cases"
    failed=$((failed + 1))
fi

# ------------------------------------------------------------ invocation
printf '+OK\r\n' > "$tmp/ok.resp"
printf '{"simple":"OK"}\n' > "$tmp/ok.json"
: > "$tmp/empty"
usage_tail="usage: respdump [--json] [--max-depth N] [--max-bulk N] [--max-elements N] [FILE]
Try 'respdump --help' for more information."

# --help: the usage on stdout, status 0.
$wrap "$bin" --help > "$tmp/out" 2> "$tmp/err"
code=$?
if [ $code = 0 ] && [ ! -s "$tmp/err" ] &&
   head -n 1 "$tmp/out" | grep -q '^usage: respdump \[--json\]' &&
   grep -q 'Exit status' "$tmp/out"; then
    passed=$((passed + 1))
else
    echo "FAIL --help: status $code"
    failed=$((failed + 1))
fi

# A file that cannot be opened.
missing="$tmp/no-such-dir/input.resp"
printf 'respdump: %s: No such file or directory\n' "$missing" > "$tmp/want-err"
$wrap "$bin" --json "$missing" > "$tmp/out" 2> "$tmp/err"
code=$?
check "missing file" "$tmp/empty" 66 "$tmp/want-err"

# A directory is no input either.
printf 'respdump: %s: Is a directory\n' "$tmp" > "$tmp/want-err"
$wrap "$bin" "$tmp" > "$tmp/out" 2> "$tmp/err"
code=$?
check "directory" "$tmp/empty" 66 "$tmp/want-err"

# An option without its number.
printf "respdump: option '--max-elements' needs a number\n%s\n" "$usage_tail" > "$tmp/want-err"
$wrap "$bin" --json --max-elements < "$tmp/ok.resp" > "$tmp/out" 2> "$tmp/err"
code=$?
check "missing option value" "$tmp/empty" 2 "$tmp/want-err"

# Two files.
printf "respdump: too many files ('%s')\n%s\n" "$tmp/ok.resp" "$usage_tail" > "$tmp/want-err"
$wrap "$bin" --json "$tmp/ok.resp" "$tmp/ok.resp" > "$tmp/out" 2> "$tmp/err"
code=$?
check "too many files" "$tmp/empty" 2 "$tmp/want-err"

# '-' is standard input; after '--' a name is a file even if it looks
# like an option.
$wrap "$bin" --json - < "$tmp/ok.resp" > "$tmp/out" 2> "$tmp/err"
code=$?
check "'-' as stdin" "$tmp/ok.json" 0 ""
cp "$tmp/ok.resp" "$tmp/--json"
(cd "$tmp" && $wrap "$bin" --json -- --json) > "$tmp/out" 2> "$tmp/err"
code=$?
check "'--' ends options" "$tmp/ok.json" 0 ""

# Many replies, more than one read's worth, in order.
for i in $(seq 1 20000); do printf ':%d\r\n' "$i"; done > "$tmp/many.resp"
seq 1 20000 > "$tmp/many.json"
$wrap "$bin" --json "$tmp/many.resp" > "$tmp/out" 2> "$tmp/err"
code=$?
check "20000 replies" "$tmp/many.json" 0 ""

# ------------------------------------------------------------ --json for programs
# Every line of --json output is one whole JSON value, also when the input
# ends or breaks inside a reply: the reply cut short is not printed, the
# ones before it are, and the reason is on stderr.
py=/usr/bin/python3
if [ ! -x "$py" ]; then
    echo "FAIL --json through a JSON parser: $py not found (install python3)"
    failed=$((failed + 1))
else
    json_lines='import json,sys; [json.loads(l) for l in sys.stdin]'
    # NAME.resp: the replies before the break; the broken one.
    printf '*2\r\n$5\r\nhello\r\n' > "$tmp/cut-array.resp"
    : > "$tmp/cut-array.json"
    printf '+OK\r\n*1\r\n:1\r\n%%2\r\n+a\r\n*2\r\n$5\r\nhello\r\n' > "$tmp/cut-map.resp"
    printf '{"simple":"OK"}\n[1]\n' > "$tmp/cut-map.json"
    printf ':1\r\n*3\r\n$2\r\nab\r\n|1\r\n+k\r\n+v\r\n:1\r\n?x\r\n' > "$tmp/bad-byte.resp"
    printf '1\n' > "$tmp/bad-byte.json"
    printf '*1\r\n$?\r\n;2\r\nab\r\n' > "$tmp/cut-stream.resp"
    : > "$tmp/cut-stream.json"
    for c in cut-array:3 cut-map:3 bad-byte:65 cut-stream:3; do
        name=${c%:*} want_code=${c#*:}
        $wrap "$bin" --json "$tmp/$name.resp" > "$tmp/out" 2> "$tmp/err"
        code=$?
        if [ "$want_code" = 3 ]; then
            echo "respdump: incomplete reply at end of input" > "$tmp/want-err"
        else
            echo "respdump: protocol error at byte *" > "$tmp/want-err"
        fi
        check "--json, $name: only the complete replies" "$tmp/$name.json" "$want_code" "$tmp/want-err"
        if "$py" -c "$json_lines" < "$tmp/out" 2> "$tmp/pyerr"; then
            passed=$((passed + 1))
        else
            echo "FAIL --json, $name: stdout is not JSON lines: $(tail -n 1 "$tmp/pyerr")"
            failed=$((failed + 1))
        fi
    done
    # All the cases at once, the broken ones too, as a program would read
    # them: every line parses.
    for input in "$cases"/*.resp; do
        base=${input%.resp}
        [ -f "$base.json" ] || continue
        extra=()
        if [ -f "$base.args" ]; then read -r -a extra < "$base.args"; fi
        "$bin" ${extra[@]+"${extra[@]}"} --json "$input" 2>/dev/null
    done > "$tmp/all.json"
    if [ -s "$tmp/all.json" ] && "$py" -c "$json_lines" < "$tmp/all.json" 2> "$tmp/pyerr"; then
        passed=$((passed + 1))
    else
        echo "FAIL --json over every case: not JSON lines: $(tail -n 1 "$tmp/pyerr")"
        failed=$((failed + 1))
    fi
fi

# ------------------------------------------------------------ version and man page
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
printf 'respdump %s\n' "$version" > "$tmp/want-out"
for o in --version -V; do
    $wrap "$bin" "$o" > "$tmp/out" 2> "$tmp/err"
    code=$?
    check "$o" "$tmp/want-out" 0 ""
done
man="$top_srcdir/doc/respdump.1"
if [ -n "$version" ] && grep -q "^\.TH RESPDUMP 1 \"[0-9-]*\" \"resplock $version\"" "$man"; then
    passed=$((passed + 1))
else
    echo "FAIL the man page's version is not respdump's ($version)"
    failed=$((failed + 1))
fi
if ! command -v groff > /dev/null; then
    echo "FAIL groff -ww: groff is not installed (Debian: groff-base)"
    failed=$((failed + 1))
elif [ -z "$(groff -man -ww -z "$man" 2>&1)" ]; then
    passed=$((passed + 1))
else
    echo "FAIL groff -ww warns about the man page:"
    groff -man -ww -z "$man" 2>&1 | head -n 5 | sed 's/^/    /'
    failed=$((failed + 1))
fi
# The options of --help and of the man page are the same, and so are the
# exit statuses.
"$bin" --help > "$tmp/help"
help_opts=$(grep -oE '^  --[a-z-]+' "$tmp/help" | sed 's/^  //' | sort | tr '\n' ' ')
man_opts=$(awk '/^\.SH/ { on = $0 == ".SH OPTIONS"; next } on' "$man" | sed -n '/^\.TP/{n;p}' |
    sed 's/\\-/-/g' | grep -oE '^\.B[IR]? --[a-z-]+' | sed 's/^\.B[IR]* //' | sort | tr '\n' ' ')
help_codes=$(sed -n '/^Exit status/,$p' "$tmp/help" | grep -oE '(^|[ ;])[0-9]+ ' | grep -oE '[0-9]+' | sort -n | tr '\n' ' ')
man_codes=$(awk '/^\.SH/ { on = $0 == ".SH EXIT STATUS"; next } on' "$man" | sed -n '/^\.TP/{n;p}' |
    sed 's/^\.B //' | sort -n | tr '\n' ' ')
for pair in "options:$help_opts:$man_opts" "exit statuses:$help_codes:$man_codes"; do
    IFS=: read -r what h m <<< "$pair"
    if [ -n "$h" ] && [ "$h" = "$m" ]; then
        passed=$((passed + 1))
    else
        echo "FAIL the $what of --help ($h) and of the man page ($m) differ"
        failed=$((failed + 1))
    fi
done

# ------------------------------------------------------------ the man page's examples
# Each line between .EX and .EE under EXAMPLES, groff's escapes undone,
# run by bash with this build's respdump first on PATH: the first on a
# server started here (its port for the page's 6379), the second in a
# directory holding the replies.resp it reads.
mapfile -t examples < <(awk '/^\.SH/ { on = $0 == ".SH EXAMPLES"; next }
    on && /^\.EX/ { ex = 1; next } /^\.EE/ { ex = 0 } on && ex' "$man" |
    sed -e "s/\\\\(aq/'/g" -e 's/\\-/-/g' -e 's/\\e/\\/g')
mkdir -p "$tmp/bin" "$tmp/ex"
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$wrap" "$bin" > "$tmp/bin/respdump"
chmod 755 "$tmp/bin/respdump"
printf '+PONG\r\n:1\r\n' > "$tmp/ex/replies.resp"
# example N WANT-OUT: runs example N; a failure shows what it said.
example() {
    local cmd=${examples[$1]} want=$2 code
    (cd "$tmp/ex" && PATH="$tmp/bin:$PATH" timeout 20 bash -c "$cmd") < /dev/null > "$tmp/out" 2> "$tmp/err"
    code=$?
    if [ "$code" = 0 ] && [ "$(cat "$tmp/out")" = "$want" ]; then
        passed=$((passed + 1))
    else
        echo "FAIL the man page's example '$cmd': exit $code, want '$want' out"
        sed 's/^/    out: /' "$tmp/out" | head -n 5
        sed 's/^/    err: /' "$tmp/err" | head -n 5
        failed=$((failed + 1))
    fi
}
if [ "${#examples[@]}" != 2 ] || [[ ${examples[0]} != *" 6379 "* ]]; then
    echo "FAIL the man page's examples are not the two this test knows (nc to port 6379, jq):"
    printf '    %s\n' "${examples[@]}"
    failed=$((failed + 1))
elif ! rlk_redis_start respdump "$tmp"; then
    echo "FAIL redis-server did not start"
    failed=$((failed + 1))
else
    examples[0]=${examples[0]/ 6379 / $RLK_REDIS_PORT }
    example 0 PONG
    example 1 $'{"simple":"PONG"}\n1'
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
