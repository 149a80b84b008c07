#!/usr/bin/env bash
# run-tests.sh - the whole test suite, as the README's test command runs it.
#
#   tools/run-tests.sh [--quick]
#
# Installs what is missing (tools/deps.sh), then builds and tests:
#   build/        plain build: meson test, every suite
#   build-asan/   -Db_sanitize=address,undefined: every suite again, with
#                 UB, leaks and memory errors fatal
#   build-tsan/   -Db_sanitize=thread: suite 'threads' only (skipped, saying
#                 so, while that suite is empty)
# --quick stops after the plain build.
#
# Every cluster test starts and stops its own masters (tests/with-cluster.sh)
# in a temp dir under one dir of ours; on exit, any redis-server still
# running there is killed, whatever happened. The last line printed is
# "N passed, N failed" over all builds; the exit status is non-zero if
# anything failed (a build that does not compile counts as one failure).
#
# Environment: REDLOCK_BUILD_PREFIX (default "build") names the build dirs;
# REDLOCK_TEST_PORT_OFFSET shifts every test cluster's ports (see
# tests/with-cluster.sh), for running beside another checkout.
set -euo pipefail

PROG="run-tests.sh"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$ROOT/tools/run-tests.sh"
}

quick=0
for arg; do
    case $arg in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$PROG: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
    esac
done

prefix=${REDLOCK_BUILD_PREFIX:-build}
passed=0
failed=0
started=$SECONDS

say() {
    printf '\n%s: %s\n' "$PROG" "$*"
}

tools/deps.sh

TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-tests.XXXXXX")
export REDLOCK_TEST_TMPDIR=$TMP
mkdir -p "$TMP/sanitizer"

# Kill every redis-server whose pidfile lies under $TMP and whose cwd is
# there too (a recycled pid is someone else's process). Normally there is
# none: with-cluster.sh stops its masters. This is for a test runner that
# SIGKILLed with-cluster.sh before it could.
reap_leftovers() {
    local pidfile pid cwd n=0
    while IFS= read -r -d '' pidfile; do
        pid=$(<"$pidfile") || continue
        [[ $pid =~ ^[0-9]+$ ]] || continue
        cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
        [[ $cwd == "$TMP"/* ]] || continue
        [[ $(cat "/proc/$pid/comm" 2>/dev/null) == redis-server* ]] || continue
        kill -CONT "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null && n=$((n + 1))
    done < <(find "$TMP" -name redis.pid -print0 2>/dev/null)
    if ((n)); then
        echo "$PROG: killed $n leftover redis-server process(es) under $TMP" >&2
    fi
}

# shellcheck disable=SC2317  # invoked by the traps
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    reap_leftovers
    rm -rf -- "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Sanitizer reports go to files: criterion's TAP mode drops what its test
# workers write to stderr, so a report printed there would be lost.
# abort_on_error: a leak found at a worker's exit must crash it, or criterion
# (which ignores its workers' exit codes) would report the test as passed.
SAN=$TMP/sanitizer
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_leaks=1:fast_unwind_on_malloc=0:log_path=$SAN/asan"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$SAN/ubsan"
export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:log_path=$SAN/tsan"
# criterion 2.4.1's runner process leaks 96 bytes at exit in some runs
# (calloc under criterion_run_all_tests). Suppress exactly that: test workers
# are re-executed by BoxFort, so no test code runs under that frame. A
# suppression matches any frame of the stack, and libcriterion has no frame
# pointers, hence the slow unwinder: with the fast one the runner's stack
# stops at libcriterion and cannot be matched. (Suppressing libcriterion.so
# itself would hide every leak: every test runs on top of its frames.)
printf 'leak:criterion_run_all_tests\n' >"$TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$TMP/lsan.supp:print_suppressions=0"

# configure_and_build DIR [meson options...]
configure_and_build() {
    local dir=$1
    shift
    say "$dir: configure and build ($*)"
    if [[ -f $dir/meson-private/coredata.dat ]]; then
        meson setup --reconfigure "$dir" "$@" ||
            meson setup --wipe "$dir" "$@" || return 1
    else
        meson setup "$dir" "$@" || return 1
    fi
    ninja -C "$dir"
}

# Print and count the sanitizer reports written since the last call.
sanitizer_reports() {
    local label=$1 f n=0
    for f in "$SAN"/*; do
        [[ -f $f ]] || continue
        n=$((n + 1))
        echo "----- $label: sanitizer report $(basename -- "$f") -----"
        cat -- "$f"
        rm -f -- "$f"
    done
    return "$n"
}

# run_tests LABEL DIR [meson test options...]: run, print, add up the counts.
run_tests() {
    local label=$1 dir=$2 log rc ok xfail fail xpass timeout nreports
    shift 2
    log=$TMP/$label.log
    say "$dir: meson test $*"
    {
        rc=0
        meson test -C "$dir" --no-rebuild --print-errorlogs "$@" || rc=$?
        echo "$rc" >"$TMP/$label.rc"
    } 2>&1 | tee "$log"
    rc=$(<"$TMP/$label.rc")

    count() { sed -n "s/^$1:[[:space:]]*\([0-9][0-9]*\).*/\1/p" "$log" | tail -n 1; }
    ok=$(count 'Ok')
    xfail=$(count 'Expected Fail')
    fail=$(count 'Fail')
    xpass=$(count 'Unexpected Pass')
    timeout=$(count 'Timeout')
    ok=$((${ok:-0} + ${xfail:-0}))
    fail=$((${fail:-0} + ${xpass:-0} + ${timeout:-0}))
    if ((rc != 0 && fail == 0)); then
        echo "$PROG: $label: meson test failed (status $rc) without a failed test"
        fail=1
    fi
    nreports=0
    sanitizer_reports "$label" || nreports=$?
    if ((nreports)); then
        echo "$PROG: $label: $nreports sanitizer report(s) (above): counted as one failure"
        fail=$((fail + 1))
    fi
    echo "$PROG: $label: $ok passed, $fail failed"
    passed=$((passed + ok))
    failed=$((failed + fail))
}

build_failed() {
    echo "$PROG: $1: build failed (counted as one failure)"
    failed=$((failed + 1))
}

# --- plain --------------------------------------------------------------------

plain_ok=1
if configure_and_build "$prefix" -Db_sanitize=none -Dtests=true; then
    run_tests plain "$prefix"
else
    build_failed "$prefix"
    plain_ok=0
fi

# --- address + undefined behaviour ------------------------------------------

if ((!quick)); then
    if configure_and_build "$prefix-asan" -Db_sanitize=address,undefined -Db_lundef=false -Dtests=true; then
        run_tests asan "$prefix-asan" --timeout-multiplier 3
    else
        build_failed "$prefix-asan"
    fi
fi

# --- threads -----------------------------------------------------------------

# Names of the tests in suite 'threads' ($1 = 1: only those in suite 'plain'
# too, i.e. not run by criterion).
threads_tests() {
    meson introspect --tests "$1" | python3 -c '
import json, sys
plain_only = sys.argv[1] == "1"
for t in json.load(sys.stdin):
    suites = {s.split(":")[-1] for s in t["suite"]}
    if "threads" in suites and (not plain_only or "plain" in suites):
        print(t["name"])
' "$2"
}

# Does a trivial program run under TSan as is, or only with ASLR off (kernels
# with more mmap entropy than gcc 12's TSan expects)? And can criterion's
# runner start under TSan at all (not in 2.4.1: Snaipe/Criterion#274)?
tsan_probe() {
    local d=$TMP/tsan-probe
    mkdir -p "$d"
    printf '#include <pthread.h>\nstatic void *f(void *a) { return a; }\nint main(void) { pthread_t t; pthread_create(&t, 0, f, 0); return pthread_join(t, 0); }\n' >"$d/t.c"
    printf '#include <criterion/criterion.h>\nTest(probe, runs) {}\n' >"$d/c.c"
    cc -fsanitize=thread -pthread "$d/t.c" -o "$d/t" 2>/dev/null || return 2
    tsan_wrapper=()
    # In subshells that do not exec the probe, so that bash's "Aborted"
    # notice is written by the subshell, into /dev/null.
    if ! (TSAN_OPTIONS="" "$d/t"; exit $?) >/dev/null 2>&1; then
        if (setarch "$(uname -m)" -R "$d/t"; exit $?) >/dev/null 2>&1; then
            tsan_wrapper=(setarch "$(uname -m)" -R)
        else
            return 2
        fi
    fi
    tsan_criterion=0
    if cc -fsanitize=thread "$d/c.c" -lcriterion -o "$d/c" 2>/dev/null &&
        (TSAN_OPTIONS="" "${tsan_wrapper[@]}" "$d/c"; exit $?) >/dev/null 2>&1; then
        tsan_criterion=1
    fi
    return 0
}

if ((!quick)); then
    if ((!plain_ok)); then
        say "ThreadSanitizer: skipped (the plain build failed)"
    else
        mapfile -t all_threads < <(threads_tests "$prefix" 0)
        if ((${#all_threads[@]} == 0)); then
            say "ThreadSanitizer: suite 'threads' has no tests yet: skipping $prefix-tsan"
        else
            tsan_rc=0
            tsan_probe || tsan_rc=$?
            if ((tsan_rc != 0)); then
                say "ThreadSanitizer: cannot run even a trivial program on this machine (counted as one failure)"
                failed=$((failed + 1))
            else
                if ((tsan_criterion)); then
                    run=("${all_threads[@]}")
                else
                    mapfile -t run < <(threads_tests "$prefix" 1)
                    for t in "${all_threads[@]}"; do
                        [[ " ${run[*]} " == *" $t "* ]] ||
                            say "ThreadSanitizer: not running '$t': criterion's runner cannot start under TSan (Snaipe/Criterion#274); give it 'runner': 'plain' in tests/meson.build"
                    done
                fi
                if ((${#run[@]} == 0)); then
                    say "ThreadSanitizer: no test in suite 'threads' can run under TSan: skipping $prefix-tsan"
                elif configure_and_build "$prefix-tsan" -Db_sanitize=thread -Db_lundef=false -Dtests=true; then
                    wrapper=()
                    if ((${#tsan_wrapper[@]})); then
                        wrapper=(--wrapper "${tsan_wrapper[*]}")
                        say "ThreadSanitizer: running with ASLR off (${tsan_wrapper[*]})"
                    fi
                    run_tests tsan "$prefix-tsan" --timeout-multiplier 5 "${wrapper[@]}" "${run[@]}"
                else
                    build_failed "$prefix-tsan"
                fi
            fi
        fi
    fi
fi

# Fuzzing: a short bounded run of each libFuzzer harness over its corpus
# (tools/fuzz.sh; longer campaigns: tools/fuzz.sh 600).
if ((!quick)); then
    say "fuzz: tools/fuzz.sh ${REDLOCK_FUZZ_SECONDS:-20}"
    if tools/fuzz.sh "${REDLOCK_FUZZ_SECONDS:-20}"; then
        passed=$((passed + 1))
    else
        say "fuzz: failed (counted as one failure; the input is printed above)"
        failed=$((failed + 1))
    fi
fi

reap_leftovers
say "done in $((SECONDS - started)) s"
echo "$passed passed, $failed failed"
((failed == 0))
