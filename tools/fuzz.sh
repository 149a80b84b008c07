#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer harnesses (fuzz/) and run each for a while.
#
#   tools/fuzz.sh [SECONDS]      (default 30)
#
# Configures build-fuzz/ with clang, ASan and UBSan (-Dfuzz=true
# -Dtests=false), builds fuzz-masters, fuzz-cli-args and fuzz-reply, and
# runs them side by side, each for SECONDS, over its seed corpus
# (fuzz/corpus/NAME/, only read) and a working corpus kept between runs
# (build-fuzz/corpus/NAME/, where new inputs go), with fuzz/NAME.dict.
# A crash, leak, undefined behaviour, OOM or a 10 s input stops that
# harness: the input is saved under build-fuzz/artifacts/NAME/ and its path
# printed, with the command that replays it. fuzz-reply listens on three
# ephemeral loopback ports; nothing else touches the network.
#
# Exit status: 0 when every harness ran its time clean, 1 when one failed,
# 2 when the harnesses cannot be built (no clang).
# Environment: REDLOCK_FUZZ_BUILD (default build-fuzz) names the build dir;
# REDLOCK_FUZZ_ARGS adds libFuzzer options (or more corpus dirs, only read)
# to every run. The harnesses have their own switches (REDLOCK_FUZZ_*),
# described at the top of each file.
set -euo pipefail

PROG="fuzz.sh"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' tools/fuzz.sh
}

secs=30
case ${1:-} in
-h | --help) usage; exit 0 ;;
'') ;;
*[!0-9]* | 0)
    echo "$PROG: SECONDS must be a positive whole number, not '$1' (see --help)" >&2
    exit 2
    ;;
*) secs=$1 ;;
esac
if (($# > 1)); then
    echo "$PROG: one argument at most (see --help)" >&2
    exit 2
fi

dir=${REDLOCK_FUZZ_BUILD:-build-fuzz}
harnesses=(fuzz-masters fuzz-cli-args fuzz-reply)
read -r -a extra <<<"${REDLOCK_FUZZ_ARGS:-}"

if ! command -v clang >/dev/null; then
    echo "$PROG: clang not found: install it (apt-get install clang) to build the harnesses" >&2
    exit 2
fi

# --- configure and build ------------------------------------------------------

opts=(-Dfuzz=true -Dtests=false "-Db_sanitize=address,undefined" -Db_lundef=false)
compiler_id() {
    meson introspect --compilers "$dir" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["host"]["c"]["id"])' 2>/dev/null
}
if [[ -f $dir/meson-private/coredata.dat && $(compiler_id) == clang ]]; then
    meson setup --reconfigure "$dir" "${opts[@]}" >/dev/null ||
        CC=clang meson setup --wipe "$dir" "${opts[@]}" >/dev/null
elif [[ -e $dir ]]; then
    # Another compiler (or a broken dir): meson cannot switch compilers.
    CC=clang meson setup --wipe "$dir" "${opts[@]}" >/dev/null
else
    CC=clang meson setup "$dir" "${opts[@]}" >/dev/null
fi
targets=()
for h in "${harnesses[@]}"; do
    targets+=("fuzz/$h")
done
if ! ninja -C "$dir" "${targets[@]}" >"$dir/fuzz-build.log" 2>&1; then
    cat "$dir/fuzz-build.log" >&2
    echo "$PROG: building the harnesses failed (log above)" >&2
    exit 2
fi

# --- run ------------------------------------------------------------------------

mkdir -p "$dir/fuzz-logs"
pids=()
for h in "${harnesses[@]}"; do
    mkdir -p "$dir/corpus/$h" "$dir/artifacts/$h"
    dict=()
    [[ -f fuzz/$h.dict ]] && dict=(-dict="fuzz/$h.dict")
    "$dir/fuzz/$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/$h/" "${dict[@]}" \
        "$dir/corpus/$h" "${extra[@]}" "fuzz/corpus/$h" >"$dir/fuzz-logs/$h.log" 2>&1 &
    pids+=($!)
done
echo "$PROG: running ${harnesses[*]} for $secs s each, side by side (logs: $dir/fuzz-logs/)"

failed=0
for k in "${!harnesses[@]}"; do
    h=${harnesses[$k]}
    log=$dir/fuzz-logs/$h.log
    rc=0
    wait "${pids[$k]}" || rc=$?
    stat() { sed -n "s/^stat::$1:[[:space:]]*//p" "$log" | tail -n 1; }
    # A crash while loading the corpus comes before any of these lines.
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
    corp=$(grep -o 'corp: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
    summary="$(stat number_of_executed_units) runs, $(stat average_exec_per_sec) exec/s, cov ${cov:-?}, corpus ${corp:-?}"
    unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if ((rc == 0)) && [[ -z $unit ]]; then
        echo "$PROG: $h: ok ($summary)"
        continue
    fi
    failed=1
    echo "$PROG: $h: FAILED (libFuzzer status $rc; $summary)"
    echo "----- $h: end of $log -----"
    grep -v -e '^#[0-9]' -e '^INFO:' -e '^stat::' "$log" | tail -n 40 || true
    echo "-----"
    if [[ -n $unit ]]; then
        echo "$PROG: $h: crashing input: $unit"
        echo "$PROG: $h: replay: $dir/fuzz/$h $unit"
    fi
done
exit "$failed"
