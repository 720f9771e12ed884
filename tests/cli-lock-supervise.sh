#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock run's job never outlives the lock: the job runs in a process
# group of its own, stopped as a whole (a shell script's children too),
# and a supervisor process stops it in time when resplock itself is
# killed (kill -9) or stopped past the TTL.  Also: what is left of the
# group when the command ends is stopped before the release, and a job
# at a terminal reads it and gets one Ctrl-C, once.
. "$top_srcdir/tests/cli-lock-lib.sh"
py=/usr/bin/python3

rlk_redis_start main "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
R() { redis-cli -p "$port" "$@"; }
key_gone() { [ "$(redis-cli -p "$port" EXISTS "$1")" = 0 ]; }
alive() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "${st%% *}" != Z ]
}
# live_in_group PGID: a process of the group is alive.  Not kill -0: a
# dead member stays a zombie until its (new) parent reaps it.
live_in_group() {
  local g=$1 f st a
  for f in /proc/[0-9]*/stat; do
    { read -r st <"$f"; } 2>/dev/null || continue
    a=(${st##*) })
    [ "${a[2]}" = "$g" ] && [ "${a[0]}" != Z ] && return 0
  done
  return 1
}

# The job groups a failed run might leave behind are killed at the end.
JOB_PGIDS=()
trap 'for g in "${JOB_PGIDS[@]}"; do kill -s CONT -- "-$g"; kill -s KILL -- "-$g"; done 2>/dev/null; rlk_cleanup' EXIT

# hb-job.sh DIR [exit]: a job whose work is done by a grandchild in its
# process group, which writes a heartbeat (ms since the epoch) every 20 ms
# and, when it gets SIGTERM, whether the lock's key still exists.  DIR/ids
# has the job's pid, its process group and the grandchild's pid.  With
# "exit", the job itself ends at once and leaves the grandchild running.
cat >"$work/hb-job.sh" <<EOS
dir=\$1
( trap 'redis-cli -p $port EXISTS "\$RESPLOCK_NAME" >"\$dir/gc.term"; exit 143' TERM
  while :; do date +%s%3N >>"\$dir/hb"; sleep 0.02; done ) &
echo "\$\$ \$(ps -o pgid= -p \$\$ | tr -d ' ') \$!" >"\$dir/ids"
[ "\${2:-}" = exit ] && exit 0
wait
EOS

# start_job LABEL NAME TTL [exit]: resplock run in the background (BGPID)
# on hb-job.sh, until its heartbeat starts; sets JOB, PGID and GC.
start_job() {
  local label=$1 name=$2 ttl=$3
  mkdir -p "$work/$name"
  bg "$work/$name.out" "$work/$name.err" -u "$url" run -t "$ttl" "$name" -- sh "$work/hb-job.sh" "$work/$name" ${4:-}
  JOB= PGID= GC=
  if ! wait_until $((5 * SLOW)) test -s "$work/$name/ids"; then
    bad "$label: the job did not start" "$(cat "$work/$name.err")"; return 1
  fi
  read -r JOB PGID GC <"$work/$name/ids"
  JOB_PGIDS+=("$PGID")
  if [ "$PGID" = "$BGPID" ]; then
    bad "$label: the job runs in resplock's process group"
  else
    ok "$label: the job runs in a process group of its own"
  fi
}

# newer_beat FILE MS: FILE has a heartbeat later than MS.
newer_beat() { [ "$(tail -n 1 "$1")" -gt "$2" ] 2>/dev/null; }

# group_stopped_in_time LABEL NAME: the job's whole group ends while the
# lock's key still exists (its validity has not ended), and no heartbeat
# is written after that: none in the second after the key's expiry.
group_stopped_in_time() {
  local label=$1 name=$2 pttl t
  if wait_until $((5 * SLOW)) eval '! live_in_group '"$PGID"; then
    pttl=$(R PTTL "$name")
    expect_range "$label: the job's group (the grandchild too) ended before the key expired (PTTL then, ms)" "$pttl" 1 100000
  else
    bad "$label: the job's group is still running" "$(ps -o pid,pgid,stat,args -g "$PGID" 2>&1)"
  fi
  wait_until 5 key_gone "$name" || bad "$label: the key did not expire"
  t=$(now_ms)
  if wait_until 1 newer_beat "$work/$name/hb" "$t"; then
    bad "$label: the job still writes after the key expired"
  else
    ok "$label: no heartbeat after the key expired"
  fi
}

# ------------------------------------------------------- resplock killed -9
if start_job "kill -9" k9 2s; then
  { kill -s KILL "$BGPID"; wait "$BGPID"; } 2>/dev/null   # no "Killed" notice
  group_stopped_in_time "kill -9 of resplock" k9
  expect_match "kill -9: the supervisor says it stopped the job" "$(cat "$work/k9.err")" \
    "supervisor: resplock is gone; stopping the job \(process group $PGID\)"
  reap "$BGPID" 5
fi

# ----------------------------------------- resplock stopped past its TTL
if start_job "SIGSTOP" st 2s; then
  kill -s STOP "$BGPID"   # resplock alone
  group_stopped_in_time "SIGSTOP of resplock" st
  expect_match "SIGSTOP: the supervisor says it stopped the job" "$(cat "$work/st.err")" \
    "supervisor: the lock was not renewed in time; stopping the job \(process group $PGID\)"
  kill -s CONT "$BGPID"
  reap "$BGPID" $((10 * SLOW))
  expect_eq "SIGSTOP: continued, run exits 75" "$CODE" 75
fi

# The job ends while resplock is stopped, and the lock expires meanwhile:
# continued, resplock finds the release refused (not held, or held by
# someone else).  The run was not exclusive to its end: 75, not the job's 0.
for who in nobody other; do
  mkdir -p "$work/end-$who"
  bg "$work/end-$who.out" "$work/end-$who.err" -u "$url" run -t 2s "end-$who" -- \
    sh -c 'd=$1; echo $$ >"$d/ready"; until [ -e "$d/go" ]; do sleep 0.02; done' sh "$work/end-$who"
  if ! wait_until $((5 * SLOW)) test -s "$work/end-$who/ready"; then
    bad "ended while stopped ($who): the job did not start" "$(cat "$work/end-$who.err")"; continue
  fi
  read -r jpid <"$work/end-$who/ready"
  kill -s STOP "$BGPID"
  touch "$work/end-$who/go"
  wait_until 5 eval '! alive '"$jpid" || bad "ended while stopped ($who): the job did not end"
  wait_until 5 key_gone "end-$who" || bad "ended while stopped ($who): the key did not expire"
  [ "$who" = other ] && R SET "end-$who" someone-else >/dev/null
  kill -s CONT "$BGPID"
  reap "$BGPID" $((10 * SLOW))
  expect_eq "the job ended while resplock was stopped past the TTL, lock taken by $who: run exits 75" "$CODE" 75
done

# ------------------------------------------------------------- lock lost
# The key is taken by someone else: the next renewal (a third of the TTL)
# is refused, and the whole group is stopped.
if start_job "lock lost" lost 3s; then
  R SET lost someone-else >/dev/null
  if wait_until $((5 * SLOW)) eval '! live_in_group '"$PGID"; then
    ok "lock lost: the job's group (the grandchild too) was stopped"
  else
    bad "lock lost: the job's group is still running" "$(ps -o pid,pgid,stat,args -g "$PGID" 2>&1)"
  fi
  expect_eq "lock lost: the grandchild got SIGTERM" "$(test -e "$work/lost/gc.term" && echo yes)" yes
  reap "$BGPID" $((10 * SLOW))
  expect_eq "lock lost: run exits 75" "$CODE" 75
  expect_eq "lock lost: the other holder's key is intact" "$(R GET lost)" someone-else
fi

# ------------------------------------ signals to resplock reach the group
if start_job "SIGTERM to resplock" sig 5s; then
  kill -s TERM "$BGPID"   # resplock alone
  reap "$BGPID" $((10 * SLOW))
  expect_eq "SIGTERM to resplock: run exits with the job's code (143)" "$CODE" 143
  expect_eq "SIGTERM to resplock: the grandchild got it too, the lock still held" "$(cat "$work/sig/gc.term" 2>/dev/null)" 1
  live_in_group "$PGID" && bad "SIGTERM to resplock: the job's group is still running" ||
    ok "SIGTERM to resplock: the job's group ended"
  expect_eq "SIGTERM to resplock: the lock is released" "$(R EXISTS sig)" 0
fi

# ------------------------------------------------ the supervisor killed
# resplock cannot vouch for the job without its switch: it stops the job.
if start_job "supervisor killed" sup 5s; then
  spid=$(ps -o pid= --ppid "$BGPID" | tr -d ' ' | grep -vx "$JOB")
  if [ -n "$spid" ] && [ "$(wc -w <<<"$spid")" = 1 ]; then
    kill -s KILL "$spid"
    reap "$BGPID" $((10 * SLOW))
    expect_eq "supervisor killed: run exits 75" "$CODE" 75
    expect_match "supervisor killed: resplock says so" "$(cat "$work/sup.err")" \
      "the supervisor ended unexpectedly; stopping 'sh' \(process group $PGID\)"
    live_in_group "$PGID" && bad "supervisor killed: the job's group is still running" ||
      ok "supervisor killed: the job's group was stopped"
  else
    bad "supervisor killed: resplock has no supervisor besides the job" "children: $(ps -o pid=,args= --ppid "$BGPID")"
  fi
fi

# ------------------------------- what is left of the group at the command's end
if start_job "leftover" left 5s exit; then
  reap "$BGPID" $((10 * SLOW))
  expect_eq "leftover: run exits with the command's code" "$CODE" 0
  alive "$GC" && bad "leftover: the grandchild still runs after resplock exited" ||
    ok "leftover: the grandchild was stopped before resplock exited"
  expect_eq "leftover: it got SIGTERM while the lock was still held" "$(cat "$work/left/gc.term" 2>/dev/null)" 1
  expect_eq "leftover: the lock is released" "$(R EXISTS left)" 0
  expect_eq "leftover: resplock says nothing (not an error)" "$(grep "^resplock:" "$work/left.err")" ""
fi

# ------------------------------------------------------------- at a terminal
# resplock runs in a pseudo-terminal it has for controlling terminal, in
# its foreground.  The job reads a line from it, then gets one ^C typed.
cat >"$work/tty-job.sh" <<'EOS'
dir=$1
trap 'echo INT >>"$dir/ints"' INT
echo ready >"$dir/ready"
IFS= read -r line
echo "$line" >"$dir/got"
until [ -e "$dir/end" ]; do sleep 0.02; done
exit $((40 + $(wc -l <"$dir/ints")))
EOS
cat >"$work/drive-pty.py" <<'EOS'
import os, pty, select, sys, time
work, slow, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
pid, fd = pty.fork()          # setsid, and the pty is the controlling terminal
if pid == 0:
    os.execvp(argv[0], argv)
log = open(os.path.join(work, "pty.log"), "wb")
def pump(t):
    end = time.monotonic() + t
    while (left := end - time.monotonic()) > 0:
        if select.select([fd], [], [], min(left, 0.01))[0]:
            try:
                log.write(os.read(fd, 4096))
            except OSError:   # EIO: no process has the terminal open
                time.sleep(min(left, 0.01))
def wait_for(cond, limit):
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() >= end:
            return False
        pump(0.01)
    return True
def has(name):
    p = os.path.join(work, name)
    return os.path.exists(p) and os.path.getsize(p) > 0
def count(name):
    try:
        return len(open(os.path.join(work, name)).read().split())
    except FileNotFoundError:
        return 0
print("ready=%s" % ("yes" if wait_for(lambda: has("ready"), 10 * slow) else "no"))
os.write(fd, b"hello\n")
print("got=%s" % (open(os.path.join(work, "got")).read().strip()
                  if wait_for(lambda: has("got"), 5 * slow) else "nothing (stopped by SIGTTIN?)"))
os.write(fd, b"\x03")
wait_for(lambda: count("ints") >= 1, 5 * slow)
# A second SIGINT, the forwarded copy, would follow within a moment.
wait_for(lambda: count("ints") >= 2, 0.5 * slow)
print("ints=%d" % count("ints"))
open(os.path.join(work, "end"), "w").close()
status = None
def done():
    global status
    p, st = os.waitpid(pid, os.WNOHANG)
    if p == pid:
        status = st
    return status is not None
if wait_for(done, 10 * slow):
    print("exit=%s" % os.waitstatus_to_exitcode(status))
else:
    os.kill(pid, 9)
    print("exit=none")
EOS
mkdir -p "$work/tty"
mapfile -t res < <($py "$work/drive-pty.py" "$work/tty" "$SLOW" env --default-signal $RLK_WRAP "$bin" -v -u "$url" \
  run -t 5s tty -- bash "$work/tty-job.sh" "$work/tty" 2>&1)
expect_eq "terminal: the job started" "${res[0]-}" ready=yes
expect_eq "terminal: the job reads a line typed at the terminal" "${res[1]-}" got=hello
expect_eq "terminal: one ^C reaches the job once" "${res[2]-}" ints=1
# Two SIGINTs close together may merge into one: that the ^C was not also
# forwarded is seen in resplock's -v log, which the terminal shows.
expect_eq "terminal: the ^C reached the job's group only, resplock forwarded nothing" \
  "$(grep -c 'forwarding signal' "$work/tty/pty.log")" 0
expect_eq "terminal: run exits with the job's code (40 + SIGINTs)" "${res[3]-}" exit=41
expect_eq "terminal: the lock is released" "$(R EXISTS tty)" 0
[ "${res[3]-}" = exit=41 ] || echo "# pty output: $(tr -d '\r' <"$work/tty/pty.log" | head -20)"

finish
