#!/usr/bin/env bash
# native-cost.sh - what one release, extend and acquire cost a master, per
# call: the library's scripts and transactions against the server's own
# commands (SET IFEQ, DELIFEQ, DELEX IFEQ) and against the bare commands a
# guarded cycle needs (SET NX PX, HGET, ZADD, ZREM) pipelined, on the same
# server.
#
#   tools/native-cost.sh [-n CALLS] [-r RUNS] [-b BUILD] SERVER...
#
# Each SERVER (a redis-server or valkey-server binary, e.g. the one
# tools/deps.sh --valkey9 prints) is started on a unix socket of its own (no
# TCP port to clash with anyone's), persistence off; BUILD/bench/native-cost
# (default build/) runs RUNS times (default 3) with CALLS calls per shape
# (default 20000), one request at a time; the server is stopped. Each line:
# the shape, the server's own time per call (INFO commandstats: EVALSHA's, or
# MULTI's plus EXEC's, each including what it ran) and its CPU per call (INFO
# cpu: request parsing, reply and socket included). bench/RESULTS.md
# ("Native commands against scripts, per call") has the figures.
set -euo pipefail

PROG="native-cost.sh"
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
calls=20000 runs=3 build=$ROOT/build
while getopts n:r:b:h opt; do
    case $opt in
    n) calls=$OPTARG ;;
    r) runs=$OPTARG ;;
    b) build=$OPTARG ;;
    *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
(($#)) || { echo "$PROG: name at least one server binary (see -h)" >&2; exit 2; }
tool=$build/bench/native-cost
[[ -x $tool ]] || { echo "$PROG: $tool not built (ninja -C $build)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-native-cost.XXXXXX")
pid=
cleanup() {
    [[ -z $pid ]] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
    rm -rf -- "$tmp"
}
trap cleanup EXIT

for server; do
    "$server" --port 0 --unixsocket "$tmp/sock" --unixsocketperm 700 --save '' --appendonly no \
        --dir "$tmp" --logfile "$tmp/log" --daemonize no &
    pid=$!
    for ((i = 0; i < 200; i++)); do
        [[ $(redis-cli -s "$tmp/sock" ping 2>/dev/null) == PONG ]] && break
        sleep 0.05
    done
    version=$(redis-cli -s "$tmp/sock" info server | grep -E '^(valkey|redis)_version' | tr -d '\r' | tr '\n' ' ')
    echo "== $server: $version($runs runs of $calls calls per shape)"
    for ((r = 1; r <= runs; r++)); do
        echo "-- run $r"
        "$tool" "$tmp/sock" "$calls"
    done
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
    rm -f -- "$tmp/sock"
done
