#!/usr/bin/env bash
# tools/run-main.sh - the README's main job, in one command:
#   install what is missing (tools/deps.sh), build with meson + ninja, start
#   five fresh masters with cluster-up.sh, run redlock-bench against them
#   (floor, latency, throughput, contention, kill/pause/restart faults and a
#   timeline), and stop the masters again, whatever happens.
#
# usage: tools/run-main.sh [redlock-bench options...]
#   e.g. tools/run-main.sh --duration 5 --scenarios floor,uncontended,pause2
# environment:
#   BENCH_BASE_PORT  first master's port (default 7000; the restart-aof
#                    scenario runs its own --aof masters at BASE+10..)
#   BENCH_OUT        where results.jsonl and the timeline plot go (default out)
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
CLUSTER=$ROOT/cluster-up.sh

say() { printf 'run-main: %s\n' "$*" >&2; }

# 1. dependencies (Debian packages), when the project ships the script
if [[ -f tools/deps.sh ]]; then
    say "checking dependencies (tools/deps.sh)"
    bash tools/deps.sh
fi
for tool in meson ninja redis-server redis-cli; do
    command -v "$tool" >/dev/null || { say "$tool not found (run tools/deps.sh)"; exit 2; }
done

# 2. build: only what the job needs
if [[ ! -f $BUILD/build.ninja ]]; then
    say "configuring $BUILD"
    if ! meson setup "$BUILD" >/dev/null; then
        say "meson setup failed with the test suite; retrying with -Dtests=false"
        rm -rf -- "$BUILD"
        meson setup "$BUILD" -Dtests=false >/dev/null
    fi
fi
say "building redlock-bench"
ninja -C "$BUILD" bench/redlock-bench >/dev/null
BENCH=$BUILD/bench/redlock-bench

# 3. masters: ours only, on our ports, in our dirs; stopped on any exit
stop_masters() {
    local d
    for d in "$DIR" "$AOF_DIR"; do
        if [[ -f $d/cluster.env ]]; then
            "$CLUSTER" -d "$d" stop >/dev/null 2>&1 || say "could not stop the masters in $d"
        fi
    done
}
trap stop_masters EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
stop_masters   # left over from a run that was killed
say "starting $N masters on 127.0.0.1:$BASE_PORT.. in $DIR"
masters=$("$CLUSTER" -n "$N" -p "$BASE_PORT" -d "$DIR" start)

# 4. the benchmark
say "running redlock-bench (about 1-2 minutes)"
rc=0
"$BENCH" --masters "$masters" \
    --cluster-script "$CLUSTER" --cluster-dir "$DIR" \
    --base-port "$BASE_PORT" --aof-base-port "$((BASE_PORT + 10))" \
    --duration 3 --out "$OUT" "$@" || rc=$?
exit "$rc"
