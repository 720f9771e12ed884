#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resplock run under faults.  WORKERS loops of `resplock run` share one
# lock around a non-atomic counter while the test injects, EACH times per
# kind and in a random order: SIGKILL of the holding resplock, SIGSTOP of
# the holding resplock past the TTL (then SIGCONT), SIGSTOP of waiting
# resplocks (then SIGCONT), SIGSTOP of the server past the TTL (then
# SIGCONT), and a crash and restart of the server (AOF, fsync always: the
# lock survives it).  At the end:
#   - the counter is exact: the increments in the log are 1..K, none lost;
#   - no two sections overlap: starts have strictly increasing fences and
#     every line of a section comes before the next section starts;
#   - no job outlives its lock: no heartbeat of a section after a later
#     section started, and no job process alive once its validity is over;
#   - a run whose lock ran out under its job exits 75;
#   - no job process is left.
# RLK_FAULT_SEED repeats an order of faults; natively, RLK_FAULTS_EACH
# sets how many of each kind (20 by default; fewer for a quicker look).
. "$top_srcdir/tests/cli-lock-lib.sh"

WORKERS=6
if [ -n "$RLK_WRAP" ]; then
  EACH=3 TTL=2000 MIN_RUNS=15
  echo "# under RLK_WRAP: $EACH faults of each kind, TTL $TTL ms (natively 20, 1000 ms)"
else
  EACH=${RLK_FAULTS_EACH:-20} TTL=1000 MIN_RUNS=100
fi
SEED=${RLK_FAULT_SEED:-$RANDOM}
RANDOM=$SEED
echo "# fault order seed $SEED (RLK_FAULT_SEED=$SEED repeats the order, not the timing)"

AOF=(--appendonly yes --appendfsync always)
rlk_redis_start faults "$work" "${AOF[@]}" || die "could not start redis-server"
port=$RLK_REDIS_PORT
url="redis://127.0.0.1:$port"
d="$work/f"
mkdir -p "$d"
: >"$d/log"; : >"$d/runs"

# The log has one line per event, each one append of one short line:
# "F start", "F beat", "F add N", "F end", F the section's fence.
# work.sh DIR FENCE BEATS: the critical section.  It reads the last N,
# works (a heartbeat every 20 ms), then logs N + 1: two sections at once
# would log the same N.
cat >"$d/work.sh" <<'EOF'
d=$1 f=$2 log=$1/log
echo $$ >>"$d/pids.$f"
echo "$f start" >>"$log"
n=$(awk '$2 == "add" { n = $3 } END { print n + 0 }' "$log")
i=0
while [ $i -lt "$3" ]; do
  echo "$f beat" >>"$log"
  sleep 0.02
  i=$((i + 1))
done
echo "$f add $((n + 1))" >>"$log"
echo "$f end" >>"$log"
EOF
# job.sh DIR WORKER BEATS: the command resplock runs.  A short section,
# unless the test asked (DIR/want) for one to inject a fault into:
# "direct" works 3 s in this process, "grand" 3 s in a child of it (a
# grandchild of resplock), "medium" BEATS heartbeats (about half a TTL) in
# this process.  DIR/holder tells the test which worker holds which fence.
cat >"$d/job.sh" <<'EOF'
d=$1 f=$RESPLOCK_FENCE kind=short
mv "$d/want" "$d/want.$f" 2>/dev/null && read -r kind <"$d/want.$f"
echo $$ >>"$d/pids.$f"
echo "$f $2 $kind" >"$d/holder.$f" && mv "$d/holder.$f" "$d/holder"
case $kind in
  short) exec sh "$d/work.sh" "$d" "$f" 2 ;;
  direct) exec sh "$d/work.sh" "$d" "$f" 150 ;;
  medium) exec sh "$d/work.sh" "$d" "$f" "$3" ;;
  *) sh "$d/work.sh" "$d" "$f" 150 & wait ;;
esac
EOF
# worker.sh I DIR TTL resplock...: runs the section through resplock until
# DIR/stop exists.  DIR/wI.pid is "PID RUN" of the current resplock
# (written before it starts), RUN being "I.N" for the worker's Nth run:
# pids are reused within the test.  DIR/runs gets "RUN PID EXIT" for each,
# DIR/wI.err what they said, each line after "RUN: ".
cat >"$d/worker.sh" <<'EOF'
i=$1 d=$2 TTL=$3; shift 3
n=0
until [ -e "$d/stop" ]; do
  n=$((n + 1))
  (echo "$BASHPID $i.$n" >"$d/w$i.tmp" && mv "$d/w$i.tmp" "$d/w$i.pid"
   exec "$@" sh "$d/job.sh" "$d" "$i" $((TTL / 40))) </dev/null 2>"$d/w$i.run" &
  p=$!
  wait "$p"
  echo "$i.$n $p $?" >>"$d/runs"
  sed "s/^/$i.$n: /" "$d/w$i.run" >>"$d/w$i.err"
done
EOF

workers=()
for i in $(seq "$WORKERS"); do
  # 2>: bash's notices of the runs killed on purpose.
  setsid bash "$d/worker.sh" "$i" "$d" "$TTL" $RLK_WRAP "$bin" -u "$url" run -t "${TTL}ms" -w 60s faults -- \
    2>>"$d/workers.err" &
  workers+=($!); BG_PIDS+=($!)
done

# ------------------------------------------------------------ helpers
# alive PID: the process exists and is not a zombie.
alive() {
  local s
  { s=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}
# The job processes of fence $1 that are still alive (a pid that is
# reused is someone else's: the fence in its environment tells).
jobs_alive() {
  local p
  for p in $(sort -u "$d/pids.$1" 2>/dev/null); do
    alive "$p" && tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "RESPLOCK_FENCE=$1" && echo "$p"
  done
}
# is_run PID: PID is a resplock of this test.
is_run() { [[ "$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline")" == *"$bin"*" run "* ]]; }
OUTLIVED=()
# gone FENCE WHAT: the lock of FENCE is past its validity: its job must be gone.
gone() {
  local left
  left=$(for p in $(jobs_alive "$1"); do ps -o pid=,stat=,args= -p "$p"; done | sed 's/  */ /g' | tr '\n' ';')
  [ -z "$left" ] || OUTLIVED+=("$2: fence $1's job alive after its lock's validity:${left%;}")
}
in_log() { grep -q "^$1 $2" "$d/log"; }
adds() { grep -c ' add ' "$d/log"; }
at_least_adds() { [ "$(adds)" -ge "$1" ]; }
# The fault's duration: how long a process stays stopped is the fault
# itself, not a wait for something to happen.
hold_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
# A pause past the TTL: 1.5 to 2 TTLs.
past_ttl() { echo $((TTL * 3 / 2 + RANDOM % (TTL / 2))); }

LAST=0
# Reads DIR/holder into HF (fence), HW (worker), HK (kind).
holder() { read -r HF HW HK 2>/dev/null <"$d/holder"; }
long_holder() { holder && [ "$HK" != short ] && [ "$HF" -gt "$LAST" ]; }
later_holder() { holder && [ "$HF" -gt "$1" ]; }
# target KIND: asks for a long section of KIND and waits until it holds
# the lock; sets HF, HW, and RP and RUN, the resplock holding it.
target() {
  echo "$1" >"$d/want.tmp" && mv "$d/want.tmp" "$d/want"
  if ! wait_until "$(bound 20 120)" long_holder; then
    bad "$2: no long section started in time" "$(tail -3 "$d/log")"
    return 1
  fi
  LAST=$HF
  read -r RP RUN <"$d/w$HW.pid"
}
# A fault counts when it hit a section that was still working: its
# increment not yet logged (checked when the fault began or ended: see
# each fault).
landed() { ! in_log "$1" add; }

# A line "- fault KIND" in the log: what the verdict blames for what follows.
fault_mark() { echo "- fault $1" >>"$d/log"; }

N_K9=0 N_HOLD=0 N_WAIT=0 N_SRV=0 N_RST=0
KILLED=() EXPECT75=()

# ------------------------------------------------------------ the faults
# The holder's resplock killed while its job works: the job must be gone
# by the time the next holder starts.
f_kill9() {
  target "$1" "kill -9" || return
  local f=$HF
  kill -s KILL "$RP"
  fault_mark "kill-9"
  KILLED+=("$RUN")
  landed "$f" || return
  N_K9=$((N_K9 + 1))
  # A later holder means that the killed holder's validity is over.
  if wait_until "$(bound 20 120)" later_holder "$f"; then gone "$f" "kill -9 of the holder"
  else bad "kill -9 of fence $f's holder: nobody took the lock after it"; fi
}
# The holder's resplock stopped while its job works: stopped past the TTL,
# it cannot have held the lock to the end of the job, whether the job ends
# during the pause (a medium one may) or not.
f_holder_stop() {
  target "$1" "holder stopped" || return
  kill -s STOP "$RP"
  fault_mark "holder-stop"
  if landed "$HF"; then
    N_HOLD=$((N_HOLD + 1)); EXPECT75+=("$RUN fence $HF, its resplock stopped past the TTL")
  fi
  hold_ms "$(past_ttl)"
  gone "$HF" "holder stopped past the TTL"
  kill -s CONT "$RP"
}
# The server stopped past the TTL while the holder's job works: when the
# job is still working after the pause, its lock ran out under it.
f_server_stop() {
  target "$1" "server stopped" || return
  local srv=$RLK_REDIS_PID
  kill -s STOP "$srv"
  fault_mark "server-stop"
  hold_ms "$(past_ttl)"
  if landed "$HF"; then
    N_SRV=$((N_SRV + 1)); EXPECT75+=("$RUN fence $HF, the server stopped past the TTL")
    gone "$HF" "server stopped past the TTL"
  fi
  kill -s CONT "$srv"
}
# Stops a random non-empty set of the resplocks that wait for the lock
# (those of the workers that do not hold it), for 1.2 to 1.8 TTLs: the
# holder's release may hand the lock to one of them meanwhile.
f_waiters_stop() {
  local j p stopped=() waiting=()
  holder || HW=0
  for j in $(seq "$WORKERS"); do
    [ "$j" = "$HW" ] && continue
    read -r p _ 2>/dev/null <"$d/w$j.pid" && is_run "$p" && waiting+=("$p")
  done
  [ ${#waiting[@]} -gt 0 ] || return
  for p in "${waiting[@]}"; do [ $((RANDOM % 2)) = 1 ] && stopped+=("$p"); done
  [ ${#stopped[@]} -gt 0 ] || stopped=("${waiting[0]}")
  kill -s STOP "${stopped[@]}" 2>/dev/null
  fault_mark "waiters-stop"
  hold_ms $((TTL * 6 / 5 + RANDOM % (TTL * 3 / 5)))
  kill -s CONT "${stopped[@]}" 2>/dev/null
  N_WAIT=$((N_WAIT + 1))
}
f_restart() {
  fault_mark "restart"
  rlk_redis_restart faults "$work" "$port" "$RLK_REDIS_PID" "${AOF[@]}" ||
    die "could not restart redis-server on port $port"
  N_RST=$((N_RST + 1))
}

# ------------------------------------------------------------ injection
# EACH rounds of the five kinds, shuffled; half of the faults on holders
# hit sections that work in a grandchild of resplock.  The list is gone
# through twice at most: a fault that did not land is made up later.
FAULTS=()
for i in $(seq "$EACH"); do
  if [ $((i % 2)) = 1 ]; then m=direct; else m=grand; fi
  case $((i % 3)) in 0) h=medium ;; 1) h=direct ;; *) h=grand ;; esac
  FAULTS+=("f_kill9 $m" "f_holder_stop $h" "f_waiters_stop" "f_server_stop $m" "f_restart")
done
for ((i = ${#FAULTS[@]} - 1; i > 0; i--)); do
  j=$((RANDOM % (i + 1))); t=${FAULTS[i]}; FAULTS[i]=${FAULTS[j]}; FAULTS[j]=$t
done
FAULTS+=("${FAULTS[@]}")

t0=$(now_ms)
limit=$(( $(bound 600 1800) * 1000 ))
if ! wait_until "$(bound 20 120)" at_least_adds 1; then
  bad "no section ran" "$(cat "$d"/w*.err | head -5)"; finish
fi
for f in "${FAULTS[@]}"; do
  [ $N_K9 -ge "$EACH" ] && [ $N_HOLD -ge "$EACH" ] && [ $N_WAIT -ge "$EACH" ] &&
    [ $N_SRV -ge "$EACH" ] && [ $N_RST -ge "$EACH" ] && break
  case $f in
    f_kill9*) [ $N_K9 -ge "$EACH" ] && continue ;;
    f_holder_stop*) [ $N_HOLD -ge "$EACH" ] && continue ;;
    f_waiters_stop) [ $N_WAIT -ge "$EACH" ] && continue ;;
    f_server_stop*) [ $N_SRV -ge "$EACH" ] && continue ;;
    f_restart) [ $N_RST -ge "$EACH" ] && continue ;;
  esac
  $f
  # Between faults, two sections run undisturbed.
  want=$(( $(adds) + 2 ))
  wait_until "$(bound 30 180)" at_least_adds "$want" ||
    bad "after $f: no two sections completed in time" "$(tail -3 "$d/log")"
  if [ $(( $(now_ms) - t0 )) -gt "$limit" ]; then bad "injection took longer than $((limit / 1000)) s"; break; fi
done

touch "$d/stop"
for p in "${workers[@]}"; do
  reap "$p" "$(bound 30 180)" || bad "worker $p did not finish in time"
done
elapsed=$(( $(now_ms) - t0 ))

# ------------------------------------------------------------ verdict
runs=$(wc -l <"$d/runs")
echo "# runs: $runs, kill -9: $N_K9, holder paused: $N_HOLD, waiters paused: $N_WAIT, server paused: $N_SRV, restarts: $N_RST"
echo "# exits: $(cut -d' ' -f3 "$d/runs" | sort -n | uniq -c | awk '{ printf "%s%s: %s", (NR > 1 ? ", " : ""), $2, $1 }')"
echo "# $elapsed ms"
for n in "kill -9 of a holder:$N_K9" "holder stopped past the TTL:$N_HOLD" "waiters stopped:$N_WAIT" \
         "server stopped past the TTL:$N_SRV" "server restarts:$N_RST"; do
  expect_range "faults that landed, ${n%:*}" "${n##*:}" "$EACH" 1000000
done

# The log's verdict, one line: starts, sections that overlap another
# (their start not above every earlier start, or their increment or end
# after a later start), sections with a heartbeat after a later start,
# increments, the last N, increments that repeat an N (lost), that skip
# one; then up to 3 examples of overlaps and 3 of late heartbeats.
read -r starts overlaps late incs top lost skipped < <(awk '
  function eg(s, kind) { if (neg[kind]++ < 3) egs = egs "\n  line " NR ": " s " (last fault: " fault ")" }
  function blame(f) { if (!blamed[f]++) by[fault]++ }
  $2 == "fault" { fault = $3; next }
  $2 == "start" {
    if (nstarts++ && $1 + 0 <= max) { if (!over[$1]++) novers++; blame($1); eg($0 " after fence " max " started", "o") }
    if ($1 + 0 > max) max = $1 + 0
    cur = $1; next }
  $1 != cur {
    if ($2 == "beat") { if (!late[$1]++) nlate++; blame($1); eg($0 " after fence " cur " started", "b") }
    else { if (!over[$1]++) novers++; blame($1); eg($0 " after fence " cur " started", "o") } }
  $2 == "add" {
    adds++; if ($3 + 0 > top + 1) skipped++
    if ($3 + 0 <= top) lost++; else top = $3 + 0 }
  END { print nstarts + 0, novers + 0, nlate + 0, adds + 0, top + 0, lost + 0, skipped + 0
        printf "%s", egs > "'"$d/examples"'"
        for (k in by) printf "%s %d\n", k, by[k] > "'"$d/blame"'" }' "$d/log")
echo "# sections: $starts started (in $runs runs), $incs increments"
expect_range "sections started" "$starts" "$MIN_RUNS" 1000000
expect_eq "the count is exact: increments 1..$incs in order" "$top $lost $skipped" "$incs 0 0"
[ "$lost" = 0 ] || echo "  lost increments: $lost"
expect_eq "no sections overlap" "$overlaps" 0
expect_eq "no heartbeat of a section after a later one started" "$late" 0
if [ "$overlaps$late" != 00 ]; then
  echo "  sections that overlapped or wrote late, by the last fault before:"
  sort "$d/blame" | sed 's/^/    /'
  cat "$d/examples"; echo
fi
expect_eq "no job alive after its lock's validity" "${#OUTLIVED[@]}" 0
if [ ${#OUTLIVED[@]} -gt 0 ]; then
  printf '%s\n' "${OUTLIVED[@]}" | cut -d: -f1 | sort | uniq -c | sed 's/^ */  /'
  for l in "${OUTLIVED[@]:0:3}"; do echo "  $l"; done
fi

declare -A RC
while read -r r p c; do RC[$r]=$c; done <"$d/runs"
missed=0
for e in "${EXPECT75[@]}"; do
  p=${e%% *}
  [ "${RC[$p]:-none}" = 75 ] && continue
  missed=$((missed + 1))
  [ $missed -le 5 ] && echo "  exit ${RC[$p]:-none}: ${e#* }"
done
expect_eq "every run whose lock ran out under its job exited 75 (of ${#EXPECT75[@]})" "$missed" 0
# Any run may lose its lock (75); a killed one died of SIGKILL.  None
# gives up for the restarts or the stopped server (69): they are shorter
# than its wait, in which it keeps trying.
for p in "${KILLED[@]}"; do [ "${RC[$p]:-}" = 137 ] && unset "RC[$p]"; done
others=$(for p in "${!RC[@]}"; do case ${RC[$p]} in 0|75) ;; *) echo "$p:${RC[$p]}" ;; esac; done | sort | head -5)
expect_eq "no other exit codes (worker.run:code)" "$others" ""
for r in $others; do grep -h "^${r%:*}: " "$d"/w*.err | grep -v '^[^:]*: ==' | head -3 | sed 's/^/  /'; done

left=$(for f in "$d"/pids.*; do jobs_alive "${f##*.}"; done | tr '\n' ' ')
expect_eq "no job process left" "$left" ""
for p in $left; do kill -s KILL "$p" 2>/dev/null; done

finish
