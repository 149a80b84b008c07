#!/usr/bin/env bash
# netns.sh - redis-server masters behind their own network namespaces.
#
# cluster-up.sh breaks processes; this breaks the network between the client
# and a master. Each master runs in a namespace of its own (PREFIX0, PREFIX1,
# ...), reached from the root namespace through a veth pair on a private /30
# carved from one free /24. Partitions are packet drops on that link, so the
# client sees what a real partition gives it: silence, not an error.
#
# How a link is cut, and why not the obvious ways:
#  - `ip link set ... down` in the root namespace deletes the route to the
#    master: a new connect fails at once (ENETUNREACH), which is a refused
#    connection, not a partition; and without a catch-all route the master's
#    address falls back to the default route, so traffic would leave the box.
#  - nftables/iptables would do, but their tools are not installed here (the
#    kernel has them) and rules in the root namespace are host-wide state.
#  - What we do: point the neighbour (ARP) entry of the far end at a MAC that
#    does not exist, `nud permanent`. Frames still cross the veth and the
#    peer drops them (not its address). One direction per entry, so cut-in
#    and cut-out come free, established connections stay open, and a healed
#    link lets TCP retransmit what was lost, in order. Needs only iproute2.
# A catch-all `unreachable` route for the whole /24 (metric 4000) sits under
# the per-master routes from the start, so traffic to our addresses can never
# take the default route, whatever state the veths are in.
#
# delay/loss use tc netem on both ends of the link; without sch_netem they
# exit 3 with one line (tests then use tests/helpers/relay.c for delay).
set -euo pipefail

PROG=netns.sh
PREFIX=${NETNS_PREFIX:-rl-m}
NET=${NETNS_NET:-10.231}               # a /24 is picked from NET.1-254.0
PORT=6379
BOGUS_MAC=02:00:00:00:00:01            # locally administered, never assigned
NETEM_SKIP="netem not available on this kernel: skipped"

usage() {
    cat <<EOF
usage: $PROG COMMAND [ARGS]

Masters in network namespaces ${PREFIX}0..: one veth pair each to the root
namespace, addresses on a free private /24 under $NET, one redis-server per
namespace on port $PORT (no persistence). I is a 0-based master index.

commands:
  probe               exit 0 if network namespaces can be made here; else
                      exit 4 with one line saying why
  up N                create N namespaces (1..32) and their masters, wait
                      until each answers PING through its link, print the
                      masters list (addr:port,...) on stdout
  down                kill the masters, delete namespaces, veths and routes;
                      safe to run twice, and after a failed up
  masters             print the masters list again
  status              one line per master: index ns address pid link netem
  cut I               drop packets both ways between the client and master I
  cut-in I            drop only client -> master (requests lost)
  cut-out I           drop only master -> client (replies lost)
  heal [I]            undo cut*, delay and loss on master I (default: all)
  delay I MS [JIT]    netem: add MS (+/- JIT) ms one-way, each direction;
                      exit 3 if netem is not available
  loss I PCT          netem: drop PCT % of packets each direction; exit 3
                      if netem is not available
  cli I ARGS...       redis-cli on master I through the namespace's own
                      loopback (works whatever the link's state)
  reap                down for test runs (prefix rlt<pid>m) whose pid is gone

environment:
  NETNS_PREFIX        names of namespaces and root-side veths (default rl-m;
                      letters, digits, '-', at most 10 characters)
  NETNS_NET           first two octets of the private range (default 10.231)
  NETNS_DIR           state dir (default \${TMPDIR:-/tmp}/redlock-netns-PREFIX)

exit status: 0 done, 1 failed, 2 usage error, 3 skipped (no netem),
4 network namespaces not permitted.
EOF
}

die() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    exit 1
}

usage_error() {
    printf '%s: %s (see --help)\n' "$PROG" "$*" >&2
    exit 2
}

is_uint() {
    [[ $1 =~ ^[0-9]+$ ]] && ((10#$1 < 1000000))
}

[[ $PREFIX =~ ^[A-Za-z0-9-]{1,10}$ ]] ||
    usage_error "NETNS_PREFIX must be 1..10 letters, digits or '-', got '$PREFIX'"
[[ $NET =~ ^(10\.[0-9]{1,3}|172\.(1[6-9]|2[0-9]|3[01])|192\.168)$ ]] ||
    usage_error "NETNS_NET must be the first two octets of a private range, got '$NET'"
DIR=${NETNS_DIR:-${TMPDIR:-/tmp}/redlock-netns-$PREFIX}
STATE=$DIR/netns.env
LOCKFILE=/run/lock/redlock-netns.lock
[[ -d /run/lock && -w /run/lock ]] || LOCKFILE=${TMPDIR:-/tmp}/redlock-netns.lock

# --- state -------------------------------------------------------------------

N=0
SUBNET=''   # e.g. 10.231.7

load_state() {
    [[ -f $STATE ]] || return 1
    # Our own file, written by save_state with printf %q.
    # shellcheck disable=SC1090
    source "$STATE"
}

need_state() {
    load_state || die "no namespaces for prefix $PREFIX (run '$PROG up N' first)"
}

save_state() {
    {
        printf 'N=%q\n' "$N"
        printf 'SUBNET=%q\n' "$SUBNET"
    } >"$STATE.tmp"
    mv -f "$STATE.tmp" "$STATE"
}

ns_of() { echo "$PREFIX$1"; }
veth_of() { echo "$PREFIX$1"; }                     # root side; the peer is eth0 in the ns
host_addr() { echo "$SUBNET.$((4 * $1 + 1))"; }    # root side of master I's /30
ns_addr() { echo "$SUBNET.$((4 * $1 + 2))"; }      # the master's address

need_index() {
    [[ -n ${1-} ]] || usage_error "'$command' needs a master index"
    is_uint "$1" || usage_error "bad master index '$1'"
    (( 10#$1 < N )) || usage_error "master index $1 out of range 0..$((N - 1))"
}

masters_list() {
    local i out=
    for ((i = 0; i < N; i++)); do
        out+="${out:+,}$(ns_addr "$i"):$PORT"
    done
    echo "$out"
}

# Namespaces with our prefix that exist now (also those a failed up left).
our_namespaces() {
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+\$" || true
}

our_veths() {
    ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
        grep -E "^${PREFIX}[0-9]+\$" || true
}

# --- probes ------------------------------------------------------------------

probe_netns() {
    local name="rlprobe$$" err
    command -v ip >/dev/null || { echo "network namespaces not permitted here: ip(8) not found"; return 4; }
    if ! err=$(ip netns add "$name" 2>&1); then
        echo "network namespaces not permitted here: ip netns add: ${err//$'\n'/ }"
        return 4
    fi
    ip netns del "$name" 2>/dev/null || true
    if ! err=$(ip link add "${name}a" type veth peer name "${name}b" 2>&1); then
        echo "network namespaces not permitted here: cannot create a veth pair: ${err//$'\n'/ }"
        return 4
    fi
    ip link del "${name}a" 2>/dev/null || true
}

# --- up / down ---------------------------------------------------------------

# A /24 under NET with no route inside it and no route covering it but the
# default one: nobody (other runs included) uses it. Called under the lock.
pick_subnet() {
    local x cand routes
    for ((x = 1; x <= 254; x++)); do
        cand=$NET.$x
        [[ -z $(ip -4 route show table all root "$cand.0/24" 2>/dev/null) ]] || continue
        # Read the routes first, then grep: `ip | grep -q` under pipefail
        # fails when grep quits early and ip dies of SIGPIPE, and a subnet
        # in use would pass for free.
        routes=$(ip -4 route show table all match "$cand.0/24" 2>/dev/null) || true
        grep -v -e '^default' -e '^unreachable default' -q <<<"$routes" && continue
        echo "$cand"
        return 0
    done
    return 1
}

stop_masters() {
    local ns pids pid deadline
    local -a all=()
    for ns in $(our_namespaces); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        for pid in $pids; do
            kill -TERM "$pid" 2>/dev/null || true
            all+=("$pid")
        done
    done
    deadline=$((SECONDS + 5))
    for pid in "${all[@]+"${all[@]}"}"; do
        # A process that is not our child: polled until gone, bounded.
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 0.02
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
}

do_down() {
    local ns veth
    load_state || true
    if [[ -z $SUBNET ]]; then
        # No state file (removed, or up failed early): our catch-all route
        # is the /24 of master 0's root-side address, if that still exists.
        SUBNET=$(ip -4 -o addr show dev "$(veth_of 0)" 2>/dev/null |
            sed -n 's/.* inet \([0-9]*\.[0-9]*\.[0-9]*\)\.[0-9]*\/30 .*/\1/p;T;q') || true
    fi
    stop_masters
    for ns in $(our_namespaces); do
        ip netns del "$ns" 2>/dev/null || true     # takes its end of the veth, and so the pair
    done
    # Root-side veths whose namespace went away first (a failed up).
    for veth in $(our_veths); do
        ip link del "$veth" 2>/dev/null || true
    done
    if [[ -n $SUBNET ]]; then
        ip route del unreachable "$SUBNET.0/24" metric 4000 2>/dev/null || true
    fi
    rm -rf -- "$DIR"
}

start_master() {
    local i=$1 ns mdir
    ns=$(ns_of "$i")
    mdir=$DIR/m$i
    mkdir -p -- "$mdir"
    # cd before the fork; `ip netns exec` execs redis-server itself, so $!
    # is its pid. Left in the caller's process group, like cluster-up.sh.
    cd -- "$mdir"
    # shellcheck disable=SC2094  # redis appends to its log; we only add stderr
    nohup ip netns exec "$ns" "${REDLOCK_SERVER:-redis-server}" --port "$PORT" \
        --bind "$(ns_addr "$i") 127.0.0.1" --protected-mode no \
        --save '' --appendonly no --daemonize no \
        --dir "$mdir" --logfile "$mdir/redis.log" \
        </dev/null >>"$mdir/redis.log" 2>&1 &
    echo $! >"$mdir/redis.pid"
    cd - >/dev/null
}

wait_masters() {
    local deadline=$((SECONDS + 10)) i out pid
    for ((i = 0; i < N; i++)); do
        while :; do
            pid=$(<"$DIR/m$i/redis.pid")
            if ! kill -0 "$pid" 2>/dev/null; then
                printf '%s: master %d exited during startup; last lines of its log:\n' "$PROG" "$i" >&2
                tail -n 8 -- "$DIR/m$i/redis.log" | sed 's/^/    /' >&2 || true
                return 1
            fi
            # Through the link, as the client will talk to it.
            out=$(timeout 2 redis-cli -h "$(ns_addr "$i")" -p "$PORT" ping 2>/dev/null) || true
            [[ $out == PONG ]] && break
            if ((SECONDS >= deadline)); then
                printf '%s: master %d (%s) did not answer PING within 10 s\n' "$PROG" "$i" "$(ns_addr "$i")" >&2
                return 1
            fi
            sleep 0.02   # the poll interval of an awaited PING, bounded above
        done
    done
}

# New masters have nothing to forget: declare them empty (a memory marker
# that counts at once, written by the process it names: a marker without
# `run` is another process's), as cluster-up.sh start does. The key starts
# with a NUL, which only redis-cli's quoted input can write, hence stdin.
declare_empty() {
    local i out
    for ((i = 0; i < N; i++)); do
        out=$(printf '%s\n' 'EVAL "if redis.call('"'"'exists'"'"', KEYS[1]) == 1 then return 0 end local run = string.match(redis.call('"'"'info'"'"', '"'"'server'"'"'), '"'"'run_id:(%x+)'"'"') redis.call('"'"'hset'"'"', KEYS[1], '"'"'born'"'"', 0, '"'"'window'"'"', 0, '"'"'maxttl'"'"', 0, '"'"'served'"'"', 1, '"'"'run'"'"', run) return 1" 1 "\x00redlock:marker"' |
            timeout 5 redis-cli -h "$(ns_addr "$i")" -p "$PORT" 2>&1) || true
        [[ $out == 0 || $out == 1 ]] ||
            { printf '%s: master %d: cannot write its memory marker: %s\n' "$PROG" "$i" "$out" >&2; return 1; }
    done
}

do_up() {
    local n=$1 i ns veth
    command -v "${REDLOCK_SERVER:-redis-server}" >/dev/null || die "${REDLOCK_SERVER:-redis-server} not found"
    command -v redis-cli >/dev/null || die "redis-cli not found"
    probe_netns >&2 || exit 4
    if load_state || [[ -n $(our_namespaces) ]]; then
        die "namespaces with prefix $PREFIX already exist; run '$PROG down' first"
    fi
    N=$n
    mkdir -p -- "$DIR"
    # shellcheck disable=SC2154  # rc is assigned inside the handler
    trap 'rc=$?; trap - EXIT INT TERM; if ((rc)); then do_down; fi; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # The catch-all route claims the /24 for us: pick and claim under a lock
    # so that two runs at once cannot take the same one.
    exec 9>>"$LOCKFILE"
    flock -w 10 9 || die "cannot lock $LOCKFILE"
    SUBNET=$(pick_subnet) || die "no free /24 under $NET.0.0/16 (set NETNS_NET)"
    ip route add unreachable "$SUBNET.0/24" metric 4000 || die "cannot add the catch-all route for $SUBNET.0/24"
    save_state
    flock -u 9
    exec 9>&-
    for ((i = 0; i < N; i++)); do
        ns=$(ns_of "$i")
        veth=$(veth_of "$i")
        ip netns add "$ns"
        ip link add "$veth" type veth peer name "${veth}p" netns "$ns"
        ip -n "$ns" link set "${veth}p" name eth0
        ip addr add "$(host_addr "$i")/30" dev "$veth"
        ip link set "$veth" up
        ip -n "$ns" addr add "$(ns_addr "$i")/30" dev eth0
        ip -n "$ns" link set lo up
        ip -n "$ns" link set eth0 up
    done
    for ((i = 0; i < N; i++)); do
        start_master "$i"
    done
    wait_masters
    declare_empty
    masters_list
}

# --- faults --------------------------------------------------------------------

cut_in() {   # client -> master lost: the root side sends to a MAC nobody has
    ip neigh replace "$(ns_addr "$1")" lladdr "$BOGUS_MAC" dev "$(veth_of "$1")" nud permanent
}

cut_out() {  # master -> client lost: the same, inside the master's namespace
    ip -n "$(ns_of "$1")" neigh replace "$(host_addr "$1")" lladdr "$BOGUS_MAC" dev eth0 nud permanent
}

heal_one() {
    local i=$1 ns
    ns=$(ns_of "$i")
    ip neigh del "$(ns_addr "$i")" dev "$(veth_of "$i")" 2>/dev/null || true
    ip -n "$ns" neigh del "$(host_addr "$i")" dev eth0 2>/dev/null || true
    tc qdisc del dev "$(veth_of "$i")" root 2>/dev/null || true
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
    rm -f -- "$DIR/m$i/netem"
}

# Set master I's netem to "delay D JIT loss L" (each part only when set),
# both ways: root-side veth egress is client -> master, eth0 egress in the
# namespace is master -> client.
apply_netem() {
    local i=$1 delay=$2 jitter=$3 loss=$4 err ns
    local -a args=()
    ns=$(ns_of "$i")
    if ((delay > 0 || jitter > 0)); then
        args+=(delay "${delay}ms")
        ((jitter > 0)) && args+=("${jitter}ms")
    fi
    ((loss > 0)) && args+=(loss "${loss}%")
    ((${#args[@]})) || args=(delay 0ms)
    if ! err=$(tc qdisc replace dev "$(veth_of "$i")" root netem "${args[@]}" 2>&1); then
        if [[ $err == *"qdisc kind is unknown"* || $err == *"No such file"* ]]; then
            echo "$NETEM_SKIP"
            exit 3
        fi
        die "tc netem on $(veth_of "$i"): $err"
    fi
    ip netns exec "$ns" tc qdisc replace dev eth0 root netem "${args[@]}" ||
        die "tc netem in $ns failed"
    printf 'DELAY=%q JITTER=%q LOSS=%q\n' "$delay" "$jitter" "$loss" >"$DIR/m$i/netem"
}

netem_get() {   # prints "delay jitter loss" for master I
    local DELAY=0 JITTER=0 LOSS=0
    # shellcheck disable=SC1090
    [[ -f $DIR/m$1/netem ]] && source "$DIR/m$1/netem"
    echo "$DELAY $JITTER $LOSS"
}

link_state() {
    local i=$1 in=0 out=0 neigh
    # Captured, then matched: no `ip | grep -q` (see pick_subnet).
    neigh=$(ip neigh show "$(ns_addr "$i")" dev "$(veth_of "$i")" 2>/dev/null) || true
    grep -qi "$BOGUS_MAC" <<<"$neigh" && in=1
    neigh=$(ip -n "$(ns_of "$i")" neigh show "$(host_addr "$i")" dev eth0 2>/dev/null) || true
    grep -qi "$BOGUS_MAC" <<<"$neigh" && out=1
    case $in$out in
    00) echo up ;;
    11) echo cut ;;
    10) echo cut-in ;;
    01) echo cut-out ;;
    esac
}

# --- commands ------------------------------------------------------------------

(($#)) || usage_error "no command given"
command=$1
shift
case $command in
-h | --help)
    usage
    exit 0
    ;;
probe)
    (($# == 0)) || usage_error "'probe' takes no arguments"
    probe_netns || exit 4
    ;;
up)
    (($# == 1)) || usage_error "'up' needs N"
    if ! is_uint "$1" || ((10#$1 < 1 || 10#$1 > 32)); then
        usage_error "N must be 1..32, got '$1'"
    fi
    do_up "$((10#$1))"
    ;;
down)
    (($# == 0)) || usage_error "'down' takes no arguments"
    do_down
    ;;
masters)
    need_state
    masters_list
    ;;
status)
    need_state
    for ((i = 0; i < N; i++)); do
        read -r d j l < <(netem_get "$i")
        pid=$(cat "$DIR/m$i/redis.pid" 2>/dev/null || echo -)
        kill -0 "$pid" 2>/dev/null || pid="$pid(dead)"
        printf '%d %s %s:%d %s %s delay=%sms jitter=%sms loss=%s%%\n' "$i" "$(ns_of "$i")" \
            "$(ns_addr "$i")" "$PORT" "$pid" "$(link_state "$i")" "$d" "$j" "$l"
    done
    ;;
cut | cut-in | cut-out)
    need_state
    (($# == 1)) || usage_error "'$command' needs a master index"
    need_index "$1"
    i=$((10#$1))
    [[ $command == cut-out ]] || cut_in "$i"
    [[ $command == cut-in ]] || cut_out "$i"
    ;;
heal)
    need_state
    (($# <= 1)) || usage_error "'heal' takes at most one index"
    if (($#)); then
        need_index "$1"
        heal_one "$((10#$1))"
    else
        for ((i = 0; i < N; i++)); do heal_one "$i"; done
    fi
    ;;
delay)
    need_state
    (($# == 2 || $# == 3)) || usage_error "'delay' needs I MS [JITTER]"
    need_index "$1"
    if ! is_uint "$2" || ((10#$2 > 60000)); then
        usage_error "delay must be 0..60000 ms, got '$2'"
    fi
    jit=${3:-0}
    if ! is_uint "$jit" || ((10#$jit > 60000)); then
        usage_error "jitter must be 0..60000 ms, got '$jit'"
    fi
    read -r _ _ l < <(netem_get "$((10#$1))")
    apply_netem "$((10#$1))" "$((10#$2))" "$((10#$jit))" "$l"
    ;;
loss)
    need_state
    (($# == 2)) || usage_error "'loss' needs I PCT"
    need_index "$1"
    if ! is_uint "$2" || ((10#$2 > 100)); then
        usage_error "loss must be 0..100 %, got '$2'"
    fi
    read -r d j _ < <(netem_get "$((10#$1))")
    apply_netem "$((10#$1))" "$d" "$j" "$((10#$2))"
    ;;
cli)
    need_state
    (($# >= 1)) || usage_error "'cli' needs a master index"
    need_index "$1"
    i=$((10#$1))
    shift
    exec timeout 10 ip netns exec "$(ns_of "$i")" redis-cli -h 127.0.0.1 -p "$PORT" "$@"
    ;;
reap)
    (($# == 0)) || usage_error "'reap' takes no arguments"
    for p in $(ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^rlt\([0-9]\{1,7\}\)m[0-9]\{1,2\}$/\1/p' | sort -u); do
        kill -0 "$p" 2>/dev/null && continue
        NETNS_PREFIX=rlt${p}m NETNS_DIR='' "$0" down || true
    done
    ;;
*)
    usage_error "unknown command '$command'"
    ;;
esac
