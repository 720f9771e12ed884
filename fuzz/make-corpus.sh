#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed corpus of fuzz/fuzz_resp into fuzz/corpus/, one small
# file per case, beside the regress-* inputs that fuzzing found.  Run it again after changing a case; commit the script and
# the files together.
#
# Every file starts with the harness's two header bytes (see
# fuzz/fuzz_resp.c): byte 0 picks the parser limits and the tree arena,
# byte 1 seeds the split points (derived from the name).  "00" below means
# the default limits.
#   byte 0 bits 0-1  max_depth     default, 1, 3, 8
#          bits 2-3  max_bulk      default, 4, 16, 200
#          bits 4-5  max_elements  default, 1, 3, 20
#          bits 6-7  arena bytes   1024, 256, 8192, 65536
# shellcheck disable=SC2016  # the $ of RESP bulk strings is meant literally
set -eu
cd "$(dirname "$0")"
out=corpus
# regress-* files are inputs the fuzzers found (kept as they were found):
# they stay; everything else is written again below.
mkdir -p "$out"
find "$out" -type f ! -name 'regress-*' -delete

n=0
# seed NAME HEADER0 FORMAT [ARGS...]: FORMAT/ARGS as for printf, so a
# literal % is written %%.
seed() {
    local name=$1 h0=$2 h1
    shift 2
    n=$((n + 1))
    # the split seed comes from the name: stable when cases are added
    h1=$(printf '%s' "$name" | cksum | cut -d' ' -f1)
    {
        # shellcheck disable=SC2059  # the header bytes as \x escapes
        printf "\\x$h0\\x$(printf %02x $((h1 % 256)))"
        # shellcheck disable=SC2059
        printf -- "$@"
    } > "$out/$name"
}

rep() { # rep COUNT STRING: STRING COUNT times
    local i s=""
    for ((i = 0; i < $1; i++)); do s+=$2; done
    printf '%s' "$s"
}

token=4f3c2a1e-9b7d-4c5e-8a6f-0123456789ab   # 36 bytes, like a lock token

# ---------------------------------------------------------------- RESP2
seed simple            00 '+OK\r\n'
seed simple-empty      00 '+\r\n+QUEUED\r\n'
seed error             00 "-ERR unknown command 'foo', with args beginning with: \r\n"
seed error-noscript    00 '-NOSCRIPT No matching script. Please use EVAL.\r\n'
seed integers          00 ':0\r\n:1000\r\n:-42\r\n:007\r\n'
seed integer-extremes  00 ':9223372036854775807\r\n:-9223372036854775808\r\n'
seed bulk              00 '$5\r\nhello\r\n'
seed bulk-empty        00 '$0\r\n\r\n'
seed bulk-binary       00 '$6\r\n\r\n\x00\xff\n\r\r\n'
seed bulk-5000         00 "\$5000\r\n$(rep 500 'resplock: ')\r\n:1\r\n"
seed bulk-token        00 '$36\r\n%s\r\n' "$token"
seed null-bulk         00 '$-1\r\n'
seed null-array        00 '*-1\r\n'
seed array             00 '*3\r\n:1\r\n$3\r\nfoo\r\n+bar\r\n'
seed array-empty       00 '*0\r\n*1\r\n*0\r\n'
seed array-nested      00 '*2\r\n*2\r\n:1\r\n$-1\r\n*1\r\n*-1\r\n'
seed array-deep        00 "$(rep 20 '*1\r\n'):1\r\n"
seed pubsub-message    00 '*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$7\r\npayload\r\n'
seed pubsub-subscribe  00 '*3\r\n$9\r\nsubscribe\r\n$4\r\nchan\r\n:1\r\n'
seed lock-mix          00 '+OK\r\n:1\r\n$-1\r\n$36\r\n%s\r\n*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$7\r\npayload\r\n' "$token"
seed pipeline          00 '+OK\r\n+OK\r\n:5\r\n$3\r\nabc\r\n-WRONGTYPE Operation against a key\r\n'

# ---------------------------------------------------------------- RESP3
seed null              00 '_\r\n'
seed bool              00 '#t\r\n#f\r\n'
seed double            00 ',1.23\r\n,10\r\n,-0\r\n,.5\r\n,1e10\r\n,-1.5E-3\r\n,0.1\r\n'
seed double-special    00 ',inf\r\n,-inf\r\n,+inf\r\n,nan\r\n,-nan\r\n,INF\r\n'
seed double-long       00 ',3.14159265358979323846264338327950288\r\n,1e400\r\n,4.9e-324\r\n,1e-400\r\n'
seed double-line-150    00 ",0.$(rep 15 '0123456789')e-5\r\n"
seed bignum            00 '(3492890328409238509324850943850943825024385\r\n(-1\r\n(+77\r\n'
seed blob-error        00 '!21\r\nSYNTAX invalid syntax\r\n'
seed verbatim          00 '=15\r\ntxt:Some string\r\n=4\r\nmkd:\r\n'
seed map               00 '%%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n'
seed map-agg-keys      00 '%%2\r\n*2\r\n:1\r\n:2\r\n~1\r\n#t\r\n%%0\r\n_\r\n'
seed set               00 '~3\r\n+a\r\n+b\r\n:3\r\n'
seed hello-3           00 '%%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n'
seed attribute         00 '|1\r\n+key-popularity\r\n%%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n'
seed attribute-inner   00 '*2\r\n|1\r\n+ttl\r\n:100\r\n:1\r\n:2\r\n'
seed attribute-twice   00 '|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n+OK\r\n'
seed push              00 '>3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n'
seed push-interleaved  00 '>2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nlock\r\n+OK\r\n'
seed stream-string     00 '$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n'
seed stream-string-0   00 '$?\r\n;0\r\n'
seed stream-array      00 '*?\r\n:1\r\n:2\r\n:3\r\n.\r\n'
seed stream-map        00 '%%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n'
seed stream-set        00 '~?\r\n+a\r\n.\r\n'
seed stream-nested     00 '*?\r\n$?\r\n;2\r\nab\r\n;0\r\n%%?\r\n.\r\n*1\r\n|1\r\n+k\r\n+v\r\n:1\r\n.\r\n'

# ---------------------------------------------------------------- limits
seed limit-depth-1     01 '*1\r\n:1\r\n*1\r\n*1\r\n:1\r\n'
seed limit-depth-3     02 '*1\r\n*1\r\n*1\r\n:1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n'
seed limit-depth-attr  02 '*1\r\n*1\r\n|1\r\n+k\r\n+v\r\n:1\r\n'
seed limit-bulk-4      04 '+OK\r\n$4\r\nabcd\r\n$5\r\nhello\r\n'
seed limit-line-4      04 '+OK\r\n+hello world\r\n'
seed limit-stream-16   08 '$?\r\n;10\r\n0123456789\r\n;10\r\n0123456789\r\n;0\r\n'
seed limit-verbatim-16 08 '=16\r\ntxt:0123456789ab\r\n'
seed limit-elements-1  10 '*1\r\n:1\r\n%%1\r\n:1\r\n:2\r\n*2\r\n:1\r\n:2\r\n'
seed limit-stream-3    20 '*?\r\n:1\r\n:2\r\n:3\r\n:4\r\n.\r\n'
seed limit-arena-256   40 "*50\r\n$(rep 50 ':1\r\n')"

# ---------------------------------------------------------------- invalid
seed bad-type-byte     00 '+OK\r\n@foo\r\n'
seed bad-integer       00 ':12a\r\n'
seed bad-integer-range 00 ':9223372036854775808\r\n'
seed bad-integer-empty 00 ':\r\n'
seed bad-cr-in-simple  00 '+OK\rX\r\n'
seed bad-lf-only       00 '+OK\n'
seed bad-bulk-crlf     00 '$3\r\nfooXX'
seed bad-bulk-length   00 '$-2\r\n$abc\r\n'
seed bad-bool          00 '#x\r\n'
seed bad-double        00 ',1.2.3\r\n'
seed bad-null          00 '_x\r\n'
seed bad-end-marker    00 '.\r\n'
seed bad-stream-map    00 '%%?\r\n+a\r\n.\r\n'
seed bad-chunk         00 '$?\r\nabc\r\n'
seed bad-verbatim      00 '=3\r\nabc\r\n'
seed bad-push-stream   00 '>?\r\n'
seed bad-attr-at-end   00 '*?\r\n|1\r\n+a\r\n+b\r\n.\r\n'
seed bad-bignum        00 '(12x\r\n'
seed truncated-bulk    00 '+OK\r\n$10\r\nabc'
seed truncated-array   00 '*3\r\n:1\r\n'

echo "make-corpus.sh: $n files in fuzz/$out"
