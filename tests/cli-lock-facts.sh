#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Locks you can see and clear, and names that are no lock, against a real
# server: status with the holder's facts (text and --json), list (SCAN,
# side keys and application keys skipped), break of a running `run` (its
# job stopped, exit 75, a waiter handed the lock), and run/acquire on an
# application's key (exit 65 at once, one line on stderr, -E ignored).
. "$top_srcdir/tests/cli-lock-lib.sh"
py=/usr/bin/python3
[ -x "$py" ] || die "$py is missing: the JSON output cannot be checked"

rlk_redis_start main "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
host=$(uname -n)
json_ok() { "$py" -c 'import json,sys; [json.loads(l) for l in sys.stdin if l.strip()]' <"$1"; }

# ------------------------------------------------ names that are no lock
R SET nal-str "an application's value" >/dev/null
R HSET nal-hash f 1 >/dev/null
R RPUSH nal-list a >/dev/null
R HSET nal-hvals f "not a count" >/dev/null; R PEXPIRE nal-hvals 60000 >/dev/null
fast=$(bound 1000 8000)
for k in nal-str nal-hash nal-list nal-hvals; do
  case $k in
    nal-str|nal-hash) why='a key that never expires' ;;
    nal-list) why='neither a string nor a hash' ;;
    nal-hvals) why='a hash whose values are not hold counts' ;;
  esac
  re="'$k' is not a lock: $why \\(an application's key\\? use a --prefix"
  check "run -n on $k: 65" 65 '' "$re" -- -u "$url" run -n "$k" -- touch "$work/ran"
  t0=$(now_ms)
  check "run -w 20s on $k: 65 at once" 65 '' "$re" -- -u "$url" run -w 20s "$k" -- touch "$work/ran"
  expect_range "run -w 20s on $k: ms before it gave up" $(( $(now_ms) - t0 )) 0 "$fast"
  check "acquire -n on $k: 65" 65 '' "$re" -- -u "$url" acquire -n "$k"
  t0=$(now_ms)
  check "acquire -w 20s -E 3 on $k: 65, not -E's code" 65 '' "$re" -- -u "$url" acquire -w 20s -E 3 "$k"
  expect_range "acquire -w 20s on $k: ms before it gave up" $(( $(now_ms) - t0 )) 0 "$fast"
  check "status $k: not a lock" 0 "^kind: +not a lock: a [a-z]+" '' -- -u "$url" status "$k"
  check "break $k: 65, left as it is" 65 '' "'$k' is not a lock" -- -u "$url" break "$k"
done
expect_eq "the commands did not run" "$(test -e "$work/ran" && echo ran)" ""
expect_eq "the application's string is intact" "$(R GET nal-str)" "an application's value"
expect_eq "... and still has no TTL" "$(R PTTL nal-str)" -1
expect_eq "nobody was put in line" "$(R KEYS '*nal-*:*')" ""
# Someone's lock (redis-py's 32 hex digits, with a TTL): busy, silent.
R SET pyl 0123456789abcdef0123456789abcdef PX 60000 >/dev/null
check "run -n on another client's lock: 1, silent" 1 '' '' -- -u "$url" run -n pyl -- true
expect_eq "... nothing on stderr" "$(grep -v '^==' "$work/err")" ""

# ------------------------------------------- a running holder, seen and broken
mkfifo "$work/go"
# The job waits on its fifo (never written): only a signal ends it.
job='echo $$ >"$0"; read -r x <"$1"'
t0=$(now_ms)
bg "$work/run.out" "$work/run.err" -u "$url" run -t 3s nightly -- sh -c "$job" "$work/job.pid" "$work/go"
runpid=$BGPID
wait_until "$(bound 5 30)" test -s "$work/job.pid" || die "the job did not start" "$(cat "$work/run.err")"
t1=$(now_ms)
jobpid=$(cat "$work/job.pid")
check "status of the running lock: 0" 0 '^held: +yes$' '' -- -u "$url" status nightly
expect_match "status: the holder's host and pid" "$(cat "$work/out")" "^holder: host $host, pid $runpid, since [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z \\([0-9.]+ s ago\\)$"
# The command line, kept to 64 bytes once encoded (a space takes 3).
expect_match "status: the holder's command" "$(cat "$work/out")" '^command: sh -c echo \$\$ >"\$0"; read -r x <$'
expect_match "status: the fence is said not to be stored" "$(cat "$work/out")" '^fence: not stored'
check "status --json: 0" 0 '' '' -- -u "$url" status nightly --json
if json_ok "$work/out"; then ok "status --json is JSON"; else bad "status --json is JSON" "$(cat "$work/out")"; fi
facts=$("$py" -c '
import json, sys
d = json.load(sys.stdin)
h = d["holder"]
print(d["name"], d["held"], h["host"], h["pid"], h["since_ms"], h["cmd"][:5], d["waiting"])' <"$work/out")
expect_eq "status --json: name, held, host, pid" "$(cut -d' ' -f1-4 <<<"$facts")" "nightly True $host $runpid"
expect_range "status --json: since_ms is when run began to acquire" "$(cut -d' ' -f5 <<<"$facts")" "$t0" "$t1"
expect_eq "status --json: the command" "$(cut -d' ' -f6- <<<"$facts")" "sh -c 0"

# A waiter in line: its side keys are not listed, and it is counted.
bg "$work/w.out" "$work/w.err" -u "$url" acquire -w 30s nightly
waitpid=$BGPID
wait_until "$(bound 5 30)" eval '"$bin" -u "$url" status nightly 2>/dev/null | grep -q "^waiting: 1$"' ||
  bad "the waiter is in line" "$(cat "$work/w.err")"
R SET app-key value >/dev/null
check "list: 0" 0 '' '' -- -u "$url" list
expect_match "list: the running lock, with its holder" "$(cat "$work/out")" "^nightly  simple  ttl [0-9]+ ms  host $host, pid $runpid, since .*, command sh -c .*  waiting 1$"
expect_match "list: another client's lock" "$(cat "$work/out")" '^pyl  simple  ttl [0-9]+ ms  holder unknown  waiting 0$'
expect_eq "list: only locks (no side keys, no application keys)" "$(cut -d' ' -f1 "$work/out" | sort | tr '\n' ' ')" "nightly pyl "
check "list PATTERN: 0" 0 '^nightly ' '' -- -u "$url" list 'night*'
expect_eq "list PATTERN: that lock alone" "$(wc -l <"$work/out")" 1
check "list --json: 0" 0 '' '' -- -u "$url" list --json
if json_ok "$work/out"; then ok "list --json: JSON lines"; else bad "list --json: JSON lines" "$(cat "$work/out")"; fi
expect_eq "list --json: two locks" "$(wc -l <"$work/out")" 2
check "list of nothing: 1" 1 '' '' -- -u "$url" list 'no-such-*'
# A node of a Redis Cluster: refused, not a partial answer.
if rlk_redis_start cnode "$work" --cluster-enabled yes --cluster-config-file "$work/cnode.conf"; then
  check "list on a cluster node: 64" 64 '' 'on a Redis Cluster, run it against each primary' -- -u "redis://127.0.0.1:$RLK_REDIS_PORT" list
else
  bad "could not start a cluster-enabled redis-server"
fi
check "--prefix: list shows names without it" 0 '^ightly  simple' '' -- -u "$url" --prefix n list

t0=$(now_ms)
check "break the running lock: 0" 0 "^broke 'nightly', held by host $host, pid $runpid, since .*, command sh -c " '' -- -u "$url" break nightly
# The holder learns at its next renewal (a third of the 3 s TTL), stops
# its job (SIGTERM) and exits 75.
if reap "$runpid" "$(bound 10 40)"; then
  expect_eq "run after break: exit 75" "$CODE" 75
  expect_range "run after break: ms until it exited" $(( $(now_ms) - t0 )) 0 "$(bound 4000 20000)"
else
  bad "run after break: still running"
fi
expect_match "run after break: it said the lock was lost" "$(cat "$work/run.err")" "lock 'nightly' lost"
if kill -0 "$jobpid" 2>/dev/null; then bad "the job was stopped"; else ok "the job was stopped"; fi
if reap "$waitpid" "$(bound 10 40)"; then
  expect_eq "the waiter got the lock: exit 0" "$CODE" 0
  read -r wtok _ <"$work/w.out"
  expect_eq "the waiter's token holds the lock" "$(R GET nightly)" "$wtok"
  expect_match "the waiter's token names its own pid" "$wtok" ";p=$waitpid;"
else
  bad "the waiter got the lock" "$(cat "$work/w.err")"
fi
check "break the waiter's lock: 0" 0 "^broke 'nightly', held by host $host, pid $waitpid" '' -- -u "$url" break nightly
check "break a free lock: 1" 1 "^'nightly' is not held$" '' -- -u "$url" break nightly

# A reentrant lock (Redisson's layout, with and without resplock's facts):
# all its holds go.
R HSET rl "0f5e3a4c-1b2d-4e6f-8a9b-0c1d2e3f4a5b:57" 3 >/dev/null; R PEXPIRE rl 60000 >/dev/null
check "status of a Redisson lock: holds 3, holder unknown" 0 '^holder: unknown' '' -- -u "$url" status rl
check "break a reentrant lock of 3 holds: 0" 0 "^broke 'rl', held by a holder of unknown facts" '' -- -u "$url" break rl
expect_eq "break a reentrant lock: the key is gone" "$(R EXISTS rl)" 0

# JSON escapes: a command with quotes and a backslash (after the read,
# which never ends), short enough to be kept whole.
bg "$work/j.out" "$work/j.err" -u "$url" run -t 10s quoted -- sh -c 'echo $$>$0;read x<$1;"\\"' "$work/j.pid" "$work/go"
wait_until "$(bound 5 30)" test -s "$work/j.pid" || bad "the quoted job started" "$(cat "$work/j.err")"
check "status --json with quotes in the command: 0" 0 '' '' -- -u "$url" status --json quoted
cmd=$("$py" -c 'import json,sys; print(json.load(sys.stdin)["holder"]["cmd"])' <"$work/out")
expect_eq "status --json: the command, decoded and escaped" "$cmd" 'sh -c echo $$>$0;read x<$1;"\\"'
check "break the quoted job: 0" 0 "^broke 'quoted'" '' -- -u "$url" break quoted
reap "$BGPID" "$(bound 20 60)"
expect_eq "the quoted job's run: exit 75" "$CODE" 75


# ------------------------------------ break releases the holder it names
# A proxy holds one of break's commands back while the lock changes
# hands; the facts printed and the token released must be one holder's.
proxy() {
  rm -rf "$work/px"; mkdir "$work/px"
  "$py" "$top_srcdir/tests/hold-proxy.py" "$work/px" "$port" "$1" &
  BG_PIDS+=("$!")
  wait_until "$(bound 10 30)" test -s "$work/px/port" || die "the proxy did not start"
  purl="redis://127.0.0.1:$(cat "$work/px/port")"
}
# holder1: a lock taken by acquire (its pid in h1pid, its token in tok1).
holder1() {
  bg "$work/h1.out" "$work/h1.err" -u "$url" acquire -t 30s "$1"
  h1pid=$BGPID
  reap "$h1pid" "$(bound 10 40)"; expect_eq "holder 1 acquired '$1'" "$CODE" 0
  read -r tok1 _ <"$work/h1.out"
}
# swap NAME: while break's command is held, holder 1 releases and a run
# (holder 2, its pid in h2pid; renewed every 2 s, so that a break is
# learnt soon) takes the lock; then the command goes on.
swap() {
  wait_until "$(bound 10 40)" test -e "$work/px/held" || bad "break reached the held command" "$(cat "$work/b.err")"
  check "holder 1 releases '$1'" 0 '' '' -- -u "$url" release "$1" "$tok1"
  rm -f "$work/h2.pid"
  bg "$work/h2.out" "$work/h2.err" -u "$url" run -t 6s "$1" -- sh -c "$job" "$work/h2.pid" "$work/go"
  h2pid=$BGPID
  wait_until "$(bound 10 40)" test -s "$work/h2.pid" || bad "holder 2 started" "$(cat "$work/h2.err")"
  touch "$work/px/go"
}

# The GET held: break reads the token after holder 2 took the lock, and
# must name holder 2, the one it releases.
holder1 brk
proxy GET
bg "$work/b.out" "$work/b.err" -u "$purl" break brk
bpid=$BGPID
swap brk
reap "$bpid" "$(bound 10 40)"
expect_eq "break with its GET held: exit 0" "$CODE" 0
expect_match "... it names the holder it released (holder 2, pid $h2pid)" "$(cat "$work/b.out")" "^broke 'brk', held by host $host, pid $h2pid, since "
if reap "$h2pid" "$(bound 20 60)"; then expect_eq "... holder 2's run: exit 75" "$CODE" 75
else bad "... holder 2's run ended: it was broken"; fi

# The release held: the lock changes hands between break's GET and its
# release, which must leave holder 2 alone and say so.
holder1 brk
proxy after:GET
bg "$work/b.out" "$work/b.err" -u "$purl" break brk
bpid=$BGPID
swap brk
reap "$bpid" "$(bound 10 40)"
expect_eq "break with its release held: exit 1" "$CODE" 1
expect_match "... it says the lock changed hands" "$(cat "$work/b.err")" "'brk' changed hands meanwhile: its new holder is left alone"
expect_eq "... and broke nothing" "$(cat "$work/b.out")" ""
check "... holder 2 still holds it" 0 "^holder: host $host, pid $h2pid, " '' -- -u "$url" status brk
if running "$h2pid"; then ok "... holder 2's run goes on"; else bad "... holder 2's run goes on" "$(cat "$work/h2.err")"; fi
check "break holder 2 itself: 0" 0 "^broke 'brk', held by host $host, pid $h2pid, " '' -- -u "$url" break brk
reap "$h2pid" "$(bound 20 60)"; expect_eq "... its run: exit 75" "$CODE" 75

# A reentrant lock: its facts are its own holder field's, read with it;
# another holder's field is never released.
R HSET rf 0f5e3a4c-1b2d-4e6f-8a9b-0c1d2e3f4a5b:7 2 rlk:holder 'h=hostx;p=4242;t=1700000000000;c=job%0Aline' >/dev/null
R PEXPIRE rf 60000 >/dev/null
check "break a reentrant lock with facts: 0" 0 "^broke 'rf', held by host hostx, pid 4242, since 2023-11-14T22:13:20.000Z \\([0-9.]+ s ago\\), command job\\\\nline$" '' -- -u "$url" break rf
expect_eq "... the key is gone" "$(R EXISTS rf)" 0
R HSET rf 0f5e3a4c-1b2d-4e6f-8a9b-0c1d2e3f4a5b:7 2 rlk:holder 'h=hostx;p=4242;t=1700000000000' >/dev/null
R PEXPIRE rf 60000 >/dev/null
proxy EVAL
bg "$work/b.out" "$work/b.err" -u "$purl" break rf
bpid=$BGPID
wait_until "$(bound 10 40)" test -e "$work/px/held" || bad "break reached its release" "$(cat "$work/b.err")"
R DEL rf >/dev/null
R HSET rf 11111111-2222-4333-8444-555555555555:9 1 rlk:holder 'h=hosty;p=4343;t=1700000000000' >/dev/null
R PEXPIRE rf 60000 >/dev/null
touch "$work/px/go"
reap "$bpid" "$(bound 10 40)"
expect_eq "break of a reentrant lock that changed hands: exit 1" "$CODE" 1
expect_match "... it says so" "$(cat "$work/b.err")" "'rf' changed hands meanwhile"
expect_eq "... the new holder's hold is intact" "$(R HGET rf 11111111-2222-4333-8444-555555555555:9)" 1
R DEL rf >/dev/null

# ------------------------------------------------ --prefix is no glob
for k in 'a[1]:q' a1:q abc:zz; do
  check "acquire $k" 0 '' '' -- -u "$url" acquire -t 60s "$k"
done
check "--prefix 'a[1]:' list: 0" 0 '' '' -- -u "$url" --prefix 'a[1]:' list
expect_eq "... the one lock under it, named without the prefix" "$(cut -d' ' -f1 "$work/out")" q
check "--prefix 'a1:' list: 0" 0 '' '' -- -u "$url" --prefix a1: list --json
expect_eq "... the one lock under it" "$("$py" -c 'import json,sys; print(*[json.loads(l)["name"] for l in sys.stdin])' <"$work/out")" q
check "--prefix 'a*:' list: 1, no key starts with it" 1 '' '' -- -u "$url" --prefix 'a*:' list
expect_eq "... nothing listed" "$(cat "$work/out")" ""
check "--prefix 'a?' list: 1" 1 '' '' -- -u "$url" --prefix 'a?' list
check "--prefix 'a' list 'b*': 0" 0 '' '' -- -u "$url" --prefix a list 'b*'
expect_eq "... PATTERN alone is a glob" "$(cut -d' ' -f1 "$work/out")" bc:zz
check "--prefix 'a' list: 0" 0 '' '' -- -u "$url" --prefix a list
expect_eq "... every lock under it, named without it" "$(cut -d' ' -f1 "$work/out" | sort | tr '\n' ' ')" "1:q [1]:q bc:zz "
R DEL 'a[1]:q' a1:q abc:zz >/dev/null

# ------------------------------------------- what a job's argv can print
# Its command line with a newline, a control byte and a byte that is not
# UTF-8 (the job's path short enough for the 64 bytes kept).
printf '#!/bin/sh\necho $$ >"%s"\nread x <"%s"\n' "$work/odd.pid" "$work/go" >"$work/oj"
chmod +x "$work/oj"
odd=$'a\nb\x01\xff'
bg "$work/o.out" "$work/o.err" -u "$url" run -t 30s odd -- "$work/oj" "$odd"
opid=$BGPID
wait_until "$(bound 5 30)" test -s "$work/odd.pid" || bad "the odd job started" "$(cat "$work/o.err")"
ctl() { LC_ALL=C grep -c $'[\x01-\x09\x0b-\x1f\x7f-\xff]' "$1"; }
check "status with odd bytes in the command: 0" 0 '' '' -- -u "$url" status odd
expect_eq "status: 8 lines, none forged" "$(wc -l <"$work/out")" 8
expect_eq "status: the command, escaped" "$(grep '^command: ' "$work/out")" "command: $work/oj a\\nb\\x01\\xff"
expect_eq "status: no control byte or stray byte printed" "$(ctl "$work/out")" 0
R SET $'nl\nkey\e[2J' 'a value' PX 60000 >/dev/null
check "list with odd bytes in a command and a name: 0" 0 '' '' -- -u "$url" list '[on][dl]*'
expect_eq "list: one line a lock" "$(wc -l <"$work/out")" 2
expect_match "list: the command, escaped" "$(cat "$work/out")" "^odd  simple  ttl [0-9]+ ms  host $host, pid $opid, since .*, command $work/oj a\\\\nb\\\\x01\\\\xff  waiting 0$"
expect_match "list: the name, escaped" "$(cat "$work/out")" '^nl\\nkey\\x1b\[2J  simple  ttl [0-9]+ ms  holder unknown  waiting 0$'
expect_eq "list: no control byte or stray byte printed" "$(ctl "$work/out")" 0
# JSON: valid UTF-8, U+FFFD for the byte that was not, the exact bytes
# in cmd_raw (percent-encoded).
jcheck='
import json, sys, urllib.parse
want = sys.argv[1].encode("utf-8", "surrogateescape")
for l in sys.stdin.buffer:
    d = json.loads(l.decode("utf-8"))
    if d["name"] == "odd":
        h = d["holder"]
        print(h["cmd"] == want.decode("utf-8", "replace"), urllib.parse.unquote_to_bytes(h.get("cmd_raw", "")) == want, "host_raw" in h)
    else:
        print(d["name"] == "nl\nkey\x1b[2J", "name_raw" in d)'
check "status --json: 0" 0 '' '' -- -u "$url" status --json odd
expect_eq "status --json: UTF-8, cmd with U+FFFD, cmd_raw the bytes" "$("$py" -c "$jcheck" "$work/oj $odd" <"$work/out" 2>&1)" "True True False"
check "list --json: 0" 0 '' '' -- -u "$url" list --json '[on][dl]*'
expect_eq "list --json: the same, and the name as it is" "$("$py" -c "$jcheck" "$work/oj $odd" <"$work/out" 2>&1 | sort)" "True False
True True False"
check "break the odd job: 0" 0 "^broke 'odd', held by host $host, pid $opid, .*, command $work/oj a\\\\nb\\\\x01\\\\xff$" '' -- -u "$url" break odd
expect_eq "break: no control byte or stray byte printed" "$(ctl "$work/out")" 0
reap "$opid" "$(bound 20 60)"
expect_eq "the odd job's run: exit 75" "$CODE" 75

finish
