#!/bin/bash
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
# '-' and '--'.
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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/respdump-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

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

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
