#!/usr/bin/env bash
# repeat.sh - run some tests N times in a row under load, to find flakiness.
#
# usage: tools/repeat.sh [-n N] [-b BUSY] [-C BUILD_DIR] TEST...
#
# Runs `meson test -C BUILD_DIR --no-rebuild TEST...` N times (default 20)
# with BUSY busy loops (default 2, one per core here) spinning beside it,
# and stops at the first failure, printing its log. The loops stop on exit,
# even on failure or ^C. Ports: REDLOCK_TEST_PORT_OFFSET as for meson test
# (set it when something else runs test clusters on this machine).
# The last line is "TESTS: N of N runs passed".
set -uo pipefail

PROG=repeat.sh
n=20 busy=2 dir=build
while getopts "n:b:C:" o; do
    case $o in
    n) n=$OPTARG ;;
    b) busy=$OPTARG ;;
    C) dir=$OPTARG ;;
    *) echo "usage: $PROG [-n N] [-b BUSY] [-C BUILD_DIR] TEST..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
(($# > 0)) || { echo "usage: $PROG [-n N] [-b BUSY] [-C BUILD_DIR] TEST..." >&2; exit 2; }
[[ -d $dir ]] || { echo "$PROG: $dir: no build directory (meson setup $dir)" >&2; exit 2; }

pids=()
stop_busy() {
    ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
    wait 2>/dev/null
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ((i = 0; i < busy; i++)); do
    (while :; do :; done) &
    pids+=($!)
done

passed=0
for ((k = 1; k <= n; k++)); do
    if meson test -C "$dir" --no-rebuild --print-errorlogs "$@" >"$dir/repeat.log" 2>&1; then
        passed=$((passed + 1))
        echo "$PROG: run $k: passed"
    else
        echo "$PROG: run $k: FAILED; its log:"
        cat "$dir/repeat.log"
        grep -A8 '^not ok' "$dir/meson-logs/testlog.txt"
        break
    fi
done
echo "$*: $passed of $n runs passed"
((passed == n))
