#!/usr/bin/env bash
# with-cluster.sh - run one command against a fresh cluster of its own.
#
# meson runs every cluster test executable through this: a new temp dir, N
# masters from cluster-up.sh on the ports given, the list in the environment,
# and the cluster stopped and the dir removed however the command ends (exit,
# crash, or a signal from the test runner's timeout). Exits with the
# command's status.
#
# Exported to the command:
#   REDLOCK_TEST_MASTERS   127.0.0.1:P0,127.0.0.1:P1,...
#   REDLOCK_TEST_N         N
#   REDLOCK_TEST_BASEPORT  P0
#   REDLOCK_TEST_DIR       the cluster's state dir (cluster-up.sh -d)
#   REDLOCK_TEST_CLUSTER   absolute path of cluster-up.sh
#   REDLOCK_TEST_AOF       1 with --aof, else 0
#   REDLOCK_TEST_PASSWORD  the password, only with --requirepass
#   REDLOCK_TEST_SERVER    the server binary the masters run
#
# The temp dir is made under $REDLOCK_TEST_TMPDIR if set (tools/run-tests.sh
# sets it, to find leftovers), else under $TMPDIR or /tmp.
# REDLOCK_TEST_PORT_OFFSET, if set, is added to BASEPORT: two checkouts (or
# a developer and CI) can then run the suite at once without port clashes.
# REDLOCK_SERVER, if set, is the server binary cluster-up.sh runs instead of
# redis-server (e.g. Valkey's, from tools/deps.sh --valkey).
set -euo pipefail

PROG="with-cluster.sh"

usage() {
    cat <<EOF
usage: $PROG [-n N] -p BASEPORT [--aof] [--requirepass PASS] [--trace[-complete] FILE]
       -- CMD [ARGS...]

Starts N masters (default 5) on 127.0.0.1:BASEPORT.. in a new temp dir, runs
CMD with REDLOCK_TEST_* set, then stops the masters and removes the dir.
Exits with CMD's status.
EOF
}

usage_error() {
    printf '%s: %s (see --help)\n' "$PROG" "$*" >&2
    exit 2
}

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
cluster_up=${REDLOCK_CLUSTER_UP:-$here/../cluster-up.sh}
[[ -f $cluster_up ]] || usage_error "cluster-up.sh not found at $cluster_up"
cluster_up=$(cd -- "$(dirname -- "$cluster_up")" && pwd -P)/$(basename -- "$cluster_up")

n=5 port='' aof=0 pass='' pass_set=0 trace=''
trace_args=()
while (($#)); do
    case $1 in
    -n)
        (($# >= 2)) || usage_error "-n needs a value"
        n=$2
        shift 2
        ;;
    -p)
        (($# >= 2)) || usage_error "-p needs a value"
        port=$2
        shift 2
        ;;
    --aof)
        aof=1
        shift
        ;;
    --requirepass)
        (($# >= 2)) || usage_error "--requirepass needs a value"
        pass=$2
        pass_set=1
        shift 2
        ;;
    --trace | --trace-complete)
        (($# >= 2)) || usage_error "$1 needs a file"
        trace=$2
        [[ $1 == --trace-complete ]] && trace_args+=(--complete)
        shift 2
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    --)
        shift
        break
        ;;
    *)
        usage_error "unexpected argument '$1' (the command goes after --)"
        ;;
    esac
done
[[ -n $port ]] || usage_error "-p BASEPORT is required"
[[ $port =~ ^[0-9]+$ ]] || usage_error "-p: bad port '$port'"
offset=${REDLOCK_TEST_PORT_OFFSET:-0}
[[ $offset =~ ^[0-9]+$ ]] || usage_error "REDLOCK_TEST_PORT_OFFSET: not a number: '$offset'"
port=$((10#$port + 10#$offset))
(($#)) || usage_error "no command given after --"

cl_args=(-n "$n" -p "$port")
((aof)) && cl_args+=(--aof)
((pass_set)) && cl_args+=(--requirepass "$pass")

parent=${REDLOCK_TEST_TMPDIR:-${TMPDIR:-/tmp}}
dir=$(mktemp -d "$parent/redlock-cluster-$port.XXXXXX")
child=''

# shellcheck disable=SC2317  # invoked by the traps
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    if [[ -f $dir/cluster.env ]]; then
        "$cluster_up" -d "$dir" stop >&2 || rc=1
    fi
    rm -rf -- "$dir"
    exit "$rc"
}
trap cleanup EXIT
# The handlers only record the signal's status: cleanup (on EXIT) does the
# rest, once.
trap 'exit 130' INT
trap 'exit 143' TERM

# The masters list is start's only stdout line; its errors go to stderr.
masters=$("$cluster_up" "${cl_args[@]}" -d "$dir" start)

export REDLOCK_TEST_MASTERS=$masters
export REDLOCK_TEST_N=$n
export REDLOCK_TEST_BASEPORT=$port
export REDLOCK_TEST_DIR=$dir
export REDLOCK_TEST_CLUSTER=$cluster_up
export REDLOCK_TEST_AOF=$aof
export REDLOCK_TEST_SERVER=${REDLOCK_SERVER:-redis-server}
if ((pass_set)); then
    export REDLOCK_TEST_PASSWORD=$pass
else
    unset REDLOCK_TEST_PASSWORD
fi

# --trace FILE: every library client of the command, and of the programs it
# starts, appends its protocol steps to FILE (redlock/transport/trace.c), emptied
# first; once the command ended, model/trace-check.py replays it against
# the model's rules and a step the model cannot take fails the test
# (--trace-complete: FILE holds every client that talks to the masters).
if [[ -n $trace ]]; then
    # One file per cluster: runs of one build side by side (CI's server
    # matrix, each on its own ports) must not write, or empty, each
    # other's trace.
    trace=${trace%.trace}.$port.trace
    mkdir -p -- "$(dirname -- "$trace")"
    : >"$trace"
    export REDLOCK_TRACE=$trace
fi

# In the background, so that a signal to us runs the trap at once instead of
# after the command ends; `wait` returns 128+SIG if the command was killed.
"$@" &
child=$!
rc=0
wait "$child" || rc=$?
child=''
if [[ -n $trace ]]; then
    if ! python3 "$here/../model/trace-check.py" "${trace_args[@]}" "$trace" >&2; then
        echo "Bail out! the trace $trace has a step the model cannot take (model/trace-check.py)"
        rc=1
    fi
fi
exit "$rc"
