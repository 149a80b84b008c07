#!/usr/bin/env bash
# test-cron-job.sh CRON_JOB_SH REDLOCK_CLI - examples/cron-job.sh against the
# masters in $REDLOCK_TEST_MASTERS (with-cluster.sh), with the redlock-cli
# just built first on PATH. TAP.
set -uo pipefail
script=$1
PATH=$(cd -- "$(dirname -- "$2")" && pwd -P):$PATH
export PATH REDLOCK_MASTERS=$REDLOCK_TEST_MASTERS
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
n=0 fail=0

# check DESCRIPTION CONDITION...: one TAP line.
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

# run ARGS...: the script with stdout, stderr and status kept apart.
run() {
    rc=0
    "$script" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    sed 's/^/# stdout: /' "$tmp/out"
    sed 's/^/# stderr: /' "$tmp/err"
}

echo "1..12"
res="cron-$$"

# shellcheck disable=SC2016  # $1 is the inner shell's
run "$res" sh -c 'echo job-out; echo job-err >&2; touch "$1"' sh "$tmp/ran"
check "free lock: the job runs and the script exits 0" test "$rc" -eq 0 -a -e "$tmp/ran"
check "free lock: the job's stdout passes through" grep -qx job-out "$tmp/out"
check "free lock: the job's stderr passes through, nothing else" diff -q <(echo job-err) "$tmp/err"

token=$(redlock-cli lock "$res" --ttl 30s)
rm -f "$tmp/ran"
run "$res" touch "$tmp/ran"
check "lock held elsewhere: exits 0" test "$rc" -eq 0
check "lock held elsewhere: the job does not run" test ! -e "$tmp/ran"
check "lock held elsewhere: prints nothing at all" test ! -s "$tmp/out" -a ! -s "$tmp/err"
redlock-cli unlock "$res" "$token"

run "$res" sh -c 'exit 3'
check "a failing job's status is the script's" test "$rc" -eq 3
run "$res" sh -c 'exit 75'
check "a job that itself exits 75 is not taken for a held lock" test "$rc" -eq 75

REDLOCK_MASTERS=127.0.0.1:1 run "$res" true
check "masters down: fails with redlock-cli's status 69" test "$rc" -eq 69
check "masters down: says why" grep -q 'connection refused' "$tmp/err"

REDLOCK_MASTERS='' run "$res" true
check "no REDLOCK_MASTERS: exits 78 (configuration error)" test "$rc" -eq 78
check "no REDLOCK_MASTERS: one line saying so" test "$(wc -l <"$tmp/err")" -eq 1
exit "$fail"
