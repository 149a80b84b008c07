#!/usr/bin/env bash
# cluster-up.sh - N independent redis-server masters on 127.0.0.1 for redlock.
#
# Redlock needs N masters that share nothing: no replication, no cluster bus.
# This script starts them (one dir, pidfile, log and config each), and lets
# tests and demos break them on purpose: SIGKILL, SIGSTOP/SIGCONT, restart
# with or without persistence. Several clusters coexist by base port and dir.
#
# The options given to `start` are saved in DIR/cluster.env, so later
# commands on the same dir (restart, cli, ...) reuse the ports, password and
# persistence mode without repeating them.
#
# The server is redis-server from PATH, or $REDLOCK_SERVER: any server that
# speaks the protocol and reads redis.conf, e.g. Valkey (tools/deps.sh
# --valkey prints the path of one). It is saved with the rest, so a restart
# runs the same server as the start did.
#
# Masters run with `daemonize no`, detached from our stdio and immune to
# SIGHUP, but left in the caller's process group: a test runner that kills
# its test's process group (meson does, on timeout) takes the masters with it
# instead of leaving them behind. Knowing the pid from the start also lets
# `start` report a master that dies at once (port in use) without waiting.
set -euo pipefail

PROG="cluster-up.sh"
HOST=127.0.0.1

usage() {
    cat <<EOF
usage: $PROG [-n N] [-p BASEPORT] [-d DIR] [--persist MODE | --aof] [--requirepass PASS] COMMAND [I]

Runs N independent redis-server masters on $HOST:BASEPORT..BASEPORT+N-1.

options:
  -n N                  number of masters (default 5)
  -p BASEPORT           port of master 0 (default 7000)
  -d DIR                state dir (default ./.cluster-BASEPORT)
  --persist MODE        persistence: none (default: a restarted master comes
                        back empty), rdb (Redis's default snapshots, save 3600 1
                        300 100 60 10000; SAVE by hand with 'cli I SAVE'),
                        everysec (appendonly yes, appendfsync everysec) or
                        always (appendonly yes, appendfsync always)
  --aof                 the same as --persist always
  --requirepass PASS    masters require AUTH PASS
  -h, --help            this text

commands (I is a 0-based master index):
  start                 start all masters, wait until each answers PING, declare
                        them empty (a memory marker that counts at once: see
                        redlock_declare_empty in redlock.h), print
                        the masters list (host:port,host:port,...) on stdout
  stop                  stop all masters (paused ones too) and wait for them
  status                one line per master: index address pid running|paused|dying|dead
  kill I                SIGKILL master I
  pause I               SIGSTOP master I (socket stays open, no answers)
  resume I              SIGCONT master I
  restart I             start a killed master again (same port and dir)
  heal                  start every dead master, resume every paused one
  cli I ARGS...         redis-cli against master I (with the password, if any)

Options given to start are saved in DIR/cluster.env and reused by later
commands on the same DIR.

environment:
  REDLOCK_SERVER        server binary for start (default redis-server), e.g.
                        the valkey-server that tools/deps.sh --valkey prints
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

# --- arguments ---------------------------------------------------------------

opt_n='' opt_port='' opt_dir='' opt_persist='' opt_pass='' opt_pass_set=0
command='' index=''
cli_args=()

while (($#)); do
    if [[ $command == cli && -n $index ]]; then
        cli_args=("$@")
        break
    fi
    case $1 in
    -n)
        (($# >= 2)) || usage_error "-n needs a value"
        opt_n=$2
        shift 2
        ;;
    -p)
        (($# >= 2)) || usage_error "-p needs a value"
        opt_port=$2
        shift 2
        ;;
    -d)
        (($# >= 2)) || usage_error "-d needs a value"
        opt_dir=$2
        shift 2
        ;;
    --aof)
        opt_persist=always
        shift
        ;;
    --persist)
        (($# >= 2)) || usage_error "--persist needs a value"
        case $2 in
        none | rdb | everysec | always) opt_persist=$2 ;;
        *) usage_error "--persist must be none, rdb, everysec or always, got '$2'" ;;
        esac
        shift 2
        ;;
    --requirepass)
        (($# >= 2)) || usage_error "--requirepass needs a value"
        opt_pass=$2
        opt_pass_set=1
        shift 2
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*)
        usage_error "unknown option '$1'"
        ;;
    *)
        if [[ -z $command ]]; then
            command=$1
        elif [[ -z $index ]]; then
            index=$1
        else
            usage_error "unexpected argument '$1'"
        fi
        shift
        ;;
    esac
done

[[ -n $command ]] || usage_error "no command given"
case $command in
start | stop | status | heal)
    [[ -z $index ]] || usage_error "'$command' takes no index"
    ;;
kill | pause | resume | restart | cli)
    [[ -n $index ]] || usage_error "'$command' needs a master index"
    is_uint "$index" || usage_error "bad master index '$index'"
    index=$((10#$index))
    ;;
*)
    usage_error "unknown command '$command'"
    ;;
esac

if [[ -n $opt_n ]]; then
    if ! is_uint "$opt_n" || ((10#$opt_n < 1 || 10#$opt_n > 64)); then
        usage_error "-n must be 1..64, got '$opt_n'"
    fi
    opt_n=$((10#$opt_n))
fi
if [[ -n $opt_port ]]; then
    if ! is_uint "$opt_port" || ((10#$opt_port < 1024 || 10#$opt_port > 65535)); then
        usage_error "-p must be a port 1024..65535, got '$opt_port'"
    fi
    opt_port=$((10#$opt_port))
fi
if ((opt_pass_set)); then
    [[ -n $opt_pass ]] || usage_error "--requirepass needs a non-empty password"
    [[ $opt_pass != *$'\n'* && $opt_pass != *$'\r'* ]] ||
        usage_error "--requirepass: the password cannot contain a newline"
fi

# --- settings: command line, else DIR/cluster.env, else defaults --------------

N=5
BASEPORT=7000
AOF=0
PERSIST=
PASSWORD=
SERVER=

dir=${opt_dir:-./.cluster-${opt_port:-$BASEPORT}}
if [[ $command == start ]]; then
    mkdir -p -- "$dir" || die "cannot create $dir"
fi
[[ -d $dir ]] || die "no cluster in $dir (run '$PROG ... start' first, or pass the -p/-d used then)"
DIR=$(cd -- "$dir" && pwd -P)
ENVFILE=$DIR/cluster.env

saved_n=
if [[ -f $ENVFILE ]]; then
    # Our own file, written below with printf %q.
    # shellcheck disable=SC1090
    source "$ENVFILE"
    saved_n=$N
    if [[ $command == start ]]; then
        # start takes only what it is given now; the old N is still needed
        # to find masters of an earlier run that are alive.
        N=5 BASEPORT=7000 AOF=0 PERSIST='' PASSWORD='' SERVER=''
    fi
elif [[ $command != start ]]; then
    die "no cluster in $DIR ($ENVFILE missing: run '$PROG ... start' first)"
fi
if [[ $command == start || -z $SERVER ]]; then
    # An older cluster.env has no SERVER: it was started with redis-server.
    SERVER=${REDLOCK_SERVER:-redis-server}
fi
[[ -n $opt_n ]] && N=$opt_n
[[ -n $opt_port ]] && BASEPORT=$opt_port
# An older cluster.env has AOF=0|1 and no PERSIST.
[[ -n $PERSIST ]] || { ((AOF)) && PERSIST=always || PERSIST=none; }
[[ -n $opt_persist ]] && PERSIST=$opt_persist
AOF=0
[[ $PERSIST == always ]] && AOF=1
((opt_pass_set)) && PASSWORD=$opt_pass
((BASEPORT + N - 1 <= 65535)) || usage_error "ports $BASEPORT..$((BASEPORT + N - 1)) exceed 65535"

if [[ -n $index ]] && ((index >= N)); then
    usage_error "master index $index out of range 0..$((N - 1))"
fi

if [[ -n $PASSWORD ]]; then
    export REDISCLI_AUTH=$PASSWORD
else
    unset REDISCLI_AUTH
fi

# --- one master ------------------------------------------------------------------

port_of() { echo $((BASEPORT + $1)); }
mdir_of() { echo "$DIR/$1"; }
pidfile_of() { echo "$DIR/$1/redis.pid"; }

# pid of master $1 if that process is alive and really is it (its cwd is the
# master's dir, which rules out a recycled pid), else nothing. A process on
# its way out counts as alive until its last thread is gone: a killed redis
# (several threads) shows its first thread as a zombie, or without a cwd,
# while another thread still holds the files they share, the listening
# socket among them, and a restart on the port then failed with "Address
# already in use" (seen once in 300 kills under load; wait_up also tries
# again when that happens).
live_pid() {
    local pidfile pid cwd st
    pidfile=$(pidfile_of "$1")
    [[ -r $pidfile ]] || return 0
    pid=$(<"$pidfile") || return 0
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    st=$(proc_state "$pid")
    [[ -n $st ]] || return 0
    if [[ $st == [ZX] ]] || ! cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null); then
        if threads_left "$pid"; then echo "$pid"; fi
        return 0
    fi
    [[ $cwd == "$(mdir_of "$1")" ]] || return 0
    echo "$pid"
}

# Does any thread of process $1 still run (a state other than zombie/dead)?
threads_left() {
    local t st
    for t in /proc/"$1"/task/*; do
        st=$(proc_state "$1/task/${t##*/}")
        [[ -n $st && $st != [ZX] ]] && return 0
    done
    return 1
}

# One-letter state from /proc/PID/stat (R, S, T, Z, ...), empty if gone.
# The comm field may contain spaces and parens: take what follows the last ')'.
proc_state() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    stat=${stat##*) }
    echo "${stat%% *}"
}

# running | paused | dying | dead
state_of() {
    local pid st
    pid=$(live_pid "$1")
    [[ -n $pid ]] || { echo dead; return; }
    st=$(proc_state "$pid")
    case $st in
    T | t) echo paused ;;
    '' | Z | X) echo dying ;;
    *) readlink "/proc/$pid/cwd" >/dev/null 2>&1 && echo running || echo dying ;;
    esac
}

# Quote a string for redis.conf (sdssplitargs double-quoted form).
conf_quote() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

write_conf() {
    local i=$1 mdir port
    mdir=$(mdir_of "$i")
    port=$(port_of "$i")
    mkdir -p -- "$mdir"
    {
        echo "# written by $PROG; master $i of $N"
        echo "port $port"
        echo "bind $HOST"
        echo "protected-mode no"
        echo "daemonize no"
        # No "pidfile": launch() records the pid itself. redis would rewrite
        # the same file at start-up (truncate, then write), and a reader in
        # between would see it empty and report a live master as exited.
        echo "logfile $(conf_quote "$mdir/redis.log")"
        echo "dir $(conf_quote "$mdir")"
        if [[ $PERSIST == rdb ]]; then
            echo "save 3600 1 300 100 60 10000"
        else
            echo 'save ""'
        fi
        # Fault tests stall a master with DEBUG SLEEP; redis 7 refuses DEBUG
        # unless enabled, and "local" keeps it to loopback connections.
        echo "enable-debug-command local"
        if [[ $PERSIST == always || $PERSIST == everysec ]]; then
            echo "appendonly yes"
            echo "appendfsync $PERSIST"
        else
            echo "appendonly no"
        fi
        if [[ -n $PASSWORD ]]; then
            echo "requirepass $(conf_quote "$PASSWORD")"
        fi
    } >"$mdir/redis.conf"
    chmod 600 "$mdir/redis.conf"
}

# Start master $1 in the background; its pid goes to the pidfile at once
# (redis rewrites the same pid there once it is up).
launch() {
    local i=$1 mdir pid
    mdir=$(mdir_of "$i")
    [[ -f $mdir/redis.conf ]] || write_conf "$i"
    # cd before the fork, not in the child: live_pid() checks the cwd and
    # may look before the child would have got round to it.
    cd -- "$mdir"
    nohup "$SERVER" "$mdir/redis.conf" </dev/null >>"$mdir/redis.log" 2>&1 &
    pid=$!
    cd - >/dev/null
    echo "$pid" >"$(pidfile_of "$i")"
}

ping_ok() {
    local out
    out=$(timeout 2 redis-cli -h "$HOST" -p "$(port_of "$1")" ping 2>/dev/null) || return 1
    [[ $out == PONG ]]
}

# The server answering on master $1's port: its process_id from INFO.
served_by() {
    timeout 2 redis-cli -h "$HOST" -p "$(port_of "$1")" info server 2>/dev/null |
        tr -d '\r' | sed -n 's/^process_id://p'
}

fail_master() {
    local i=$1 why=$2 log
    log=$(mdir_of "$i")/redis.log
    {
        printf '%s: master %d (%s:%d) %s\n' "$PROG" "$i" "$HOST" "$(port_of "$i")" "$why"
        if [[ -s $log ]]; then
            printf '%s: last lines of %s:\n' "$PROG" "$log"
            tail -n 8 -- "$log" | sed 's/^/    /'
        fi
    } >&2
}

# Declare the masters in "$@" empty on purpose: give each one that has no
# memory marker one that counts at once (redlock's restart guard keeps a
# master without one out of quorums for the longest ttl in use; a master
# this script just created has nothing to forget). Masters that already
# have a marker are left alone. Only 'start' does this: 'restart' and
# 'heal' stand for a crash, and a crashed master must wait its window.
# (The same as redlock_declare_empty(); the key starts with a NUL, which
# only redis-cli's quoted input can write, hence stdin.)
#
# The marker names the process that wrote it (`run`: its INFO run_id), as
# redlock_declare_empty's does: a master counts only on a marker its own
# process wrote, so a marker without `run` (or with another's) makes it
# reborn, and a snapshot of this one makes a later process reborn too.
declare_empty() {
    local i out run
    for i in "$@"; do
        run=$(timeout 2 redis-cli -h "$HOST" -p "$(port_of "$i")" info server 2>/dev/null |
            tr -d '\r' | sed -n 's/^run_id://p')
        [[ $run =~ ^[0-9a-f]{40}$ ]] ||
            { fail_master "$i" "cannot read its run_id for its memory marker"; return 1; }
        out=$(printf '%s\n' 'EVAL "if redis.call('"'"'exists'"'"', KEYS[1]) == 1 then return 0 end redis.call('"'"'hset'"'"', KEYS[1], '"'"'born'"'"', 0, '"'"'window'"'"', 0, '"'"'maxttl'"'"', 0, '"'"'served'"'"', 1, '"'"'run'"'"', ARGV[1]) return 1" 1 "\x00redlock:marker" '"$run" |
            timeout 5 redis-cli -h "$HOST" -p "$(port_of "$i")" 2>&1) ||
            { fail_master "$i" "cannot write its memory marker: $out"; return 1; }
        [[ $out == 0 || $out == 1 ]] ||
            { fail_master "$i" "cannot write its memory marker: $out"; return 1; }
    done
}

# Wait until every master in "$@" answers PING (10 s in all). On failure,
# report the first one that did not come up and return 1.
wait_up() {
    local deadline=$((SECONDS + 10)) i pid srv
    local -a todo=("$@")
    while ((${#todo[@]})); do
        local -a left=()
        for i in "${todo[@]}"; do
            pid=$(live_pid "$i")
            if [[ -z $pid ]] && ((SECONDS < deadline)) &&
                tail -n 2 -- "$(mdir_of "$i")/redis.log" 2>/dev/null | grep -q 'Address already in use'; then
                # The port was not free yet: a listening socket can outlive
                # its process's last thread by a moment (the kernel closes
                # it). Again, within the same 10 s; whatever holds the port
                # longer is named by the log that fail_master prints.
                sleep 0.05
                launch "$i"
                left+=("$i")
                continue
            fi
            if [[ -z $pid ]]; then
                fail_master "$i" "exited during startup"
                return 1
            fi
            if ping_ok "$i"; then
                srv=$(served_by "$i")
                if [[ $srv != "$pid" ]]; then
                    fail_master "$i" "port in use by another redis-server (pid ${srv:-?})"
                    return 1
                fi
            else
                left+=("$i")
            fi
        done
        todo=("${left[@]+"${left[@]}"}")
        ((${#todo[@]})) || break
        if ((SECONDS >= deadline)); then
            fail_master "${todo[0]}" "did not answer PING within 10 s"
            return 1
        fi
        sleep 0.02
    done
}

# Wait until master $1's state is one of the words in $2 (bounded).
wait_state() {
    local i=$1 want=$2 secs=${3:-5} deadline st
    deadline=$((SECONDS + secs))
    while :; do
        st=$(state_of "$i")
        [[ " $want " == *" $st "* ]] && return 0
        ((SECONDS < deadline)) || return 1
        sleep 0.01
    done
}

# Stop masters 0..$1-1: SIGCONT (a paused master cannot act on SIGTERM),
# SIGTERM (redis shuts down cleanly, flushing the AOF), SIGKILL after 10 s.
stop_all() {
    local n=$1 i pid deadline
    local -a pids=()
    for ((i = 0; i < n; i++)); do
        pid=$(live_pid "$i")
        [[ -n $pid ]] || continue
        kill -CONT "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$i")
    done
    deadline=$((SECONDS + 10))
    for i in "${pids[@]+"${pids[@]}"}"; do
        while [[ -n $(live_pid "$i") ]] && ((SECONDS < deadline)); do
            sleep 0.02
        done
        pid=$(live_pid "$i")
        if [[ -n $pid ]]; then
            printf '%s: master %d (pid %s) ignored SIGTERM; sending SIGKILL\n' "$PROG" "$i" "$pid" >&2
            kill -KILL "$pid" 2>/dev/null || true
            wait_state "$i" dead 5 || die "master $i (pid $pid) does not die"
        fi
    done
}

save_env() {
    {
        echo "# written by $PROG start; reused by later commands on this dir"
        printf 'N=%q\n' "$N"
        printf 'BASEPORT=%q\n' "$BASEPORT"
        printf 'AOF=%q\n' "$AOF"
        printf 'PERSIST=%q\n' "$PERSIST"
        printf 'PASSWORD=%q\n' "$PASSWORD"
        printf 'SERVER=%q\n' "$SERVER"
    } >"$ENVFILE.tmp"
    chmod 600 "$ENVFILE.tmp"
    mv -f "$ENVFILE.tmp" "$ENVFILE"
}

masters_list() {
    local i out=
    for ((i = 0; i < N; i++)); do
        out+="${out:+,}$HOST:$(port_of "$i")"
    done
    echo "$out"
}

need_state() {
    local st
    st=$(state_of "$1")
    [[ " $2 " == *" $st "* ]] ||
        die "master $1 ($HOST:$(port_of "$1")) is $st; '$command' needs it $3"
}

# --- commands ------------------------------------------------------------------

case $command in
start)
    if [[ $SERVER == */* ]]; then
        [[ -x $SERVER && -f $SERVER ]] || die "REDLOCK_SERVER: $SERVER is not an executable file"
        # Absolute, so that a restart from another cwd finds it.
        SERVER=$(cd -- "$(dirname -- "$SERVER")" && pwd -P)/$(basename -- "$SERVER")
    else
        command -v "$SERVER" >/dev/null ||
            die "$SERVER not found (run tools/deps.sh${REDLOCK_SERVER:+, or fix REDLOCK_SERVER})"
    fi
    command -v redis-cli >/dev/null || die "redis-cli not found (run tools/deps.sh)"
    # Masters of an earlier run in this dir (with its N) must be stopped first.
    for ((i = 0; i < (saved_n > N ? saved_n : N); i++)); do
        pid=$(live_pid "$i")
        [[ -z $pid ]] ||
            die "master $i (pid $pid) of an earlier run is still alive in $DIR; run '$PROG -d $DIR stop' first"
    done
    for ((i = 0; i < N; i++)); do
        write_conf "$i"
    done
    save_env
    for ((i = 0; i < N; i++)); do
        launch "$i"
    done
    all=()
    for ((i = 0; i < N; i++)); do all+=("$i"); done
    if ! wait_up "${all[@]}" || ! declare_empty "${all[@]}"; then
        stop_all "$N"
        exit 1
    fi
    masters_list
    ;;
stop)
    stop_all "$((saved_n > N ? saved_n : N))"
    ;;
status)
    for ((i = 0; i < N; i++)); do
        pid=$(live_pid "$i")
        printf '%d %s:%d %s %s\n' "$i" "$HOST" "$(port_of "$i")" "${pid:--}" "$(state_of "$i")"
    done
    ;;
kill)
    pid=$(live_pid "$index")
    if [[ -z $pid ]]; then
        printf '%s: master %d is already dead\n' "$PROG" "$index" >&2
        exit 0
    fi
    kill -KILL "$pid"
    wait_state "$index" dead 5 || die "master $index (pid $pid) does not die"
    ;;
pause)
    need_state "$index" "running paused" "running"
    kill -STOP "$(live_pid "$index")"
    wait_state "$index" paused 5 || die "master $index did not stop"
    ;;
resume)
    need_state "$index" "running paused" "paused"
    kill -CONT "$(live_pid "$index")"
    wait_state "$index" running 5 || die "master $index did not resume"
    ;;
restart)
    # Killed by someone else just now: give its last threads their moment.
    [[ $(state_of "$index") != dying ]] || wait_state "$index" dead 5 || true
    need_state "$index" dead "dead (kill it first)"
    launch "$index"
    wait_up "$index" || exit 1
    ;;
heal)
    started=()
    for ((i = 0; i < N; i++)); do
        case $(state_of "$i") in
        dying | dead)
            wait_state "$i" dead 5 || die "master $i (pid $(live_pid "$i")) does not die"
            launch "$i"
            started+=("$i")
            ;;
        paused)
            kill -CONT "$(live_pid "$i")"
            wait_state "$i" running 5 || die "master $i did not resume"
            ;;
        esac
    done
    if ((${#started[@]})); then
        wait_up "${started[@]}" || exit 1
    fi
    ;;
cli)
    command -v redis-cli >/dev/null || die "redis-cli not found (run tools/deps.sh)"
    exec redis-cli -h "$HOST" -p "$(port_of "$index")" "${cli_args[@]+"${cli_args[@]}"}"
    ;;
esac
