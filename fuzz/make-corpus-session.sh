#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed corpus of fuzz/fuzz_session into fuzz/corpus-session/,
# one small file per scenario, beside the regress-* inputs that fuzzing
# found.  Run it again after changing a case; commit the script and the
# files together.
#
# A seed is the harness's two configuration bytes, then steps: an opcode
# and its operands, as fuzz/fuzz_session.c reads them.  The bytes are
# written in hex below, with the names of the opcodes and operands:
#   cfg0  bits 0-1 protocol (0, 3, 2, 0); 4 password; 8 client name;
#         10 db 2; bits 5-6 command timeout (50, 100, 200, 500 ms);
#         80 a lost lock is released from the callback
#   cfg1  bits 0-1 max_input (256, 4096, 65536, 1 MiB); bits 2-3
#         recheck_ms (default, 50, 200, 1000); bits 4-5 renew_divisor
#         (default, 2, 3, 5); 40 connect first
#   ACQ A B    A: bits 0-1 ttl (100, 250, 1000, 2000 ms); bits 2-4 wait
#              (0, 0, 100, 400, 1500 ms, forever); 20 watchdog; bits 6-7
#              the name; B: 80 + a lost margin in its low bits
#   REPLY C S  the reply to the oldest request: C's bits 0-2 pick it (0-3
#              a lock server's answers, 4-7 errors and wrong shapes); S
#              splits it; acquire replies read one more byte (fence step
#              or PTTL), renewals two (each key's result); HELLO's
#              C 08 answers as Redis 7.0 (script calls as FCALL), 00 as
#              6.2 (EVALSHA); C 05 to an FCALL is "Function not found";
#              FUNCTION LOAD's C 0-3: loaded, there already, NOPERM,
#              unknown command
#   EXTEND B   rlk_session_extend: B's bits 0-1 the ms (1, 100, 1000,
#              3000), 04 RLK_EXTEND_SET, 08 an unknown how, 10 any
#              handle (else a held one), bits 5-7 which
#   ACQR A B C a reentrant acquire, A and B as ACQ's; C's bits 0-1 the
#              holder (none, h1, h2, h1); its first try is the script
#   CALL B     a call without a handle: B's bits 0-1 status, release or
#              extend by token; bits 2-3 the name; 10 a handle's token;
#              bits 6-7 an extend's ms
set -eu
cd "$(dirname "$0")"
out=corpus-session
mkdir -p "$out"
find "$out" -type f ! -name 'regress-*' -delete

ADV=00 TICKDUE=01 REPLY=02 ACQ=04 REL=05 HANDOFF=06 RELMSG=07 RAW=08
CLOSE=09 CONNECT=0a STALL=0b FAILALLOC=0c BIG=0d TICK=0e
EXTEND=f0 ACQR=f1 CALL=f2

n=0
# seed NAME CFG0 CFG1 HEXBYTES...
seed() {
    local name=$1 hex
    shift
    hex=$(printf '%s' "$*" | tr -d ' \n')
    n=$((n + 1))
    printf '%s' "$hex" | xxd -r -p > "$out/$name"
}

# The handshake under RESP3: HELLO answered, the handoff channel's
# subscription confirmed.
H3="$REPLY 00 00 $REPLY 00 00"
# A first try, SET NX PX, HGET of the window (none) and TIME, answered:
# taken; or busy (null).
TAKEN="$REPLY 00 00 $REPLY 00 00 $REPLY 00 00"
BUSY="$REPLY 02 00 $REPLY 00 00 $REPLY 00 00"

seed try-release          21 40 "$H3 $ACQ 01 00 $TAKEN $ADV 20 $REL 00 $REPLY 00 00"
seed try-busy             21 40 "$H3 $ACQ 01 00 $BUSY $ADV 05"
seed try-split-replies    21 40 "$H3 $ACQ 02 00 $REPLY 00 03 $REPLY 00 02 $REPLY 00 07 $REL 00 $REPLY 00 02"
seed try-timeout          01 40 "$H3 $ACQ 01 00 $ADV 40 $TICKDUE $TICKDUE"
seed try-expired-reply    01 40 "$H3 $ACQ 00 00 $ADV c5 $REPLY 00 00 $REPLY 00 00 $REPLY 00 00"
# taken by the SET inside the window resplock keeps away in (HGET's
# reply 02): given back by the script in mode 'q', busy; a window over
# (03) does not count; an error to the HGET is no window
seed try-in-window        21 40 "$H3 $ACQ 01 00 $REPLY 00 00 $REPLY 02 00 $REPLY 00 00 $REPLY 02 00 05"
seed try-in-window-wait   21 40 "$H3 $ACQ 12 00 $REPLY 00 00 $REPLY 02 00 $REPLY 00 00 $REPLY 02 00 05 $REPLY 00 00 $REPLY 02 0a 00 $TICKDUE $REPLY 00 00 00"
seed try-window-over      21 40 "$H3 $ACQ 01 00 $REPLY 00 00 $REPLY 03 00 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed try-window-error     21 40 "$H3 $ACQ 01 00 $REPLY 00 00 $REPLY 04 00 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed release-not-held     21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $REPLY 01 00"
seed release-other        21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $REPLY 02 00"
seed release-noscript     21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $REPLY 05 00 $REPLY 00 00"
seed release-timeout      21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $TICKDUE $TICKDUE"
# waiting: busy, subscribed to the release channel, in line
WAIT="$BUSY $REPLY 00 00 $REPLY 02 0a 00"
seed wait-handoff         21 40 "$H3 $ACQ 12 00 $WAIT $HANDOFF 01 05 $REPLY 00 00 $ADV 10 $REL 00 $REPLY 00 00"
seed wait-handoff-refused 21 40 "$H3 $ACQ 12 00 $WAIT $HANDOFF 01 05 $REPLY 01 00 $TICKDUE $REPLY 02 00 30"
seed wait-handoff-other   21 40 "$H3 $ACQ 12 00 $WAIT $HANDOFF 02 05 $HANDOFF 00 07 $TICKDUE"
seed wait-release-msg     21 40 "$H3 $ACQ 12 00 $WAIT $RELMSG 00 $REPLY 00 00 00 $REL 00 $REPLY 00 00"
seed wait-recheck         25 44 "$H3 $ACQ 12 00 $WAIT $TICKDUE $REPLY 02 00 05 $TICKDUE $REPLY 01 00 00"
seed wait-runs-out        21 40 "$H3 $ACQ 0a 00 $WAIT $TICKDUE $REPLY 02 00 05 $TICKDUE $REPLY 02 00 05 $TICKDUE $REPLY 02 00 05 $TICKDUE $TICKDUE"
seed wait-noscript        21 40 "$H3 $ACQ 12 00 $BUSY $REPLY 00 00 $REPLY 05 00 $REPLY 00 00 04"
seed wait-cancel          21 40 "$H3 $ACQ 12 00 $WAIT $REL 00 $REPLY 02 00 00 $TICKDUE"
seed wait-cancel-taken    21 40 "$H3 $ACQ 12 00 $WAIT $REL 00 $REPLY 00 00 00 $REPLY 00 00"
seed wait-forever         21 40 "$H3 $ACQ 16 00 $WAIT $TICKDUE $REPLY 02 00 05 $TICKDUE $REL 00 $REPLY 02 00 00"
seed wait-close           21 40 "$H3 $ACQ 12 00 $WAIT $CLOSE $CONNECT $H3 $ACQ 12 00 $WAIT $TICKDUE"
seed two-waiters          21 40 "$H3 $ACQ 12 00 $ACQ 52 00 $BUSY $BUSY $REPLY 00 00 $REPLY 00 00 $REPLY 02 00 05 $REPLY 02 00 05 $HANDOFF 05 01 $HANDOFF 01 01 $REPLY 00 00 $REPLY 00 00"
# the watchdog: rounds of renewals, then a refusal
seed watchdog-renew       21 40 "$H3 $ACQ 22 00 $TAKEN $TICKDUE $REPLY 00 00 00 00 $TICKDUE $REPLY 00 00 00 00 $TICKDUE $REPLY 03 00 ff ff $REL 00 $REPLY 00 00"
seed watchdog-lost        a1 40 "$H3 $ACQ 20 00 $TAKEN $TICKDUE $REPLY 00 00 00 02 $TICKDUE $TICKDUE"
seed watchdog-silent      21 40 "$H3 $ACQ 21 00 $TAKEN $TICKDUE $ADV ff $TICKDUE"
seed watchdog-two         21 50 "$H3 $ACQ 23 00 $ACQ 63 00 $TAKEN $TAKEN $TICKDUE $REPLY 00 00 00 00 $REPLY 00 00 00 00 $TICKDUE"
seed watchdog-reconnect   21 40 "$H3 $ACQ 23 00 $TAKEN $CLOSE $ADV 50 $CONNECT $H3 $TICKDUE $REPLY 00 00 00 00 $TICKDUE $REPLY 00 00 00 00"
# the handshake's variants
seed hello-auth-name-db   3d 40 "$REPLY 00 00 $REPLY 00 00 $REPLY 00 00 $ACQ 01 00 $TAKEN"
seed hello-missing        1c 40 "$REPLY 01 00 $REPLY 00 00 $REPLY 00 00 $REPLY 00 00 $ACQ 12 00 $BUSY $TICKDUE $REPLY 02 00 00 $TICKDUE $REPLY 00 00 00"
seed hello-wrongpass      25 40 "$REPLY 03 00 $ACQ 01 00"
seed hello-noproto        21 40 "$REPLY 02 00 $REPLY 00 00 $ACQ 01 00 $TAKEN"
seed resp2                22 40 "$REPLY 00 00 $REPLY 00 00 $ACQ 12 00 $BUSY $TICKDUE $REPLY 02 00 05 $TICKDUE $REPLY 00 00 00"
seed resp2-auth-fails     26 40 "$REPLY 00 00 $REPLY 03 00"
seed select-fails         31 40 "$REPLY 00 00 $REPLY 03 00"
seed handshake-timeout    01 40 "$ACQ 01 00 $TICKDUE $TICKDUE"
seed pending-acquire      21 00 "$ACQ 12 00 $ADV 20 $CONNECT $H3 $TAKEN $REL 00 $REPLY 00 00"
seed pending-expires      01 00 "$ACQ 01 00 $ACQ 0d 00 $TICKDUE $TICKDUE $CONNECT"
seed pending-release      21 00 "$ACQ 01 00 $REL 00 $CONNECT"
# hostile bytes
seed raw-garbage          21 40 "$H3 $ACQ 01 00 $RAW 05 40 78 0d 0a 00"
seed raw-unsolicited      21 40 "$H3 $RAW 05 3a 31 0d 0a 00"
seed raw-push             21 40 "$H3 $ACQ 12 00 $WAIT $RAW 14 3e 32 0d 0a 24 37 0d 0a 6d 65 73 73 61 67 65 0d 0a 3a 31 0d 0a"
seed big-bulk             20 40 "$H3 $BIG 10 $ACQ 01 00"
seed big-array            21 41 "$H3 $ACQ 01 00 $BIG 90"
# a NOSCRIPT to a command that runs no script (TIME) is an error reply,
# not a reason to send a release in EVAL form
seed noscript-to-time     21 40 "$H3 $ACQ 01 00 $REPLY 00 00 $REPLY 00 00 $REPLY 0c 00 $REPLY 00 00"
seed error-replies        21 40 "$H3 $ACQ 01 00 $REPLY 04 00 $REPLY 0c 00 $REPLY 0c 00 $ACQ 01 00 $REPLY 06 00 $REPLY 07 00 $REPLY 07 00"
seed stall-output         21 40 "$H3 $STALL 04 $ACQ 01 00 $ADV 10 $ADV 10 $ADV 10 $ADV 10 $TAKEN"
seed fail-alloc           21 40 "$FAILALLOC 00 $H3 $FAILALLOC 03 $ACQ 12 00 $BUSY $FAILALLOC 01 $REPLY 00 00 $REPLY 02 00 05"
seed reconnect-twice      21 40 "$CONNECT $H3 $CLOSE $CLOSE $CONNECT $REPLY 00 00 $TICK"

# extend: added, set (then renewed with the new TTL), refused, lost,
# flushed scripts, a reply after the validity it gives, closing
seed extend-add           21 40 "$H3 $ACQ 01 00 $TAKEN $ADV 20 $EXTEND 02 $REPLY 00 00 $ADV 40 $REL 00 $REPLY 00 00"
seed extend-set-renew     21 40 "$H3 $ACQ 21 00 $TAKEN $EXTEND 07 $REPLY 00 00 $TICKDUE $REPLY 00 00 00 00 $TICKDUE $REPLY 00 00 00 00 $REL 00 $REPLY 00 00"
seed extend-not-held      a1 40 "$H3 $ACQ 01 00 $TAKEN $EXTEND 02 $REPLY 01 00 $TICKDUE"
seed extend-not-owner     21 40 "$H3 $ACQ 21 00 $TAKEN $EXTEND 06 $REPLY 02 00 $EXTEND 02 $REL 00 $REPLY 02 00"
seed extend-noscript      21 40 "$H3 $ACQ 01 00 $TAKEN $EXTEND 01 $REPLY 05 00 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed extend-slow-reply    21 40 "$H3 $ACQ 01 00 $TAKEN $EXTEND 02 $ADV 40 $REPLY 00 00 $ADV 40 $EXTEND 06 $ADV 50 $REPLY 00 00"
seed extend-noscript-released 21 40 "$H3 $ACQ 01 00 $TAKEN $EXTEND 02 $REL 00 $REPLY 05 00 $REPLY 00 00 $ACQ 01 00 $TAKEN"
seed extend-late          21 40 "$H3 $ACQ 00 00 $TAKEN $ADV 10 $EXTEND 00 $ADV 20 $REPLY 00 00 $TICKDUE"
seed extend-wrong-replies 21 40 "$H3 $ACQ 02 00 $TAKEN $EXTEND 02 $REPLY 04 00 $EXTEND 02 $REPLY 07 00 $EXTEND 02 $REPLY 3f 00 $EXTEND 02 $REPLY 06 00"
seed extend-close         21 40 "$H3 $ACQ 22 00 $TAKEN $EXTEND 02 $REL 00 $CLOSE $CONNECT $H3 $TICKDUE"
seed extend-then-release  21 40 "$H3 $ACQ 02 00 $TAKEN $EXTEND 06 $EXTEND 06 $REL 00 $REPLY 00 00 $REPLY 00 00"
seed extend-refused       21 40 "$H3 $EXTEND 02 $ACQ 12 00 $EXTEND 12 $EXTEND 18 $BUSY $CLOSE $EXTEND 12"
seed extend-timeout       21 40 "$H3 $ACQ 02 00 $TAKEN $EXTEND 02 $TICKDUE $TICKDUE"
# reentrant: two holds of one holder (one fence), released one by one;
# a holder of the handle's own; another holder waits and is handed the
# lock; two waiters of one holder
seed reentrant-two-holds  21 40 "$H3 $ACQR 02 00 01 $REPLY 00 00 00 $ACQR 02 00 01 $REPLY 00 00 01 $REL 00 $REPLY 03 00 $REL 00 $REPLY 00 00"
seed reentrant-own-holder 21 40 "$H3 $ACQR 01 00 00 $REPLY 00 00 00 $ACQR 01 00 00 $REPLY 02 00 05 $REL 00 $REPLY 00 00"
seed reentrant-watchdog   21 40 "$H3 $ACQR 22 00 02 $REPLY 00 00 00 $TICKDUE $REPLY 00 00 00 00 $EXTEND 07 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed reentrant-wait       21 40 "$H3 $ACQR 12 00 02 $REPLY 02 00 05 $REPLY 00 00 $REPLY 02 0a 00 $HANDOFF 01 05 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed reentrant-same-line  21 40 "$H3 $ACQR 12 00 01 $ACQR 12 00 01 $REPLY 02 00 05 $REPLY 02 00 05 $REPLY 00 00 $REPLY 02 00 05 $REPLY 00 00 $REPLY 02 00 05 $HANDOFF 01 05 $REPLY 00 00 $TICKDUE $REPLY 01 00 00 $REPLY 00 00 01"
seed reentrant-resp2      22 44 "$REPLY 00 00 $REPLY 00 00 $ACQR 12 00 01 $REPLY 02 00 05 $TICKDUE $REPLY 00 00 00 $REL 00 $REPLY 03 00"
seed reentrant-noscript   21 40 "$H3 $ACQR 01 00 01 $REPLY 05 00 $REPLY 00 00 00 $REL 00 $REPLY 05 00 $REPLY 00 00"
seed reentrant-late       21 40 "$H3 $ACQR 00 00 03 $ADV c5 $REPLY 00 00 00 $REPLY 00 00"
# calls without a handle: status (free, a simple lock, a hash), release
# and extend by token, NOSCRIPT, errors, closing, the timeout
seed call-status          21 40 "$H3 $CALL 00 $REPLY 00 00 $CALL 04 $REPLY 01 00 $CALL 08 $REPLY 02 00 $CALL 03 $REPLY 03 00 $CALL 00 $REPLY 04 00"
seed call-release-token   21 40 "$H3 $ACQ 01 00 $TAKEN $CALL 11 $REPLY 00 00 $CALL 01 $REPLY 01 00 $CALL 01 $REPLY 02 00 $CALL 01 $REPLY 07 00"
seed call-extend-token    21 40 "$H3 $ACQ 01 00 $TAKEN $CALL 52 $REPLY 00 00 $CALL 02 $REPLY 01 00 $CALL c2 $REPLY 02 00 $CALL 02 $REPLY 06 00"
seed call-noscript        21 40 "$H3 $CALL 00 $REPLY 05 00 $REPLY 00 00 $CALL 01 $REPLY 05 00 $REPLY 00 00 $CALL 02 $REPLY 05 00 $REPLY 00 00"
seed call-close           21 40 "$H3 $CALL 00 $CALL 01 $CALL 02 $CLOSE $CALL 00 $CONNECT $CALL 00"
seed call-timeout         21 40 "$H3 $CALL 00 $ADV 10 $CALL 02 $TICKDUE $TICKDUE"
seed call-fail-alloc      21 40 "$H3 $FAILALLOC 00 $CALL 00 $CONNECT $H3 $FAILALLOC 01 $CALL 01 $FAILALLOC 00 $EXTEND 02 $ACQ 01 00 $TAKEN $FAILALLOC 01 $EXTEND 02"

# re-sends after a lost reply: an acquire tried again after the next
# handshake (found taken, busy, past its deadline, closed again), a
# release sent again once (then a second close ends it), a waiter in
# line, another reentrant hold (never re-sent)
seed resend-acquire       21 40 "$H3 $ACQ 01 00 $CLOSE $CONNECT $H3 $REPLY 00 00 01 $REL 00 $REPLY 00 00"
seed resend-acquire-busy  21 40 "$H3 $ACQ 09 00 $CLOSE $CONNECT $H3 $REPLY 02 00 05 $ADV 08 $TICKDUE $REPLY 00 00 00"
seed resend-acquire-late  21 40 "$H3 $ACQ 01 00 $CLOSE $ADV 40 $TICKDUE $CONNECT $H3"
seed resend-acquire-twice 21 40 "$H3 $ACQ 0d 00 $CLOSE $CONNECT $H3 $CLOSE $CONNECT $H3 $REPLY 00 00 01"
seed resend-release       21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $CLOSE $CONNECT $H3 $REPLY 00 00"
seed resend-release-twice 21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $CLOSE $CONNECT $H3 $CLOSE $CONNECT $H3 $TICKDUE"
seed resend-release-late  21 40 "$H3 $ACQ 01 00 $TAKEN $REL 00 $CLOSE $ADV 40 $TICKDUE $CONNECT $H3"
seed resend-waiter        21 44 "$H3 $ACQ 0d 00 $BUSY $REPLY 00 00 $REPLY 02 00 05 $CLOSE $CONNECT $H3 $REPLY 00 00 01"
seed resend-reentrant     21 40 "$H3 $ACQR 01 00 01 $REPLY 00 00 00 $ACQR 01 00 01 $CLOSE $CONNECT $H3 $ACQR 01 00 02 $CLOSE $CONNECT $H3 $REPLY 00 00 00"
seed resend-watchdog      21 40 "$H3 $ACQ 23 00 $TAKEN $ADV 20 $TICKDUE $CLOSE $CONNECT $H3 $REPLY 00 00 00 $REL 00 $CLOSE $CONNECT $H3 $REPLY 00 00"
# FUNCTIONs (HELLO of Redis 7.0): script calls as FCALL; "Function not
# found" loads the library and sends the call again as EVAL; the load
# there already, or refused (EVALSHA from then on); FCALL unknown, or
# refused by an ACL or for maxmemory (again as EVAL); an extend with its
# release behind it is not sent again; renewals and calls without a
# handle alike
H3F="$REPLY 08 00 $REPLY 00 00"
seed fcall-cycle          21 40 "$H3F $ACQR 01 00 01 $REPLY 00 00 00 $EXTEND 02 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed fcall-not-found      21 40 "$H3F $ACQR 01 00 01 $REPLY 05 00 $REPLY 00 00 $REPLY 00 00 00 $REL 00 $REPLY 00 00"
seed fcall-load-exists    21 40 "$H3F $ACQR 01 00 01 $REPLY 05 00 $REPLY 01 00 $REPLY 00 00 00 $REL 00 $REPLY 00 00"
seed fcall-load-refused   21 40 "$H3F $ACQR 01 00 01 $REPLY 05 00 $REPLY 02 00 $REPLY 00 00 00 $REL 00 $REPLY 05 00 $REPLY 00 00"
seed fcall-load-unknown   21 40 "$H3F $ACQR 01 00 01 $REPLY 05 00 $REPLY 03 00 $REPLY 00 00 00 $ACQR 01 00 01 $REPLY 00 00 00"
seed fcall-unknown        21 40 "$H3F $ACQR 01 00 01 $REPLY 04 00 $REPLY 00 00 00 $REL 00 $REPLY 00 00"
seed fcall-noperm         21 40 "$H3F $ACQR 01 00 01 $REPLY 34 00 $REPLY 34 00 $ACQR 01 00 01 $REPLY 00 00 00 $REL 00 $REPLY 00 00"
seed fcall-oom            21 40 "$H3F $ACQ 01 00 $TAKEN $REL 00 $REPLY 24 00 $REPLY 00 00"
seed fcall-extend-released 21 40 "$H3F $ACQ 01 00 $TAKEN $EXTEND 02 $REL 00 $REPLY 05 00 $REPLY 05 00 $REPLY 01 00 $REPLY 00 00 $ACQ 01 00 $TAKEN"
seed fcall-watchdog       21 40 "$H3F $ACQ 22 00 $TAKEN $TICKDUE $REPLY 05 00 $REPLY 00 00 $TICKDUE $REPLY 00 00 00 00 $TICKDUE $REPLY 00 00 00 00 $REL 00 $REPLY 00 00"
seed fcall-calls          21 40 "$H3F $CALL 00 $REPLY 05 00 $REPLY 00 00 $REPLY 00 00 $CALL 01 $REPLY 05 00 $REPLY 00 00 $CALL 02 $REPLY 04 00 $REPLY 00 00"
seed fcall-load-timeout   21 40 "$H3F $ACQR 01 00 01 $REPLY 05 00 $TICKDUE $TICKDUE"

# subscriptions refused (an ACL user without the channels, Redis 7's
# default for new users, or without SUBSCRIBE) and answered with what
# answers no (UN)SUBSCRIBE of theirs: REPLY C with C's bits 0-2 7, and
# C 0f NOPERM for the channel, 17 NOPERM for the command, 1f +OK, 27 a
# confirmation of another channel.  The handoff channel refused: a wait
# re-checks, not in line; three acquires queued before the handshake,
# each answered in turn (nothing shifts); a release channel refused: in
# line, re-checks and a handoff; an UNSUBSCRIBE refused
seed sub-refused-handoff  21 40 "$REPLY 00 00 $REPLY 0f 00 $ACQ 12 00 $BUSY $TICKDUE $REPLY 00 00 $REPLY 00 00 $REL 00 $REPLY 00 00"
seed sub-refused-command  21 40 "$REPLY 00 00 $REPLY 17 00 $ACQR 12 00 00 $REPLY 02 00 05 $TICKDUE $REPLY 00 00 00"
seed sub-refused-pending  21 00 "$ACQR 12 00 00 $ACQR 41 00 00 $ACQR 81 00 00 $CONNECT $REPLY 00 00 $REPLY 0f 00 $REPLY 00 00 00 $REPLY 00 00 00 $REPLY 02 00 05 $TICKDUE $REPLY 00 00 00"
seed sub-refused-release  21 40 "$H3 $ACQ 12 00 $BUSY $REPLY 0f 00 $REPLY 02 0a 00 $TICKDUE $REPLY 02 00 05 $HANDOFF 01 05 $REPLY 00 00"
seed sub-wrong-reply      21 40 "$REPLY 00 00 $REPLY 1f 00 $CONNECT $REPLY 00 00 $REPLY 27 00 $CONNECT $H3 $ACQ 01 00 $TAKEN"
seed unsub-refused        21 40 "$H3 $ACQ 12 00 $WAIT $HANDOFF 01 05 $REPLY 00 00 $ACQ 52 00 $WAIT $HANDOFF 01 05 $REPLY 00 00 $REPLY 0f 00 $REL 00 $REL 01"

# The host following a cluster's redirects (byte 1 bit 7): an error
# reply 44 is MOVED, 4c ASK, 54 TRYAGAIN, 5c CLUSTERDOWN (every node
# named is the session's server).  An acquire's first try MOVED, then
# taken; ASK (ASKING first, its OK); TRYAGAIN and CLUSTERDOWN paced and
# sent again; a release and a renewal round moved; MOVED every time (the
# redirect bound)
R3="$REPLY 00 00 $REPLY 00 00"
seed routed-moved         21 c0 "$R3 $ACQ 01 00 $REPLY 44 00 $REPLY 00 00 $REPLY 00 00 $TAKEN $REL 00 $REPLY 00 00"
seed routed-ask           21 c0 "$R3 $ACQ 01 00 $REPLY 4c 00 $REPLY 00 00 $REPLY 00 00 $REPLY 00 00 $TAKEN $REL 00 $REPLY 4c 00 $REPLY 00 00 $REPLY 00 00"
seed routed-tryagain      21 c0 "$R3 $ACQ 01 00 $REPLY 54 00 $REPLY 00 00 $REPLY 00 00 $TICKDUE $TAKEN $REL 00 $REPLY 5c 00 $TICKDUE $REPLY 00 00"
seed routed-renew-moved   21 c0 "$R3 $ACQ 22 00 $TAKEN $TICKDUE $REPLY 44 00 $REPLY 00 00 00 00 $TICKDUE $REPLY 00 00 00 00 $REL 00 $REPLY 00 00"
seed routed-loop          21 c0 "$R3 $ACQ 01 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00 $REPLY 44 00"
seed routed-calls         21 c0 "$R3 $CALL 00 $REPLY 44 00 $REPLY 00 00 $CALL 01 $REPLY 4c 00 $REPLY 00 00 $REPLY 00 00 $CALL 02 $REPLY 54 00 $TICKDUE $REPLY 00 00"

echo "make-corpus-session.sh: $n files in fuzz/$out"
