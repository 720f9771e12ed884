#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed corpus of fuzz/fuzz_slots into fuzz/corpus-slots/: the
# CLUSTER SHARDS and CLUSTER SLOTS replies a real Redis 7.0 cluster sent
# (taken from tests/unit/cluster_replies.h), the cluster's error replies,
# and a few hostile replies; beside the regress-* inputs fuzzing found.
# Run it again after changing a case; commit the script and the files
# together.
#
# Every file starts with the harness's header byte (see fuzz/fuzz_slots.c):
#   bit 0  no origin host; bit 1  over TLS; bit 2  allocations fail after
#   the count in bits 3-7.
# shellcheck disable=SC2016  # the $ of RESP bulk strings is meant literally
set -eu
cd "$(dirname "$0")"
out=corpus-slots
replies=../tests/unit/cluster_replies.h
mkdir -p "$out"
find "$out" -type f ! -name 'regress-*' -delete

# The C string literal NAME of cluster_replies.h, as bytes.
# (Its escapes are \r, \n, \\ and \", which printf %b reads but for \".)
literal() {
  printf '%b' "$(sed -n "/^static const char $1\[\] =/,/;\$/p" "$replies" | sed '1d' |
    sed -e 's/^ *"//' -e 's/";\{0,1\}$//' | tr -d '\n' | sed 's/\\"/"/g')"
}

# seed NAME HEADER: the header byte, then the bytes on stdin.
seed() { { printf "\\x$2"; cat; } > "$out/$1"; }
# errs MSG...: each as an error reply.
errs() { printf -- '-%s\r\n' "$@"; }

for r in SHARDS_RESP2 SHARDS_RESP3 SLOTS_RESP2 SLOTS_RESP3 HOSTNAME_SHARDS_RESP3 \
         HOSTNAME_SLOTS_RESP2 UNKNOWN_SHARDS_RESP2 UNKNOWN_SLOTS_RESP3 KILLED_SHARDS_RESP3 \
         KILLED_SLOTS_RESP2; do
  literal "$r" | seed "$(tr 'A-Z_' 'a-z-' <<<"$r")" 00
done
literal UNKNOWN_SLOTS_RESP3 | seed unknown-slots-no-origin 01
literal SLOTS_RESP2 | seed slots-tls 02
literal SHARDS_RESP3 | seed shards-alloc-fail-0 04
literal SHARDS_RESP3 | seed shards-alloc-fail-3 1c
literal SLOTS_RESP2 | seed slots-alloc-fail-5 2c
# Both replies in one input: the second build replaces the first.
{ literal SHARDS_RESP2; literal KILLED_SLOTS_RESP2; } | seed shards-then-slots 00
# The cluster's errors, as 7.0 sends them, and redirects of every form.
errs 'MOVED 15495 127.0.0.1:29860' 'ASK 13513 127.0.0.1:36427' 'MOVED 15495 :29860' \
  'MOVED 3999 2001:db8::1:6381' 'ASK 1 [::1]:7000' \
  'TRYAGAIN Multiple keys request during rehashing of slot' \
  'CLUSTERDOWN The cluster is down' 'CLUSTERDOWN Hash slot not served' \
  "CROSSSLOT Keys in request don't hash to the same slot" 'MOVED 16384 h:1' 'MOVED 1 h:0' |
  seed errors 00
errs 'MOVED 15495 :29860' 'ASK 0 :1' | seed errors-no-origin 03
{ literal SHARDS_RESP2; errs 'MOVED 0 127.0.0.1:34249' 'MOVED 1 127.0.0.1:55686' \
    'MOVED 2 10.0.0.9:7000'; } | seed shards-then-moved 00
# Hostile: a range past the last slot, overlapping ranges, no port.
printf '%s' $'*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n' | seed slots-out-of-range 00
printf '%s' $'*2\r\n*3\r\n:0\r\n:9\r\n*2\r\n$1\r\nh\r\n:1\r\n*3\r\n:9\r\n:9\r\n*2\r\n$1\r\ni\r\n:1\r\n' |
  seed slots-overlap 00
printf '%s' $'*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n' |
  seed shards-no-port 00
echo "$(ls "$out" | wc -l) files in $out"
