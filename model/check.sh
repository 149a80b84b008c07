#!/usr/bin/env bash
# check.sh - check the protocol model (redlock.pml) with SPIN.
#
#   model/check.sh                 every check, then every broken switch
#   model/check.sh --list-broken   the known-mistake switches, one a line
#   model/check.sh --broken NAME   that mistake back in: must find a
#                                  counterexample (exit 1) and print its trail
#   model/check.sh --deep          larger bounds, exhaustive (a person with time)
#
# Each check: spin -a with the check's -D flags, gcc -O2 pan.c, ./pan. The
# normal run counts each check that finds no violation, and each broken
# switch that finds its counterexample, as passed. The last line is
# "N passed, N failed"; the exit status is non-zero if anything failed.
# Bounds, state counts and times: NOTES.md §13.
set -uo pipefail

PROG="check.sh"
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
MODEL=$HERE/redlock.pml
WORK=$(mktemp -d "${TMPDIR:-/tmp}/redlock-model.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# name | spin -D flags | gcc flags | pan flags. Safety runs are a bitstate
# (supertrace) search with a 2^24-bit table: a partial search, whose
# counterexamples are real but whose silence is not a proof (§13).
# fences: fenced acquires (never the fast path) with the write-back, one
# fault of any kind: a holder's fence is larger than every fence granted
# before its attempt started, unless a master lost its counter (NOTES §5).
# The progress checks (LIVE) are exhaustive: one master down, client 1 may
# crash once (anywhere, or never), no other fault; each connection its own
# process (so that "delivered eventually" is weak fairness), a tick only
# when nothing else can move, an attempt's node timeout one tick.
# live-stuck: a waiter sees a holder within STUCK_MAX ticks (6 is the
# least that passes, 5 without the crash: NOTES §13), and a release serves
# the waiter queued on every live master before its own next grant;
# live-progress: LTL, every waiting client eventually holds or crashed.
CHECKS=(
    "safety|-DFAULT_KIND=9|-DSAFETY -DBITSTATE|-w24 -m100000"
    "fences|-DFENCED -DFAULT_KIND=9 -DROUNDS1=1|-DSAFETY -DBITSTATE|-w24 -m100000"
    "live-stuck|-DLIVE -DCRASH -DSTUCK_MAX=6|-O0 -w -DSAFETY|-m300000"
    "live-progress|-DLIVE -DCRASH -DLTL_PROGRESS -DSTUCK_MAX=255|-O0 -w -DNFAIR=3|-a -f -m300000"
)
DEEP=(
    "safety-full|-DFAULT_KIND=9|-DSAFETY -DCOLLAPSE|-m200000"
    "safety-2faults|-DFAULTS=2 -DEXTS=1 -DWAITQ|-DSAFETY -DBITSTATE|-w30 -m200000"
    "safety-fenced|-DFENCED -DROUNDS0=2 -DFAULT_KIND=2|-DSAFETY -DBITSTATE|-w28 -m200000"
    "safety-5|-DNM=5 -DFAULT_KIND=9|-w -DSAFETY -DBITSTATE|-w26 -m200000"
)
# name | spin -D flags | gcc flags | pan flags: each must find a violation.
BROKEN=(
    "guard-off|-DBROKEN_GUARD_OFF -DFAULT_KIND=0 -DROUNDS1=1|-O0 -w -DSAFETY -DBFS|-m100000"
    "trust-snapshot|-DBROKEN_TRUST_SNAPSHOT -DFAULT_KIND=1 -DROUNDS1=1|-O0 -w -DSAFETY -DBFS|-m100000"
    "no-drift|-DBROKEN_NO_DRIFT -DFAULTS=0 -DROUNDS1=1|-O0 -w -DSAFETY -DBFS|-m100000"
    "fast-unchecked|-DBROKEN_FAST_UNCHECKED -DFAULT_KIND=3 -DROUNDS1=1|-O0 -w -DSAFETY -DBFS|-m100000"
    "move-trusted|-DBROKEN_MOVE_TRUSTED -DFAULT_KIND=5 -DROUNDS1=1|-O0 -w -DSAFETY -DBFS|-m100000"
    "cleanup-frees|-DLIVE -DCRASH -DBROKEN_CLEANUP_FREES -DSTUCK_MAX=6|-O0 -w -DSAFETY -DBFS|-m300000"
    "release-frees|-DLIVE -DCRASH -DBROKEN_RELEASE_FREES -DSTUCK_MAX=6|-O0 -w -DSAFETY -DBFS|-m300000"
    "dead-head-kept|-DLIVE -DCRASH -DBROKEN_DEAD_HEAD_KEPT -DSTUCK_MAX=6|-O0 -w -DSAFETY -DBFS|-m300000"
    "native-unmarked|-DLIVE -DBROKEN_NATIVE_UNMARKED -DSTUCK_MAX=6|-O0 -w -DSAFETY -DBFS|-m300000"
)

passed=0
failed=0

# run NAME SPINFLAGS GCCFLAGS PANFLAGS: prints pan's verdict; returns 0 when
# pan reports no error, 1 when it found one, 2 when it could not run.
run() {
    local name=$1 dflags=$2 cflags=$3 pflags=$4 d=$WORK/$1 t0=$SECONDS
    mkdir -p "$d" && cp "$MODEL" "$d/" || return 2
    # shellcheck disable=SC2086
    (cd "$d" && spin -a $dflags redlock.pml >spin.log 2>&1 &&
        gcc -O2 $cflags -o pan pan.c >gcc.log 2>&1) ||
        { echo "$PROG: $name: spin or gcc failed:"; tail -5 "$d"/*.log; return 2; }
    # shellcheck disable=SC2086
    (cd "$d" && ./pan $pflags >pan.log 2>&1)
    local errors states
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.log" | tail -1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$d/pan.log" | tail -1)
    echo "$PROG: $name: errors ${errors:-?}, ${states:-?} states ($((SECONDS - t0)) s)"
    [[ -n $errors ]] || return 2
    # A search cut short by its depth bound proves nothing: the model grew
    # past the check's -m, which must then grow too.
    if ((errors == 0)) && grep -q 'max search depth too small' "$d/pan.log"; then
        echo "$PROG: $name: the search hit its depth bound (raise -m)"
        return 2
    fi
    ((errors == 0)) && return 0
    return 1
}

# trail NAME SPINFLAGS: the counterexample in a few readable lines: its
# last 22 steps, after the faults (crash, restart, flush, drop) that came
# before them.
trail() {
    local d=$WORK/$1 n
    # shellcheck disable=SC2086
    (cd "$d" && spin -t $2 redlock.pml 2>&1) |
        sed -n 's/^ *MSC: /  /p; s/^spin: .*\(assertion violated.*\)/  => \1/p' >"$d/trail.txt"
    n=$(wc -l <"$d/trail.txt")
    if ((n > 22)); then
        head -n $((n - 22)) "$d/trail.txt" | grep -E 'crashes|restarts|FLUSHALL|drops|moves' | sed 's/$/ (earlier)/'
        echo "  ..."
    fi
    tail -n 22 "$d/trail.txt"
    grep -m1 -E 'assertion violated|acceptance cycle|invalid end state' "$d/pan.log" | sed 's/^/  pan: /'
}

field() { cut -d'|' -f"$2" <<<"$1"; }

# Checks run side by side, JOBS at a time (one per core: each pan is one
# process), and are reported in the order given. REDLOCK_MODEL_JOBS sets JOBS.
JOBS=${REDLOCK_MODEL_JOBS:-$(nproc 2>/dev/null || echo 1)}

# launch NAME CHECK: run it in the background (at most JOBS at once), its
# verdict in $WORK/NAME.rc and its output in $WORK/NAME.out.
launch() {
    local name=$1 c=$2
    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
    (run "$name" "$(field "$c" 2)" "$(field "$c" 3)" "$(field "$c" 4)" >"$WORK/$name.out"
     echo $? >"$WORK/$name.rc") &
}

report_clean() {
    local c rc name
    for c in "$@"; do
        name=$(field "$c" 1)
        cat "$WORK/$name.out"
        rc=$(cat "$WORK/$name.rc")
        if ((rc == 0)); then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            ((rc == 1)) && trail "$name" "$(field "$c" 2)"
        fi
    done
}

report_broken() {
    local c rc name
    for c in "$@"; do
        name=broken-$(field "$c" 1)
        cat "$WORK/$name.out"
        rc=$(cat "$WORK/$name.rc")
        if ((rc == 1)); then
            passed=$((passed + 1))
        else
            echo "$PROG: $name: found no counterexample (FAILED)"
            failed=$((failed + 1))
        fi
    done
}

expect_clean() {
    local c
    for c in "$@"; do launch "$(field "$c" 1)" "$c"; done
    wait
    report_clean "$@"
}

expect_broken() {
    local c
    for c in "$@"; do launch "broken-$(field "$c" 1)" "$c"; done
    wait
    report_broken "$@"
}

case ${1:-} in
--list-broken)
    for c in "${BROKEN[@]}"; do field "$c" 1; done
    exit 0
    ;;
--broken)
    [[ -n ${2:-} ]] || { echo "$PROG: --broken needs a name (--list-broken)" >&2; exit 2; }
    for c in "${BROKEN[@]}"; do
        [[ $(field "$c" 1) == "$2" ]] || continue
        run "$2" "$(field "$c" 2)" "$(field "$c" 3)" "$(field "$c" 4)"
        rc=$?
        ((rc == 1)) && { trail "$2" "$(field "$c" 2)"; exit 1; }
        echo "$PROG: $2: no counterexample found"
        exit 0
    done
    echo "$PROG: unknown switch '$2' (--list-broken)" >&2
    exit 2
    ;;
--deep)
    expect_clean "${DEEP[@]}"
    ;;
'' | --self-test)
    # One pool for the safety check and the known mistakes: the longest
    # (safety, started first) overlaps the others.
    for c in "${CHECKS[@]}"; do launch "$(field "$c" 1)" "$c"; done
    for c in "${BROKEN[@]}"; do launch "broken-$(field "$c" 1)" "$c"; done
    wait
    report_clean "${CHECKS[@]}"
    report_broken "${BROKEN[@]}"
    ;;
-h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
*) echo "$PROG: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
echo "$passed passed, $failed failed"
((failed == 0))
