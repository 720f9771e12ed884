#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The systemd example (examples/resplock-job.service and .timer) for
# real: systemd-analyze verify on the units with their paths mapped to
# this build, then the unit's own ExecStart run with stderr as the journal
# (JOURNAL_STREAM matching it) against a real redis-server: a lock held
# elsewhere ends in an exit status the unit counts as success
# (SuccessExitStatus), a lost lock (75) in one it does not, and resplock's
# messages carry journal priorities and no timestamps.
. "$top_srcdir/tests/cli-lock-lib.sh"
unset RESPLOCK_CONFIG RESPLOCK_URL REDIS_URL REDISCLI_AUTH JOURNAL_STREAM
unit="$top_srcdir/examples/resplock-job.service"
timer="$top_srcdir/examples/resplock-job.timer"

# ------------------------------------------------------------- the unit file
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
success=$(sed -n 's/^SuccessExitStatus=//p' "$unit")
expect_match "the unit has one ExecStart, running resplock from /usr/local/bin" "$exec_start" '^/usr/local/bin/resplock run [^ ]+ '
expect_eq "the unit is a oneshot" "$(sed -n 's/^Type=//p' "$unit")" oneshot
expect_match "the unit says which exit status is a success" "$success" '^[0-9 ]+$'
expect_eq "the timer starts the service of the same name" "$(sed -n 's/^Unit=//p' "$timer")" ""
read -r -a cmd <<<"$exec_start"
[ "${cmd[0]}" = /usr/local/bin/resplock ] || die "ExecStart does not run /usr/local/bin/resplock: $exec_start"
name=${cmd[2]}
# The paths mapped to this build: resplock, and the job, a script of the test's.
job="$work/job"
mapped=("$(realpath "$bin")")
for w in "${cmd[@]:1}"; do
  if [ "$w" = /usr/local/bin/job ]; then mapped+=("$job"); else mapped+=("$w"); fi
done
expect_match "ExecStart runs /usr/local/bin/job" "${mapped[*]}" " $job\$"
is_success() { # CODE: 0 or listed in SuccessExitStatus
  local c
  [ "$1" = 0 ] && return 0
  for c in $success; do [ "$c" = "$1" ] && return 0; done
  return 1
}

# ------------------------------------------------------- systemd-analyze verify
if ! command -v systemd-analyze >/dev/null; then
  bad "systemd-analyze is not installed (Debian's systemd package; scripts/install-deps)"
else
  mkdir -p "$work/units"
  sed "s|^ExecStart=.*|ExecStart=${mapped[*]}|" "$unit" >"$work/units/resplock-job.service"
  cp "$timer" "$work/units/resplock-job.timer"
  printf '#!/bin/sh\nexit 0\n' >"$job"
  chmod +x "$job"
  if out=$(cd "$work/units" && systemd-analyze verify --man=no resplock-job.service resplock-job.timer 2>&1) &&
     [ -z "$out" ]; then
    ok "systemd-analyze verify: the service and the timer"
  else
    bad "systemd-analyze verify: the service and the timer" "$out"
  fi
  # The check can fail: an ExecStart that cannot run is reported.
  sed 's|^ExecStart=.*|ExecStart=/nonexistent/resplock run x -- true|' "$unit" >"$work/units/broken.service"
  if (cd "$work/units" && systemd-analyze verify --man=no broken.service >/dev/null 2>&1); then
    bad "systemd-analyze verify finds a broken ExecStart"
  else
    ok "systemd-analyze verify finds a broken ExecStart"
  fi
fi

# ----------------------------------------------------- ExecStart, as the unit runs it
rlk_redis_start main "$work" || die "could not start redis-server"
port=$RLK_REDIS_PORT
R() { redis-cli -p "$port" "$@"; }
# /etc/resplock.conf of every node: the server, and a short TTL so that a
# lost lock is found within a second.
printf 'url = redis://127.0.0.1:%s\nttl = 3s\n' "$port" >"$work/resplock.conf"
export RESPLOCK_CONFIG_SYSTEM="$work/resplock.conf"
: >"$work/journal"
stream=$(stat -c '%d:%i' "$work/journal")
run_unit() { # the job's script; sets CODE, and JOURNAL to what resplock wrote
  printf '#!/bin/sh\n%s\n' "$1" >"$job"
  chmod +x "$job"
  : >"$work/journal"
  JOURNAL_STREAM=$stream $RLK_WRAP "${mapped[@]}" </dev/null >/dev/null 2>>"$work/journal"
  CODE=$?
  JOURNAL=$(grep -v '^==' "$work/journal")
}
no_timestamps() { # NAME
  if grep -Eq '[0-9]{2}:[0-9]{2}:[0-9]{2}' <<<"$JOURNAL"; then bad "$1: no timestamps" "$JOURNAL"
  else ok "$1: no timestamps"; fi
}

R SET "$name" other-node PX 60000 >/dev/null
run_unit "touch '$work/ran'"
if is_success "$CODE"; then ok "lock held elsewhere: exit $CODE, a success for the unit"
else bad "lock held elsewhere: exit $CODE is not a success for the unit (SuccessExitStatus=$success)" "$JOURNAL"; fi
[ "$CODE" != 0 ] && ok "lock held elsewhere: not 0 (the skip is told apart)" || bad "lock held elsewhere: exit 0"
expect_eq "lock held elsewhere: the job did not run" "$(test -e "$work/ran" && echo ran)" ""
expect_eq "lock held elsewhere: nothing in the journal" "$JOURNAL" ""
R DEL "$name" >/dev/null

run_unit "touch '$work/ran'"
expect_eq "lock free: exit 0" "$CODE" 0
expect_eq "lock free: the job ran" "$(test -e "$work/ran" && echo ran)" ran
rm -f "$work/ran"
R DEL "$name" >/dev/null

# The lock taken from under the job: resplock stops it and exits 75,
# which the unit must not count as a success.
run_unit "redis-cli -p $port DEL '$name' >/dev/null; sleep 30"
expect_eq "lock lost: exit 75" "$CODE" 75
if is_success "$CODE"; then bad "lock lost: 75 is a success for the unit (SuccessExitStatus=$success)"
else ok "lock lost: 75 is a failure for the unit"; fi
expect_match "lock lost: said in the journal, priority err" "$JOURNAL" "^<3>lock '$name' lost"
no_timestamps "lock lost"

finish
