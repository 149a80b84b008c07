#!/usr/bin/env bash
# test-systemd-job.sh SERVICE TIMER REDLOCK_CLI - examples/redlock-job.service
# and .timer without systemd running: the units pass `systemd-analyze
# verify` without a word (when it is installed), and the service's
# ExecStart, with the paths pointed at the redlock-cli just built and at a
# job of ours, does what the comments promise against the masters in
# $REDLOCK_TEST_MASTERS (with-cluster.sh). TAP.
set -uo pipefail
service=$1 timer=$2 cli=$(cd -- "$(dirname -- "$3")" && pwd -P)/$(basename -- "$3")
export REDLOCK_MASTERS=$REDLOCK_TEST_MASTERS
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
n=0 fail=0

check() {
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what"
        fail=1
    fi
}

# The units as an admin would install them, with our binary and job.
sed -e "s|/usr/bin/redlock-cli|$cli|" -e "s|/usr/local/bin/report --full|$tmp/job|" \
    "$service" >"$tmp/redlock-job.service"
cp -- "$timer" "$tmp/redlock-job.timer"
read -ra exec_start <<<"$(sed -n 's/^ExecStart=//p' "$tmp/redlock-job.service")"

# job BODY: the job the service runs.
job() {
    printf '#!/bin/sh\n%s\n' "$1" >"$tmp/job"
    chmod +x "$tmp/job"
}

# start: ExecStart, as systemd would run it; stdout and stderr kept apart.
start() {
    rc=0
    "${exec_start[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
    sed 's/^/# stdout: /' "$tmp/out"
    sed 's/^/# stderr: /' "$tmp/err"
}

echo "1..8"
n=$((n + 1))
if ! command -v systemd-analyze >/dev/null; then
    echo "ok $n # SKIP systemd-analyze is not installed"
elif out=$(cd "$tmp" && systemd-analyze verify redlock-job.service redlock-job.timer 2>&1) &&
     [[ -z $out ]]; then
    echo "ok $n - systemd-analyze verify: the service and the timer, without a word"
else
    echo "not ok $n - systemd-analyze verify: $out"
    fail=1
fi
check "ExecStart is redlock-cli run" test "${exec_start[0]}" = "$cli" -a "${exec_start[1]}" = run

job "echo job-out; touch '$tmp/ran'"
start
check "free lock: the job runs, the unit succeeds" test "$rc" -eq 0 -a -e "$tmp/ran"
check "free lock: the job's output reaches the journal" grep -qx job-out "$tmp/out"

token=$("$cli" lock nightly-report --ttl 30s)
rm -f -- "$tmp/ran"
start
check "held elsewhere: the unit succeeds, the job does not run" test "$rc" -eq 0 -a ! -e "$tmp/ran"
check "held elsewhere: not a word in the journal" test ! -s "$tmp/out" -a ! -s "$tmp/err"
"$cli" unlock nightly-report "$token"

job "exit 3"
start
check "a failing job fails the unit with its status" test "$rc" -eq 3

REDLOCK_MASTERS=127.0.0.1:1 start
check "masters down: the unit fails (69)" test "$rc" -eq 69
exit "$fail"
