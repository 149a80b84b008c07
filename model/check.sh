#!/usr/bin/env bash
# check.sh - check the protocol model (redlock.pml) with SPIN.
#
#   model/check.sh                 every check, then every known mistake
#                                  switched in (the CI stage)
#   model/check.sh --clean         every check only
#   model/check.sh --list          the checks: name, bounds, what each covers
#   model/check.sh --list-broken   the known-mistake switches, one a line
#   model/check.sh --broken NAME   the checks with that one mistake switched
#                                  in (the same as REDLOCK_MODEL_BROKEN=NAME)
#   REDLOCK_MODEL_BROKEN=NAME model/check.sh
#                                  the same: must exit 1 with a trail
#
# Each check is one configuration of the model (its -D flags: who takes
# part, which faults, the time bounds) and one search: spin -a, gcc, ./pan.
# Every safety check is exhaustive (depth-first, states compressed with
# COLLAPSE: nothing is left out within its bounds); the progress checks are
# exhaustive too, under bounded delay (below). A run with a mistake
# switched in runs the same checks, with the same bounds and searches, plus
# the one -DBROKEN_<NAME>; it stops at the first check that finds a
# violation, prints its trail and exits 1, or exits 0 when none does (which
# the self-test counts as a failure). The checks most likely to find a
# given mistake run first (the order only, never the set).
#
# The last line is "N passed, N failed"; the exit status is non-zero if
# anything failed. Bounds, state counts and times: docs/model.md.
set -uo pipefail

PROG="check.sh"
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
MODEL=$HERE/redlock.pml
WORK=$(mktemp -d "${TMPDIR:-/tmp}/redlock-model.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Every safety search is exhaustive: each state is stored whole. COLLAPSE
# (lossless compression of the stored states) saves two thirds of the
# memory and costs a third more time (holder: 46 s and 0.7 GB with it, 31 s
# and 1.8 GB without, 2026-12-07); only pair, at 20 M states, needs it to
# stay under MEMLIM beside another check. CI runs them at nice 19 beside
# the test suites, where the model's CPU is what sets CI's time.
SAFE="-O2 -DSAFETY -DMEMLIM=6000"
SAFE_BIG="-O2 -DSAFETY -DCOLLAPSE -DMEMLIM=6000"
# name | spin -D flags | gcc flags | pan flags | what it covers
#
# The pass checks are small (about a million states): at -O0 gcc takes
# 3.5 s where -O2 takes 26 s, which every known mistake's run pays again,
# and their search 13 s instead of 5.
SAFE_SMALL="-O0 -w -DSAFETY -DMEMLIM=6000"
# holder: one client takes the lock once, any one fault (a restart that
#   kept nothing; one from a copy of a master's data, its own or another's,
#   taken at any moment: an older RDB, an AOF that lost its tail or whose
#   fsync was switched off at run time, a promoted replica, a restore; a
#   FLUSHALL; a lost connection; the name moving onto a server that
#   counts), other clients that settle reborn masters at once (SETTLER),
#   and the prober: a third client with no delay, whose grant by a quorum
#   while anyone holds is two holders. Time: ttl 4 ticks, drift 1, a
#   quorum within 2 ticks of its attempt's start.
# holder-2: the same with two restarts (a majority may forget).
# fences: fenced acquires with the write-back; the prober also asks that a
#   fresh grant's fence is above every fence granted.
# pair: two clients, each one attempt, no fault: stale requests of one
#   meet the other's lease (a cleanup or release that arrives late).
# late-release: one client, and the release of an earlier holder of the
#   key still on its way (GHOST: it runs at any moment on every master),
#   one restart, others settle: the index of live leases must still hold
#   the lease when a settle measures it. Time: ttl 6 ticks (a settle's two
#   drift allowances and QL fit inside a lease).
# stale: two clients, the last master new and undeclared (pending), one
#   FLUSHALL, others settle: a client's settle delayed past a rebirth.
# readmit, declare: the operator, once, at any moment, after one fault.
# extends: one client that extends once, one fault of any kind.
# queue-flush, queue-restart, queue-copy, queue-drop: the queue with drift
#   and a fault together (-DWAITQ): one client that waits (its places in
#   the masters' queues, the reservations its own cleanups make for it,
#   LEAVE, the fast path's guess and the release without Lua), drift 1,
#   one fault of one kind (FLUSHALL of the running process; a restart that
#   kept nothing; a restart from a copy, which may bring back an old
#   reservation or queue; a lost connection), the prober. Two waiting
#   clients with a fault do not fit (past 30 M states and growing after
#   5 minutes, exhaustive or bitstate): hand-overs between clients are in
#   pair's stale requests (no queue) and live-stuck (no drift).
# live-stuck, live-progress: liveness once faults stop (-DLIVE): the last
#   master down, client 1 may crash once; bounded delay: each connection
#   its own process (weak fairness delivers every request), a tick only
#   when nothing else can move, an attempt gives up on its silent masters
#   one tick after it started. live-stuck: a waiter sees a holder within
#   STUCK_MAX ticks, and a release serves the waiter queued on every live
#   master first; live-progress: LTL, every waiting client eventually
#   holds or crashed.
# pass, pass-taker, pass-progress: the local hand-off (issue 31, -DPASS):
#   client 0 holds and passes the lock to a second token of its own
#   instead of releasing (an attempt of its own, whose script also takes a
#   key that holds the previous token). pass: fenced, no fault, drift 1,
#   the prober; pass-taker: not fenced (the lock it passes is the fast
#   path's), and the taker: once client 0 has passed, another client
#   takes the lock at one instant where a quorum would grant it, a lease
#   that the pass attempt still on its way meets. live-stuck carries
#   passes too (-DPASS -DPASS_CANCEL: client 0 may pass instead of
#   releasing, a pass may lose, the bound B = 2): at most B grants of
#   client 0 in a row while client 1 waits in every live queue.
#   pass-progress: as live-progress without the crash, client 0 passing
#   whenever it may: client 1 still eventually holds.
CHECKS=(
    "holder|-DONE_CLIENT -DFAULT_KIND=9 -DSETTLER -DTTL=4 -DQL=2|$SAFE|-m300000"
    "holder-2|-DONE_CLIENT -DFAULTS=2 -DFAULT_KIND=0 -DSETTLER -DTTL=4|$SAFE|-m300000"
    "fences|-DONE_CLIENT -DFENCED -DFAULT_KIND=9 -DSETTLER -DTTL=3|$SAFE|-m300000"
    "readmit|-DONE_CLIENT -DOPER=1 -DFAULT_KIND=9 -DSETTLER -DTTL=3|$SAFE|-m300000"
    "declare|-DONE_CLIENT -DOPER=2 -DFAULT_KIND=9 -DSETTLER -DTTL=3|$SAFE|-m300000"
    "extends|-DONE_CLIENT -DEXTS=1 -DFAULT_KIND=9 -DSETTLER -DTTL=3|$SAFE|-m300000"
    "pair|-DFAULTS=0 -DROUNDS1=1|$SAFE_BIG|-m300000"
    "late-release|-DONE_CLIENT -DGHOST -DFAULT_KIND=0 -DSETTLER -DTTL=6 -DQL=2|$SAFE|-m300000"
    "stale|-DPINGER -DUNDECL -DFAULT_KIND=3 -DSETTLER -DTTL=3|$SAFE|-m300000"
    "queue-flush|-DONE_CLIENT -DWAITQ -DFAULT_KIND=3 -DTTL=3|$SAFE|-m300000"
    "queue-restart|-DONE_CLIENT -DWAITQ -DFAULT_KIND=0 -DTTL=3|$SAFE|-m300000"
    "queue-copy|-DONE_CLIENT -DWAITQ -DFAULT_KIND=1 -DTTL=3|$SAFE|-m300000"
    "queue-drop|-DONE_CLIENT -DWAITQ -DFAULT_KIND=4 -DTTL=3|$SAFE|-m300000"
    "live-stuck|-DLIVE -DCRASH -DPASS -DPASS_CANCEL -DSTUCK_MAX=6|-O0 -w -DSAFETY|-m3000000"
    "live-progress|-DLIVE -DCRASH -DLTL_PROGRESS -DSTUCK_MAX=255|-O0 -w -DNFAIR=3|-a -f -m300000"
    "pass|-DONE_CLIENT -DPASS -DFENCED -DFAULTS=0 -DTTL=3|$SAFE_SMALL|-m300000"
    "pass-taker|-DONE_CLIENT -DPASS -DTAKER -DAFTER_PASS -DFAULTS=0 -DTTL=3|$SAFE_SMALL|-m300000"
    "pass-progress|-DLIVE -DPASS -DPASS_ALWAYS -DPASS_CANCEL -DLTL_PROGRESS -DSTUCK_MAX=255|-O0 -w -DNFAIR=3|-a -f -m3000000"
)
# name | the checks that find it first (the rest follow) | the mistake
BROKEN=(
    "guard-off|holder|a reborn master votes at once (no memory guard)"
    "trust-snapshot|holder|CHECK adopts a marker another process wrote"
    "vouch-adopts|holder|main before issue 29: a marker vouched for (AOF always) is adopted by whatever process loads it"
    "no-drift|holder|validity without the drift margin"
    "fast-unchecked|holder|the fast path counts what the client last heard of the marker"
    "check-trusted|holder|a vote counts on the handshake's word: a marker gone since (FLUSHALL) is not seen"
    "move-trusted|holder|a client that reached a master's name at a new address does not make the server there reborn"
    "validity-from-decision|holder|validity counted from the decision, not from the attempt's start"
    "settle-no-drift|holder|a settle's window without its two drift allowances"
    "settle-at-once|holder|a settle measures the fleet at once, before attempts that counted the reborn master's vote from before have decided"
    "quorum-late|readmit holder|a quorum counts however late it came"
    "settle-quorum|holder-2|a measured window although a quorum of masters does not count"
    "fence-not-raised|fences|a reborn master counts without its fence counter raised to the fleet's largest"
    "operator-blind|readmit declare|readmit and declare-empty act without looking at the fleet's live leases"
    "release-no-compare|pair|a release or cleanup deletes the key without comparing the token"
    "index-by-key|late-release|the index of live leases named by key: a late release removes the next holder's entry"
    "settle-by-run|stale|SETTLE names the process (its run_id), not the rebirth: one delivered after a FLUSHALL settles the next rebirth"
    "cleanup-frees|live-stuck|a failed attempt's cleanup frees the key instead of handing it to the queue's head"
    "release-frees|live-stuck|a release frees the key instead of reserving it for the queue's head"
    "dead-head-kept|live-stuck live-progress|a hand-over reserves again for a head whose lease it already cut"
    "native-unmarked|live-stuck|a waiter's join does not mark the holder's value: its release without Lua skips the hand-over"
    "pass-no-compare|pass-taker|a pass takes over whatever the key holds: another client's lease too"
    "pass-keep-ttl|pass|a pass keeps the key's remaining expiry while the new holder counts a full ttl from its attempt's start"
    "pass-no-fence|pass|a pass does not raise the fence: the new holder's fence is the previous holder's"
    "pass-no-round|pass|a pass is granted on the previous holder's votes and start, without a round of its own"
    "pass-unbounded|pass-progress live-stuck|no bound B: a process passes the lock to its own waiters for ever"
)

field() { cut -d'|' -f"$2" <<<"$1"; }
check_named() {
    local c
    for c in "${CHECKS[@]}"; do [[ $(field "$c" 1) == "$1" ]] && { echo "$c"; return 0; }; done
    return 1
}
broken_named() {
    local b
    for b in "${BROKEN[@]}"; do [[ $(field "$b" 1) == "$1" ]] && { echo "$b"; return 0; }; done
    return 1
}
# BROKEN_NAME_IN_CAPS for a switch's name.
define_of() { tr 'a-z-' 'A-Z_' <<<"$1" | sed 's/^/-DBROKEN_/'; }

# run DIR CHECK [EXTRA]: one check, in DIR, with EXTRA spin flags. Prints
# one line: the verdict, states, how exhaustive, time. Returns 0 (no
# violation), 1 (a violation) or 2 (could not run, or inconclusive).
run() {
    local d=$1 c=$2 extra=${3:-} t0=$SECONDS name
    name=$(field "$c" 1)
    mkdir -p "$d" && cp "$MODEL" "$d/" || return 2
    # shellcheck disable=SC2086
    (cd "$d" && spin -a $(field "$c" 2) $extra redlock.pml >spin.log 2>&1 &&
        gcc $(field "$c" 3) -o pan pan.c >gcc.log 2>&1) ||
        { echo "$PROG: $name: spin or gcc failed:"; tail -5 "$d"/*.log; return 2; }
    # shellcheck disable=SC2086
    (cd "$d" && ./pan $(field "$c" 4) >pan.log 2>&1)
    local errors states how
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.log" | tail -1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$d/pan.log" | tail -1)
    if grep -q 'bitstate' "$d/pan.log"; then
        how="bitstate, $(grep -o 'hash factor: [0-9.e+]*' "$d/pan.log" | tail -1)"
    else
        how=exhaustive
    fi
    echo "$PROG: $name: errors ${errors:-?}, ${states:-?} states ($how), $((SECONDS - t0)) s"
    [[ -n $errors ]] || return 2
    # A search cut short by its depth bound, or out of memory, proves
    # nothing: the model grew past the check's -m, which must then grow.
    if ((errors == 0)) && grep -qE 'max search depth too small|out of memory' "$d/pan.log"; then
        echo "$PROG: $name: the search was cut short (depth bound or memory): raise -m or MEMLIM"
        return 2
    fi
    ((errors == 0)) && return 0
    return 1
}

# trail DIR CHECK [EXTRA]: the counterexample in a few readable lines: the
# faults, then its last 24 steps.
trail() {
    local d=$1 c=$2 extra=${3:-} n
    # shellcheck disable=SC2086
    (cd "$d" && spin -t $(field "$c" 2) $extra redlock.pml 2>&1) |
        sed -n 's/^ *MSC: /  /p; s/^spin: .*\(assertion violated.*\)/  => \1/p' |
        grep -v '^  tick$' >"$d/trail.txt"
    n=$(wc -l <"$d/trail.txt")
    if ((n > 24)); then
        head -n $((n - 24)) "$d/trail.txt" |
            grep -E 'restarts|FLUSHALL|drops|moves|copy|operator|new address' | sed 's/$/ (earlier)/'
        echo "  ..."
    fi
    tail -n 24 "$d/trail.txt"
    grep -m1 -E 'assertion violated|acceptance cycle|invalid end state' "$d/pan.log" | sed 's/^/  pan: /'
}

# Checks run side by side, JOBS at a time (one per core: each pan is one
# process). REDLOCK_MODEL_JOBS sets JOBS.
JOBS=${REDLOCK_MODEL_JOBS:-$(nproc 2>/dev/null || echo 1)}
throttle() { while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done; }

# clean: every check, side by side; each must find nothing.
passed=0
failed=0
clean() {
    local c name rc
    for c in "${CHECKS[@]}"; do
        throttle
        name=$(field "$c" 1)
        (run "$WORK/$name" "$c" >"$WORK/$name.out"; echo $? >"$WORK/$name.rc") &
    done
    wait
    for c in "${CHECKS[@]}"; do
        name=$(field "$c" 1)
        cat "$WORK/$name.out"
        rc=$(cat "$WORK/$name.rc")
        if ((rc == 0)); then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            ((rc == 1)) && trail "$WORK/$name" "$c"
        fi
    done
}

# broken NAME OUTDIR: the checks with NAME's mistake, its first finders
# first; stops at the first violation. Prints what ran; returns 1 (found:
# the trail is in OUTDIR/trail.txt), 0 (none found) or 2.
broken() {
    local b c order name rc=0 r
    b=$(broken_named "$1") || { echo "$PROG: unknown switch '$1' (--list-broken)" >&2; return 2; }
    order=$(field "$b" 2)
    for c in "${CHECKS[@]}"; do
        name=$(field "$c" 1)
        [[ " $order " == *" $name "* ]] || order+=" $name"
    done
    for name in $order; do
        c=$(check_named "$name") || { echo "$PROG: switch $1 names no check '$name'" >&2; return 2; }
        run "$2/$name" "$c" "$(define_of "$1")"
        r=$?
        if ((r == 1)); then
            trail "$2/$name" "$c" "$(define_of "$1")" >"$2/trail.txt"
            return 1
        fi
        ((r == 2)) && rc=2
    done
    return "$rc"
}

# self-test: every switch, side by side; each must be found.
self_test() {
    local b name rc
    for b in "${BROKEN[@]}"; do
        throttle
        name=$(field "$b" 1)
        (broken "$name" "$WORK/broken-$name" >"$WORK/broken-$name.out"
         echo $? >"$WORK/broken-$name.rc") &
    done
    wait
    for b in "${BROKEN[@]}"; do
        name=$(field "$b" 1)
        tail -n 1 "$WORK/broken-$name.out" | sed "s/^$PROG: /$PROG: broken $name: /"
        rc=$(cat "$WORK/broken-$name.rc")
        if ((rc == 1)); then
            passed=$((passed + 1))
        else
            echo "$PROG: broken $name: no check found it (FAILED)"
            cat "$WORK/broken-$name.out"
            failed=$((failed + 1))
        fi
    done
}

one_broken() {
    local name=$1
    broken "$name" "$WORK/one"
    local rc=$?
    if ((rc == 1)); then
        echo "$PROG: $name: found (a violation of what must hold):"
        cat "$WORK/one/trail.txt"
        exit 1
    fi
    echo "$PROG: $name: no check found a violation"
    exit "$((rc == 2 ? 2 : 0))"
}

if [[ -n ${REDLOCK_MODEL_BROKEN:-} ]]; then
    one_broken "$REDLOCK_MODEL_BROKEN"
fi
case ${1:-} in
--list)
    for c in "${CHECKS[@]}"; do printf '%-14s %s\n' "$(field "$c" 1)" "$(field "$c" 2)"; done
    exit 0
    ;;
--list-broken)
    for b in "${BROKEN[@]}"; do printf '%-24s %s\n' "$(field "$b" 1)" "$(field "$b" 3)"; done
    exit 0
    ;;
--broken)
    [[ -n ${2:-} ]] || { echo "$PROG: --broken needs a name (--list-broken)" >&2; exit 2; }
    one_broken "$2"
    ;;
--clean)
    clean
    ;;
'')
    clean
    self_test
    ;;
-h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
*) echo "$PROG: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
echo "$passed passed, $failed failed"
((failed == 0))
