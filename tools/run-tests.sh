#!/usr/bin/env bash
# run-tests.sh - the whole test suite, as the README's test command runs it.
#
#   tools/run-tests.sh [--quick] [--only STAGE[,STAGE...]]
#
# Installs what is missing (tools/deps.sh), then runs these stages, each
# build with -Dwerror=true:
#   format     (none)            -                clang-format --dry-run
#                                                 -Werror: every .c and .h of
#                                                 the C dirs follows
#                                                 .clang-format (seconds);
#                                                 tools/check-map.sh: the
#                                                 map (docs/map.md) names
#                                                 every source file
#                                                 tools/check-layers.sh:
#                                                 redlock/'s includes run
#                                                 down its layers;
#                                                 tools/check-functions.sh:
#                                                 no function of redlock/
#                                                 over 60 lines
#   plain      build/            hiredis 0.14.1   every suite; in a run
#                                                 with asan, only what asan
#                                                 leaves out: the CLI's
#                                                 suites, the netns tests
#   abi        build/ again      hiredis 0.14.1   tools/abi-check.sh: the
#                                                 library's ABI against
#                                                 abi/libredlock.so.1.abi
#                                                 (abidiff; additions pass,
#                                                 removals and changes fail;
#                                                 about a second)
#   asan       build-asan/       hiredis 0.14.1   every suite but the CLI's
#                                                 and the netns tests (plain
#                                                 and hiredis12 run them),
#                                                 with memory errors, leaks
#                                                 and undefined behaviour
#                                                 fatal
#   tsan       build-tsan/       hiredis 0.14.1   suite 'threads' under
#                                                 ThreadSanitizer
#   model      (none)            -                model/check.sh: the SPIN
#                                                 model's checks and its
#                                                 broken switches (docs/model.md),
#                                                 run in the background from
#                                                 the start at nice 19 and
#                                                 collected last
#   fuzz       build-fuzz/       hiredis 0.14.1   tools/fuzz.sh, briefly
#   packages   (a scratch copy)  hiredis 1.2, TLS tools/package.sh builds the
#                                (vendored)       Debian packages (lintian
#                                                 errors fail it), and
#                                                 tests/check-packages.sh
#                                                 checks them
#   hiredis12  build-hiredis12/  hiredis 1.2, TLS every suite, ASan+UBSan,
#              build-fuzz-hiredis12/              against Valkey 8.0 masters;
#                                                 and tools/fuzz.sh again
#   matrix     build/ again      hiredis 0.14.1   the tests that depend most
#                                                 on the server (MATRIX_TESTS)
#                                                 against Redis 8.0, 8.6 and
#                                                 Valkey 8.1, 9.1, side by
#                                                 side; the servers are built
#                                                 in the background from the
#                                                 start
#   mutate     build-mutate/     hiredis 0.14.1   tools/mutate.sh --share K/2:
#              (a copy of the                     half of the safety mutants
#              tree and its                       (K: the day of the year
#              build)                             mod 2), each of which a
#                                                 test must kill; on ports
#                                                 of its own (offset +
#                                                 12000); about 80 s
# --quick runs the plain stage only; --only runs the stages named.
# hiredis 1.2 and the servers come from tools/deps.sh (local dirs under
# .deps/; the system's packages stay as they are).
#
# Every cluster test starts and stops its own masters (tests/with-cluster.sh)
# in a temp dir under one dir of ours; on exit, any server still running
# there is killed, whatever happened. The tests that use network namespaces
# or fixed ports (faults-net-*, sim-regions) run one checkout at a time, under
# flock /tmp/redlock-netns.lock. The last line printed is "N passed, N
# failed" over all stages; the exit status is non-zero if anything failed (a
# build that does not compile counts as one failure).
#
# Environment: REDLOCK_BUILD_PREFIX (default "build") names the build dirs;
# REDLOCK_TEST_PORT_OFFSET shifts every test cluster's ports (see
# tests/with-cluster.sh), for running beside another checkout;
# REDLOCK_FUZZ_SECONDS (default 20) is each fuzz stage's run per harness;
# REDLOCK_MUTATE_SHARE (default K/2, K the day of the year mod 2) is the
# mutate stage's share of the mutants ("0/1": all of them).
set -euo pipefail

# 1: the hiredis12 stage builds the library against hiredis 1.2 and runs
# every suite and the fuzzers there. 0 (a transport that does not build
# against 1.x) only fetches hiredis 1.2 and configures against it.
HIREDIS12_READY=1

# Time: CI allows 90 minutes; we keep a run under 45 on the 2-core machine
# (the brief). Each stage prints its own time and the last lines the
# total: those figures live in CI's log, not here. What sets the total is
# the asan and hiredis12 stages' tests, which mostly wait for ttls and
# restarts; the builds, the matrix's servers and the model run in the
# cores they leave idle (background(), below).
STAGES=(format plain abi asan tsan model fuzz packages hiredis12 matrix mutate)
# The tests that must not run beside another checkout's (fixed ports,
# network namespaces): see tests/meson.build.
NETNS_TESTS=(faults-net-partition faults-net-delay sim-regions)
# In a run with both, the tests the plain stage runs and the asan stage
# leaves out (a tests_where expression; asan runs the rest, and cli-usage):
# the CLI's suites, which hiredis12 runs under ASan, and the netns tests.
PLAIN_NOT_ASAN='"cli" in s or n in netns'

PROG="run-tests.sh"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$ROOT/tools/run-tests.sh"
}

declare -A want=()
only=''
while (($#)); do
    case $1 in
    --quick) only=plain ;;
    --only)
        (($# >= 2)) || { echo "$PROG: --only needs a list of stages (see --help)" >&2; exit 2; }
        only=$2
        shift
        ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$PROG: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ -n $only ]]; then
    IFS=, read -r -a picked <<<"$only"
    for s in "${picked[@]}"; do
        [[ " ${STAGES[*]} " == *" $s "* ]] ||
            { echo "$PROG: unknown stage '$s' (stages: ${STAGES[*]})" >&2; exit 2; }
        want[$s]=1
    done
else
    for s in "${STAGES[@]}"; do want[$s]=1; done
fi
wanted() { [[ -n ${want[$1]:-} ]]; }

prefix=${REDLOCK_BUILD_PREFIX:-build}
fuzz_secs=${REDLOCK_FUZZ_SECONDS:-20}
passed=0
failed=0
# What failed, one line each, printed again at the end: CI keeps only the
# tail of a long log, and "1 failed" alone does not say which.
failures=()
# why: the first lines that say why a test failed (its check, its abort,
# its sanitizer), a few per stage: CI shows only the last lines of a run.
why=()
# The name of meson's own log of a run, in DIR/meson-logs/: runs side by
# side on one build dir (the matrix stage) need one each.
LOGBASE=testlog
started=$SECONDS

say() {
    printf '\n%s: %s\n' "$PROG" "$*"
}

tools/deps.sh
# promtool, for test-metrics.c's `promtool check metrics`: Debian 12's
# prometheus package unpacked under .deps (never installed); without it
# (no mirror) that check says it skipped, and the test's own parser runs.
if [[ -z ${REDLOCK_PROMTOOL:-} ]] && pt=$(tools/deps.sh --promtool | tail -n 1) && [[ -x $pt ]]; then
    export REDLOCK_PROMTOOL=$pt
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-tests.XXXXXX")
export REDLOCK_TEST_TMPDIR=$TMP
mkdir -p "$TMP/sanitizer"

# The matrix stage's servers are built from Debian's sources (tools/deps.sh)
# in the background from the start, at nice 19: the suites before it leave
# the cores idle for much of their time (tests that wait for ttls, timeouts
# and restarts), and a build takes 30-40 s of one core's time on this
# machine. Its own process group, stopped on exit. Each server's path (or
# nothing, if its build failed) in $TMP/matrix/NAME.path.
#
# "At nice 19" needs more than nice(1): setsid starts a session, and with
# the kernel's autogroups (sched_autogroup_enabled, on here) a session is a
# scheduling group of its own that shares the CPU with ours as an equal,
# whatever its processes' nice. So a background job also sets its group's
# nice (/proc/self/autogroup). Without it the background took half the
# cores from the builds in front (two busy loops beside two: 2.96 of 6
# CPU-seconds left to ours; 5.90 with it), and the plain and ASan builds
# ran 2-3 times as long as the same builds later in the run.
#
# background VAR CMD [ARG...]: starts CMD in a session and process group of
# its own, at nice 19 in both senses, and sets VAR to its pid (the group's
# id, for kill -- -PID).
background() {
    local var=$1
    shift
    setsid nice -n 19 bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec "$@"' \
        background "$@" &
    printf -v "$var" %s "$!"
}
MATRIX=(redis-8.0:--redis80 redis-8.6:--redis8 valkey-8.1:--valkey81 valkey-9.1:--valkey9)
matrix_pid=''
if wanted matrix; then
    mkdir -p "$TMP/matrix"
    background matrix_pid bash -c '
        out=$1
        shift
        for m; do
            tools/deps.sh "${m#*:}" >"$out/${m%%:*}.path" 2>>"$out/deps.log" || true
        done' matrix-deps "$TMP/matrix" "${MATRIX[@]}"
fi

# The model's checks use CPU alone (no server, no port, no clock), minutes
# of one core: also in the background from the start (above), in their own
# process group; the model stage collects their output.
model_pid=''
if wanted model; then
    background model_pid model/check.sh >"$TMP/model.log" 2>&1
fi

# Kill every server whose pidfile lies under $TMP and whose cwd is there too
# (a recycled pid is someone else's process). Normally there is none:
# with-cluster.sh stops its masters. This is for a test runner that
# SIGKILLed with-cluster.sh before it could.
reap_leftovers() {
    local pidfile pid cwd n=0
    while IFS= read -r -d '' pidfile; do
        pid=$(<"$pidfile") || continue
        [[ $pid =~ ^[0-9]+$ ]] || continue
        cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
        [[ $cwd == "$TMP"/* ]] || continue
        case $(cat "/proc/$pid/comm" 2>/dev/null) in
        redis-server* | valkey-server*) ;;
        *) continue ;;
        esac
        kill -CONT "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null && n=$((n + 1))
    done < <(find "$TMP" -name redis.pid -print0 2>/dev/null)
    if ((n)); then
        echo "$PROG: killed $n leftover server process(es) under $TMP" >&2
    fi
}

# shellcheck disable=SC2317  # invoked by the traps
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -z $matrix_pid ]] || kill -TERM -- "-$matrix_pid" 2>/dev/null || true
    [[ -z $model_pid ]] || kill -TERM -- "-$model_pid" 2>/dev/null || true
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

# configure DIR [meson options...]: set up DIR, or bring its options up to
# date. -Dwerror=true always: distributions build without it (it is not a
# default), we build with it.
configure() {
    local dir=$1
    shift
    set -- -Dwerror=true "$@"
    if [[ -f $dir/meson-private/coredata.dat ]]; then
        meson setup --reconfigure "$dir" "$@" ||
            meson setup --wipe "$dir" "$@" || return 1
    else
        meson setup "$dir" "$@" || return 1
    fi
}

configure_and_build() {
    local dir=$1
    shift
    say "$dir: configure and build ($*)"
    configure "$dir" "$@" && nice -n 10 ninja -C "$dir"
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

# tap_failures LOG: one line per failed check in meson's log LOG, as
# criterion's TAP writes them: "not ok - SUITE::TEST ..." and, in its YAML
# block, "  - FILE.c:LINE: |+" followed by the message ("Assertion failed:
# ..."), or "not ok - SUITE::TEST unexpected signal after FILE.c:LINE"; and
# the helpers' own "tc: ..." lines. A test that ends with a nonzero status
# is ERROR to meson 1.0 even when a check failed, so ERROR alone says little.
tap_failures() {
    awk '
        /^not ok - / { test = $4; if ($0 ~ /unexpected signal|timed out|crash/) print; next }
        /^  - [A-Za-z0-9_.\/-]+\.c:[0-9]+: / { at = $2; want = 1; next }
        want { sub(/^ +/, ""); print test " " at " " $0; want = 0; next }
        /^tc: / { print }
    ' "$1" 2>/dev/null
}

# run_tests LABEL DIR [meson test options and test names...]: run, print,
# add up the counts.
run_tests() {
    local label=$1 dir=$2 log rc ok xfail fail xpass timeout nreports t0=$SECONDS
    shift 2
    log=$TMP/$label.log
    say "$label: meson test -C $dir $*"
    {
        rc=0
        meson test -C "$dir" --no-rebuild --print-errorlogs --logbase "$LOGBASE" "$@" || rc=$?
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
    echo "$PROG: $label: $ok passed, $fail failed ($((SECONDS - t0)) s)"
    if ((fail)); then
        local t
        while IFS= read -r t; do
            failures+=("$label: $t")
        done < <(sed -n 's/^ *[0-9]*\/[0-9]* \(.*[^ ]\) *\(FAIL\|TIMEOUT\|UNEXPECTEDPASS\|ERROR\) .*/\1 \2/p' "$log" |
            awk '!seen[$0]++')
        ((nreports)) && failures+=("$label: $nreports sanitizer report(s)")
        # A TAP test's checks are on its stdout, which only meson's own log
        # keeps; a sanitizer's report and the exit status are on the console.
        while IFS= read -r t; do
            why+=("$label: ${t:0:240}")
        done < <({
            tap_failures "$dir/meson-logs/$LOGBASE.txt"
            grep -E 'exited with status code|^(==[0-9]+==)?ERROR: |runtime error: |WARNING: ThreadSanitizer' "$log"
        } | head -n 6)
        ((rc != 0)) && [[ -z $(sed -n '/ \(FAIL\|TIMEOUT\) /p' "$log") ]] &&
            failures+=("$label: meson test status $rc")
    fi
    passed=$((passed + ok))
    failed=$((failed + fail))
}

stage_failed() {
    say "$1 (counted as one failure)"
    failures+=("$1")
    failed=$((failed + 1))
}

# tests_where DIR EXPR: names of the tests in DIR for which the Python
# expression EXPR holds, over `s` (the test's suites) and `n` (its name).
tests_where() {
    meson introspect --tests "$1" | python3 -c '
import json, sys
expr, netns = sys.argv[1], set(sys.argv[2:])
for t in json.load(sys.stdin):
    s = {x.split(":")[-1] for x in t["suite"]}
    n = t["name"]
    if eval(expr, {"s": s, "n": n, "netns": netns}):
        print(n)
' "$2" "${NETNS_TESTS[@]}"
}

# run_suite LABEL DIR EXPR [meson test options...]: the tests EXPR selects
# (see tests_where), those in NETNS_TESTS after the others and under the
# lock that keeps them to one checkout at a time.
run_suite() {
    local label=$1 dir=$2 expr=$3
    shift 3
    local -a rest netns
    mapfile -t rest < <(tests_where "$dir" "($expr) and n not in netns")
    mapfile -t netns < <(tests_where "$dir" "($expr) and n in netns")
    if ((${#rest[@]})); then
        run_tests "$label" "$dir" "$@" "${rest[@]}"
    fi
    if ((${#netns[@]})); then
        say "$label: waiting for /tmp/redlock-netns.lock (${netns[*]})"
        exec 8>>/tmp/redlock-netns.lock
        flock 8
        run_tests "$label-netns" "$dir" "$@" "${netns[@]}"
        flock -u 8
        exec 8>&-
    fi
}

# run_fuzz LABEL BUILDDIR [meson options...]: tools/fuzz.sh in BUILDDIR.
# The dir is configured here first, with -Dwerror=true and the options
# given: fuzz.sh reconfigures it with its own options only, which keeps ours.
run_fuzz() {
    local label=$1 dir=$2 t0=$SECONDS
    shift 2
    say "$label: tools/fuzz.sh $fuzz_secs in $dir"
    if ! command -v clang >/dev/null; then
        stage_failed "$label: clang not found"
        return
    fi
    if [[ -e $dir && ! -f $dir/meson-private/coredata.dat ]]; then
        rm -rf -- "$dir"
    fi
    if [[ -f $dir/meson-private/coredata.dat ]]; then
        configure "$dir" "$@" >/dev/null || { stage_failed "$label: meson setup failed"; return; }
    else
        CC=clang configure "$dir" -Dfuzz=true -Dtests=disabled -Db_sanitize=address,undefined \
            -Db_lundef=false "$@" >/dev/null || { stage_failed "$label: meson setup failed"; return; }
    fi
    local rc=0 nreports=0
    REDLOCK_FUZZ_BUILD=$dir tools/fuzz.sh "$fuzz_secs" || rc=$?
    # A harness that crashed left its sanitizer report in $SAN: print it
    # here, under this stage, or the next stage would count it as its own.
    sanitizer_reports "$label" || nreports=$?
    if ((rc == 0 && nreports == 0)); then
        passed=$((passed + 1))
        echo "$PROG: $label: 1 passed, 0 failed ($((SECONDS - t0)) s)"
    else
        stage_failed "$label: failed (the input and any sanitizer report are printed above)"
    fi
}

# --- formatting ------------------------------------------------------------------
# The C layout is .clang-format's (README.md, "Contributing: the
# checklist"): clang-format --dry-run -Werror over every .c and .h of these
# dirs; the files that differ are named, with the command that mends them.
# One test. It settles the style with clang-format 14 (Debian 12's);
# another version may lay out a few lines differently, and says so when it
# fails.

FORMAT_DIRS=(redlock drift json cli bench tests fuzz examples)

if wanted format; then
    say "format: clang-format --dry-run -Werror over ${FORMAT_DIRS[*]}"
    t0=$SECONDS
    cf=$(command -v clang-format-14 || command -v clang-format || true)
    if [[ -z $cf ]]; then
        stage_failed "format: clang-format not found (tools/deps.sh installs it)"
    else
        mapfile -t files < <(find "${FORMAT_DIRS[@]}" -type f -name '*.[ch]' | LC_ALL=C sort)
        rc=0
        "$cf" --dry-run -Werror --ferror-limit=1 "${files[@]}" >"$TMP/format.log" 2>&1 || rc=$?
        mapfile -t bad < <(sed -n 's/^\(.*\):[0-9][0-9]*:[0-9][0-9]*: error: code should be clang-formatted.*/\1/p' \
            "$TMP/format.log" | uniq)
        if ((rc == 0)); then
            passed=$((passed + 1))
            echo "$PROG: format: 1 passed, 0 failed (${#files[@]} files, $((SECONDS - t0)) s)"
        elif ((${#bad[@]} == 0)); then
            cat -- "$TMP/format.log"
            stage_failed "format: $cf failed (above)"
        else
            echo "$PROG: format: these files differ from what .clang-format makes of them:"
            printf '    %s\n' "${bad[@]}"
            if ((${#bad[@]} <= 10)); then
                echo "$PROG: format: mend them with: clang-format -i ${bad[*]}"
            else
                echo "$PROG: format: mend them with: find ${FORMAT_DIRS[*]} -name '*.[ch]' -exec clang-format -i {} +"
            fi
            ver=$("$cf" --version | sed -n 's/.* version \([0-9][0-9]*\)\..*/\1/p')
            if [[ $ver != 14 ]]; then
                echo "$PROG: format: this is clang-format ${ver:-of unknown version}; the style is settled with 14 (Debian 12), whose layout may differ in places"
            fi
            stage_failed "format: ${#bad[@]} of ${#files[@]} files not formatted"
        fi
    fi
fi

# The house's own checks, one test each, no build, no server:
#  - check-map.sh: docs/map.md names every .c and .h of redlock/, drift/,
#    cli/ and bench/;
#  - check-layers.sh: every include of redlock/ runs down its layers (the
#    order is written once, in the script; docs/map.md, "Layers");
#  - check-functions.sh: no function of redlock/ over 60 lines (issue 30).
HOUSE_CHECKS=(
    "check-map.sh|docs/map.md does not name every source file"
    "check-layers.sh|an include of redlock/ runs up its layers"
    "check-functions.sh|a function of redlock/ is over 60 lines"
)
if wanted format; then
    for chk in "${HOUSE_CHECKS[@]}"; do
        say "format: tools/${chk%%|*}"
        if "tools/${chk%%|*}"; then
            passed=$((passed + 1))
        else
            stage_failed "format: ${chk#*|} (above)"
        fi
    done
fi

# --- plain ---------------------------------------------------------------------
# The plain build is also what the matrix stage runs, what the tsan stage
# asks which tests exist, and what the abi stage compares (it has -g).

plain_ok=0
if wanted plain || wanted abi || wanted tsan || wanted matrix; then
    if configure_and_build "$prefix" -Db_sanitize=none -Dtests=enabled; then
        plain_ok=1
    else
        stage_failed "$prefix: build failed"
    fi
fi
# With the asan stage in the same run, the plain stage runs what that stage
# leaves out (the CLI's suites and the netns tests): the rest would run
# twice on the same hiredis and server, once without the sanitizers' checks,
# and its fault tests (about 210 s, one at a time) twice. Alone (--quick,
# --only plain), it runs every suite.
if wanted plain && ((plain_ok)); then
    if wanted asan; then
        run_suite plain "$prefix" "$PLAIN_NOT_ASAN"
    else
        run_suite plain "$prefix" True
    fi
fi

# --- the ABI ---------------------------------------------------------------------
# tools/abi-check.sh over the plain build's library: abidiff against the
# committed baseline (abi/libredlock.so.N.abi), its report printed. One test.

if wanted abi; then
    if ((!plain_ok)); then
        say "abi: skipped (the plain build failed)"
    else
        say "abi: tools/abi-check.sh $prefix"
        t0=$SECONDS
        if tools/abi-check.sh "$prefix"; then
            passed=$((passed + 1))
            echo "$PROG: abi: 1 passed, 0 failed ($((SECONDS - t0)) s)"
        else
            stage_failed "abi: the ABI differs from the baseline (above), or abi-check.sh could not compare"
        fi
    fi
fi

# --- address + undefined behaviour ------------------------------------------

if wanted asan; then
    if configure_and_build "$prefix-asan" -Db_sanitize=address,undefined -Db_lundef=false -Dtests=enabled; then
        # The netns tests run under ASan in the hiredis12 stage (and plain
        # here): once under ASan is enough, and it keeps CI within 25 min.
        # So do the CLI's suites (the CLI's code is the same over either
        # hiredis; about 48 s of test time here), but cli-usage, which
        # hiredis12 leaves out.
        run_suite asan "$prefix-asan" "not ($PLAIN_NOT_ASAN) or n == \"cli-usage\"" --timeout-multiplier 3
    else
        stage_failed "$prefix-asan: build failed"
    fi
fi

# --- threads -----------------------------------------------------------------

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

if wanted tsan; then
    if ((!plain_ok)); then
        say "ThreadSanitizer: skipped (the plain build failed)"
    else
        mapfile -t all_threads < <(tests_where "$prefix" '"threads" in s')
        if ((${#all_threads[@]} == 0)); then
            say "ThreadSanitizer: suite 'threads' has no tests yet: skipping $prefix-tsan"
        else
            tsan_rc=0
            tsan_probe || tsan_rc=$?
            if ((tsan_rc != 0)); then
                stage_failed "ThreadSanitizer: cannot run even a trivial program on this machine"
            else
                if ((tsan_criterion)); then
                    run=("${all_threads[@]}")
                else
                    mapfile -t run < <(tests_where "$prefix" '"threads" in s and "plain" in s')
                    for t in "${all_threads[@]}"; do
                        [[ " ${run[*]} " == *" $t "* ]] ||
                            say "ThreadSanitizer: not running '$t': criterion's runner cannot start under TSan (Snaipe/Criterion#274); give it 'runner': 'plain' in tests/meson.build"
                    done
                fi
                if ((${#run[@]} == 0)); then
                    say "ThreadSanitizer: no test in suite 'threads' can run under TSan: skipping $prefix-tsan"
                elif configure_and_build "$prefix-tsan" -Db_sanitize=thread -Db_lundef=false -Dtests=enabled; then
                    wrapper=()
                    if ((${#tsan_wrapper[@]})); then
                        wrapper=(--wrapper "${tsan_wrapper[*]}")
                        say "ThreadSanitizer: running with ASLR off (${tsan_wrapper[*]})"
                    fi
                    run_tests tsan "$prefix-tsan" --timeout-multiplier 5 "${wrapper[@]}" "${run[@]}"
                else
                    stage_failed "$prefix-tsan: build failed"
                fi
            fi
        fi
    fi
fi

# --- fuzzing -------------------------------------------------------------------
# A short bounded run of each libFuzzer harness over its corpus
# (tools/fuzz.sh; longer campaigns: tools/fuzz.sh 600).

if wanted fuzz; then
    run_fuzz fuzz "${REDLOCK_FUZZ_BUILD:-build-fuzz}"
fi

# --- Debian packages -------------------------------------------------------------
# Built from a copy of the tree into $TMP (so removed on exit); each check of
# check-packages.sh counts as a test.

if wanted packages; then
    say "packages: tools/package.sh, then tests/check-packages.sh"
    t0=$SECONDS
    if ! tools/package.sh "$TMP/deb"; then
        stage_failed "packages: tools/package.sh failed (above)"
    else
        tests/check-packages.sh "$TMP/deb" | tee "$TMP/packages.log" || true
        line=$(sed -n 's/^check-packages\.sh: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$TMP/packages.log")
        if [[ -z $line ]]; then
            stage_failed "packages: tests/check-packages.sh ended without its count"
        else
            read -r ok fail <<<"$line"
            passed=$((passed + ok))
            failed=$((failed + fail))
            echo "$PROG: packages: $ok passed, $fail failed ($((SECONDS - t0)) s)"
            while IFS= read -r t; do
                failures+=("packages: $t")
            done < <(sed -n 's/^not ok [0-9]* - //p' "$TMP/packages.log")
        fi
    fi
fi

# --- hiredis 1.2 -----------------------------------------------------------------
# What Debian 13, Ubuntu 24.04, Fedora and Homebrew ship, with TLS. ASan and
# UBSan on, since the point is that every guard holds on this version too.
# Against Valkey 8.0 masters (bookworm-backports' binary): the whole suite
# runs on a second server here at no cost of its own (issue 21's matrix:
# the whole suite on Redis 7.0 and Valkey 8.0, a subset on the rest). The
# CLI's usage test is left out: it never reaches a server and runs in the
# plain and asan stages.

if wanted hiredis12; then
    if ! h12=$(tools/deps.sh --hiredis12); then
        stage_failed "hiredis12: tools/deps.sh --hiredis12 failed (above)"
    elif ! valkey8=$(tools/deps.sh --valkey); then
        stage_failed "hiredis12: tools/deps.sh --valkey failed (above)"
    else
        h12_opts=("-Dpkg_config_path=$h12/lib/pkgconfig" -Dtls=enabled)
        dir=$prefix-hiredis12
        if ((!HIREDIS12_READY)); then
            say "$dir: configure only (HIREDIS12_READY=0: the library does not build against hiredis 1.2 yet)"
            if configure "$dir" "${h12_opts[@]}" -Db_sanitize=address,undefined -Db_lundef=false -Dtests=enabled; then
                passed=$((passed + 1))
            else
                stage_failed "$dir: meson setup failed"
            fi
        else
            if configure_and_build "$dir" "${h12_opts[@]}" -Db_sanitize=address,undefined -Db_lundef=false -Dtests=enabled; then
                REDLOCK_SERVER=$valkey8 run_suite hiredis12 "$dir" 'n != "cli-usage"' --timeout-multiplier 3
            else
                stage_failed "$dir: build failed"
            fi
            run_fuzz fuzz-hiredis12 "${REDLOCK_FUZZ_BUILD:-build-fuzz}-hiredis12" "${h12_opts[@]}"
        fi
    fi
fi

# --- The server matrix -----------------------------------------------------------
# The plain build's tests that depend most on what the server does (the
# commands the fast path, the native release, the scripts and the
# guard send; waiters that mark a holder's key and the hand-off that then
# follows a release without Lua; restarts, flushes and kills) against Redis
# 8.0 and 8.6 and
# Valkey 8.1 and 9.1, built in the background since the start (above). The
# whole suite runs on Redis 7.0 (plain, asan, tsan) and on Valkey 8.0
# (hiredis12); this subset on these four, side by side, each on ports of
# its own: they spend most of their time waiting, for ttls and restarts.

MATRIX_TESTS=(acquire release extend noscript fastpath native native-lying memory fence queue
    wait contention faults-kill faults-process-down faults-process-forget)

if wanted matrix; then
    say "matrix: waiting for the servers' builds (started at the beginning, at nice 19)"
    t0=$SECONDS
    wait "$matrix_pid" || true
    matrix_pid=''
    sed 's/^/  /' "$TMP/matrix/deps.log"
    say "matrix: builds done (waited $((SECONDS - t0)) s)"
    if ((!plain_ok)); then
        say "matrix: skipped (the plain build failed)"
    else
        expr="n in {$(printf '"%s",' "${MATRIX_TESTS[@]}")}"
        k=0
        pids=()
        for m in "${MATRIX[@]}"; do
            name=${m%%:*}
            server=$(cat "$TMP/matrix/$name.path" 2>/dev/null) || server=''
            if [[ -z $server ]]; then
                stage_failed "matrix: $name: tools/deps.sh ${m#*:} failed (its lines above)"
                continue
            fi
            k=$((k + 1))
            # In a subshell: its counts come back through a file.
            (
                passed=0 failed=0 failures=() why=()
                LOGBASE=matrix-$name
                export REDLOCK_SERVER=$server
                export REDLOCK_TEST_PORT_OFFSET=$((${REDLOCK_TEST_PORT_OFFSET:-0} + 13000 + 1000 * k))
                run_suite "matrix-$name" "$prefix" "$expr"
                declare -p passed failed failures why >"$TMP/matrix/$name.counts"
            ) >"$TMP/matrix/$name.out" 2>&1 &
            pids+=($!)
        done
        ((${#pids[@]} == 0)) || wait "${pids[@]}" || true
        for m in "${MATRIX[@]}"; do
            name=${m%%:*}
            [[ -f $TMP/matrix/$name.out ]] || continue
            cat "$TMP/matrix/$name.out"
            if [[ ! -f $TMP/matrix/$name.counts ]]; then
                stage_failed "matrix: $name: the run ended without its counts"
                continue
            fi
            sum_passed=$passed sum_failed=$failed
            sum_failures=("${failures[@]}") sum_why=("${why[@]}")
            # shellcheck disable=SC1090  # written just above
            source "$TMP/matrix/$name.counts"
            passed=$((sum_passed + passed))
            failed=$((sum_failed + failed))
            failures=("${sum_failures[@]}" "${failures[@]}")
            why=("${sum_why[@]}" "${why[@]}")
        done
    fi
fi

# --- safety mutants ----------------------------------------------------------------
# tools/mutate.sh (issue 33): small edits of the safety-critical code and
# scripts, each applied alone to a copy of the tree ($prefix-mutate/) and
# built, then the tests that must notice run until one fails; a survivor,
# or a mutant whose snippet no longer applies, fails. A share of them per
# run (MUTATE_SHARES: the day of the year picks which), so that all run
# within that many days of CI; --all took 132 s here with a fresh build, a
# half about 80 s. Each mutant counts as a test. Its own ports: the run's
# offset + 12000 (the matrix's four take + 14000 to + 17000), though it
# runs alone, after the rest.

MUTATE_SHARES=2

if wanted mutate; then
    share=${REDLOCK_MUTATE_SHARE:-$((10#$(date +%j) % MUTATE_SHARES))/$MUTATE_SHARES}
    say "mutate: tools/mutate.sh --share $share in $prefix-mutate"
    t0=$SECONDS
    REDLOCK_MUTATE_DIR=$prefix-mutate TMPDIR=$TMP \
        REDLOCK_TEST_PORT_OFFSET=$((${REDLOCK_TEST_PORT_OFFSET:-0} + 12000)) \
        tools/mutate.sh --share "$share" 2>&1 | tee "$TMP/mutate.log" || true
    line=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$TMP/mutate.log" | tail -1)
    if [[ -z $line ]]; then
        stage_failed "mutate: tools/mutate.sh ended without its count (above)"
    else
        read -r ok fail <<<"$line"
        passed=$((passed + ok))
        failed=$((failed + fail))
        echo "$PROG: mutate: $ok passed, $fail failed ($((SECONDS - t0)) s)"
        while IFS= read -r t; do
            failures+=("mutate: ${t:0:240}")
        done < <(sed -n 's/^mutate\.sh: \([^ ]*: \(survived\|error\|no longer applies\).*\)/\1/p' \
            "$TMP/mutate.log")
    fi
fi

# --- the protocol model ---------------------------------------------------------
# model/check.sh: each check and each broken switch counts as a test.
# Collected last: at nice 19 it runs on what the stages leave idle (their
# tests mostly wait for ttls and restarts), about 25 min of it here. Waited
# for right after the asan stage, it held CI 10 min with the cores idle
# but for it (CI's run at 6ddc425: 2660 s, "waited 612 s").

if wanted model; then
    say "model: model/check.sh (started at the beginning, at nice 19)"
    t0=$SECONDS
    wait "$model_pid" || true
    model_pid=''
    cat "$TMP/model.log"
    line=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$TMP/model.log" | tail -1)
    if [[ -z $line ]]; then
        stage_failed "model: model/check.sh ended without its count"
    else
        read -r ok fail <<<"$line"
        passed=$((passed + ok))
        failed=$((failed + fail))
        echo "$PROG: model: $ok passed, $fail failed (waited $((SECONDS - t0)) s)"
        ((fail)) && failures+=("model: $fail check(s), see model/check.sh's output above")
    fi
fi

reap_leftovers
say "done in $((SECONDS - started)) s"
for f in "${why[@]}"; do
    echo "WHY     $f"
done
for f in "${failures[@]}"; do
    echo "FAILED  $f"
done
echo "$passed passed, $failed failed"
((failed == 0))
