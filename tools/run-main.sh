#!/usr/bin/env bash
# tools/run-main.sh - the README's main job, in one command:
#   install what is missing (tools/deps.sh), build with meson + ninja, start
#   five fresh masters with cluster-up.sh, run redlock-bench against them
#   (floor, the raw row, latency, throughput, contention, dead waiters,
#   kill/pause/restart faults, restarts by persistence mode and a timeline),
#   and stop the masters again, whatever happens.
#
# It prints one line per step; what the tools say (apt, meson, ninja,
# cluster-up.sh) goes to $BENCH_OUT/run-main.log, and the end of that log
# is shown only when a step fails. The benchmark's own report follows.
#
# usage: tools/run-main.sh [redlock-bench options...]
#   e.g. tools/run-main.sh --duration 5 --scenarios floor,uncontended,pause2
# environment:
#   BENCH_BASE_PORT  first master's port (default 7000; the restart-aof and
#                    restart-persist scenarios run their own masters at
#                    BASE+10.., one cluster at a time)
#   BENCH_OUT        where results.jsonl, the timeline plot and the log go
#                    (default out)
#   BUILD_DIR        meson build dir (default build)
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd -- "$ROOT"

BASE_PORT=${BENCH_BASE_PORT:-7000}
OUT=${BENCH_OUT:-out}
BUILD=${BUILD_DIR:-build}
N=5
DIR=$ROOT/.cluster-bench-$BASE_PORT
AOF_DIR=$DIR-aof
PERSIST_DIR=$DIR-persist
CLUSTER=$ROOT/cluster-up.sh
STEPS=5

mkdir -p -- "$OUT"
LOG=$OUT/run-main.log
: >"$LOG"

say() { printf 'run-main: %s\n' "$*" >&2; }

# step N "what" CMD...: one line for the step, the command's output to the
# log; on failure the log's last lines and exit 2.
step() {
    local n=$1 what=$2 rc=0
    shift 2
    printf 'run-main: [%d/%d] %s ... ' "$n" "$STEPS" "$what" >&2
    printf '\n== [%d/%d] %s: %s\n' "$n" "$STEPS" "$what" "$*" >>"$LOG"
    "$@" >>"$LOG" 2>&1 || rc=$?
    if ((rc != 0)); then
        printf 'FAILED (exit %d)\n' "$rc" >&2
        say "last lines of $LOG:"
        tail -n 20 -- "$LOG" | sed 's/^/    /' >&2
        exit 2
    fi
    printf 'ok\n' >&2
}

# 1. dependencies (Debian packages), when the project ships the script
deps() {
    if [[ -f tools/deps.sh ]]; then
        bash tools/deps.sh || return
    fi
    local tool
    for tool in meson ninja redis-server redis-cli; do
        command -v "$tool" >/dev/null || { echo "$tool not found (run tools/deps.sh)"; return 1; }
    done
}

# 2. build: only what the job needs; without the test suite's dependencies
#    if they are what fails
build() {
    if [[ ! -f $BUILD/build.ninja ]]; then
        if ! meson setup "$BUILD"; then
            echo "meson setup failed with the test suite; retrying with -Dtests=false"
            rm -rf -- "$BUILD"
            meson setup "$BUILD" -Dtests=false || return
        fi
    fi
    ninja -C "$BUILD" bench/redlock-bench
}

# 3. masters: ours only, on our ports, in our dirs; stopped on any exit
stop_masters() {
    local d
    for d in "$DIR" "$AOF_DIR" "$PERSIST_DIR"; do
        if [[ -f $d/cluster.env ]]; then
            "$CLUSTER" -d "$d" stop || echo "could not stop the masters in $d"
        fi
    done
}
MASTERS=
start_masters() {
    stop_masters   # left over from a run that was killed
    MASTERS=$("$CLUSTER" -n "$N" -p "$BASE_PORT" -d "$DIR" start)
}
on_exit() {
    local rc=$?
    if [[ -f $DIR/cluster.env || -f $AOF_DIR/cluster.env || -f $PERSIST_DIR/cluster.env ]]; then
        printf 'run-main: [%d/%d] stopping the masters ... ' "$STEPS" "$STEPS" >&2
        if stop_masters >>"$LOG" 2>&1; then printf 'ok\n' >&2; else printf 'FAILED\n' >&2; fi
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "log of every step: $LOG"
step 1 "dependencies (tools/deps.sh)" deps
step 2 "building redlock-bench in $BUILD" build
step 3 "starting $N masters on 127.0.0.1:$BASE_PORT.. ($DIR)" start_masters

# 4. the benchmark: its report is the output of this job
printf 'run-main: [4/%d] redlock-bench (about 2.5 minutes; report below)\n' "$STEPS" >&2
rc=0
rm -rf -- "$OUT/traces"
"$BUILD/bench/redlock-bench" --masters "$MASTERS" \
    --cluster-script "$CLUSTER" --cluster-dir "$DIR" \
    --base-port "$BASE_PORT" --aof-base-port "$((BASE_PORT + 10))" \
    --duration 3 --out "$OUT" --trace-dir "$OUT/traces" "$@" || rc=$?

# The fault scenarios' own protocol steps, replayed against the model
# (model/trace-check.py, docs: the model): a step it cannot take fails the
# job as a violation does (exit 4).
shopt -s nullglob
traces=("$OUT"/traces/*.trace)
if ((${#traces[@]} > 0)); then
    say "trace check of the fault scenarios (model/trace-check.py):"
    # pipefail: the checker's status is the pipeline's
    if ! python3 model/trace-check.py "${traces[@]}" 2>&1 | sed 's/^/    /' >&2; then
        ((rc != 0)) || rc=4
    fi
fi
exit "$rc"
