#!/usr/bin/env bash
# mutate.sh - safety mutants the test suite must kill (issue 33, item 5).
#
#   tools/mutate.sh --all                    every mutant
#   tools/mutate.sh --share K/M              the mutants whose index i (from 0,
#                                            in --list's order) has i % M == K
#   tools/mutate.sh --only NAME[,NAME...]    those mutants
#   tools/mutate.sh --list                   each mutant: its file, what it
#                                            breaks, the tests that should
#                                            notice; nothing is built or run
#   tools/mutate.sh --control SELECTION      no mutation: every test listed
#                                            for the selected mutants must
#                                            pass on the source as it is
#
# A mutant is one small edit of the safety-critical code or of its Lua
# scripts (redlock/*/*.c, redlock/base/script-lua.h, drift/): one exact snippet of
# one file replaced by another, each written in the table at the end of
# this file as a diff ('-' lines the snippet, '+' lines what replaces it).
# The edit breaks a behaviour the library promises (the quorum, validity,
# compare before delete, the memory guard, fences, the queue's order), and
# the tests listed for it must then fail. A mutant is applied alone, to a
# copy of the source tree: REDLOCK_MUTATE_DIR (default build-mutate/) holds
# the copy (src/, brought up to date with the checkout at every run, its
# files compared by content) and its meson build (build/, -Dwerror=false: a
# mutant may leave a variable unused); the checkout itself is never
# written. The copy's mutated file is put back after each mutant, and the
# next run starts from the checkout again whatever happened to this one.
#
# For each mutant: the build (only the library and the test programs its
# tests need), then its tests, one criterion test at a time (the meson
# test's own command from `meson introspect`, with --filter=SUITE/TEST),
# quickest first, until one fails: the mutant is killed by it. A test that
# passes, skips, or matches no test (renamed) does not kill it. A test run
# that never started (its cluster did not come up: a port taken) is tried
# again on other ports, once.
#
# Output: one line per mutant,
#   mutate.sh: NAME: killed by SUITE::TEST (meson test T, S s)
#       FILE.c:LINE: the first check that failed (indented, on a line of its own)
#   mutate.sh: NAME: survived (T1, T2 passed)
#   mutate.sh: NAME: error: WHY           (does not build, a test did not run)
#   mutate.sh: NAME: no longer applies: WHY
# and last "N passed, N failed": a killed mutant passes; a survivor, an
# error, and a mutant whose snippet is not found exactly once in the
# checkout (checked for every mutant of the table at every run, selected or
# not, so that none rots unseen) fail. The exit status is 0 only if nothing
# failed. --control prints one line per test ("passed" or what it did).
#
# Ports: each test runs on the first ten ports in a row in 8100..8999,
# plus REDLOCK_TEST_PORT_OFFSET, that nothing holds (one test at a time: any
# ten will do, and tests/meson.build's block for the test is not used). An
# offset that puts them among the kernel's ephemeral ports (32768-60999 by
# default) meets ports held by other connections, and their TIME_WAITs: the
# first free ten are searched for, then waited for.
# Every test runs in a process group of its own, which is killed when the
# test ends, passed or not (masters, criterion's workers, the test's
# children: nothing it started is left running), and any redis-server whose
# pidfile lies under this run's temp dir is killed as well.
#
# CI: tools/run-tests.sh's stage 'mutate' runs `--share K/2`, K the day of
# the year mod 2 (REDLOCK_MUTATE_SHARE=K/M says another): half of the
# mutants per run, a fixed half each day, so that every mutant runs within
# two days of CI; on ports of its own (the run's offset + 12000). Time
# here (2 cores, load 2-3 from others): --all 132 s from a fresh build dir
# (26 s of it the build), about 4 s a mutant; a share of 2 about 80 s. Run
# --all before a change to the guard, the scripts or this table. A new
# mutant goes anywhere in the table (the shares move with it), with the
# test that kills it; `--control --only NAME` first shows that test passing
# as the source is.
set -uo pipefail

PROG="mutate.sh"
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)

usage() {
    sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
die() {
    echo "$PROG: $*" >&2
    exit 2
}

mode='' sel='' control=0
while (($#)); do
    case $1 in
    --all) sel=all ;;
    --list) mode=list ;;
    --control) control=1 ;;
    --only)
        (($# >= 2)) || die "--only needs NAME[,NAME...]"
        sel=only:$2
        shift
        ;;
    --share)
        (($# >= 2)) || die "--share needs K/M"
        [[ $2 =~ ^[0-9]+/[1-9][0-9]*$ ]] || die "--share: K/M, as 0/3 (got '$2')"
        (( ${2%/*} < ${2#*/} )) || die "--share $2: K must be below M"
        sel=share:$2
        shift
        ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
[[ -n $mode || -n $sel ]] || die "say which mutants: --all, --share K/M, --only NAME or --list (see --help)"
mode=${mode:-run}

DIR=$(realpath -m -- "${REDLOCK_MUTATE_DIR:-$ROOT/build-mutate}")
SRC=$DIR/src
BUILD=$DIR/build
# The copy is made by deleting what the checkout does not have: it must be
# a dir of its own, never the checkout or around it, and inside it only
# under a build* dir (which the copy leaves out).
case $SRC/ in
"$ROOT"/build*/*) ;;
"$ROOT"/*) die "REDLOCK_MUTATE_DIR inside the checkout must be a build* dir (got $DIR)" ;;
esac
case $ROOT/ in
"$DIR"/*) die "REDLOCK_MUTATE_DIR must not contain the checkout (got $DIR)" ;;
esac
# ... and one this script made (its stamp), or a new or empty one.
if [[ -d $DIR && ! -f $DIR/mutate.stamp && -n $(ls -A -- "$DIR") ]]; then
    die "$DIR is not empty and was not made by $PROG: set REDLOCK_MUTATE_DIR to a new dir"
fi
OFFSET=${REDLOCK_TEST_PORT_OFFSET:-0}
[[ $OFFSET =~ ^[0-9]+$ ]] || die "REDLOCK_TEST_PORT_OFFSET: not a number: '$OFFSET'"
running='' # the process group of the test running now

# Kill every redis-server whose pidfile lies under $TMP (a test killed
# before its with-cluster.sh could stop its masters).
reap_servers() {
    local f pid
    while IFS= read -r -d '' f; do
        pid=$(cat -- "$f" 2>/dev/null) || continue
        [[ $pid =~ ^[0-9]+$ ]] || continue
        case $(cat "/proc/$pid/comm" 2>/dev/null) in
        redis-server* | valkey-server*) kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null ;;
        esac
    done < <(find "$TMP" -name redis.pid -print0 2>/dev/null)
}

# End the test's process group: TERM (with-cluster.sh stops its masters),
# then KILL what is left.
stop_group() {
    local g=$1 k
    kill -TERM -- "-$g" 2>/dev/null || return 0
    for ((k = 0; k < 50; k++)); do
        kill -0 -- "-$g" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$g" 2>/dev/null
}

# shellcheck disable=SC2317  # invoked by the traps
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -z $running ]] || stop_group "$running"
    reap_servers
    rm -rf -- "$TMP"
    exit "$rc"
}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-mutate.XXXXXX") || die "mktemp failed"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export REDLOCK_TEST_TMPDIR=$TMP

# ---- the helper: the table, the copy, meson's tests, free ports -------------

cat >"$TMP/helper.py" <<'PY'
import json, os, shlex, shutil, socket, sys, time

def table(path):
    muts, cur = [], None
    for ln, line in enumerate(open(path, encoding='utf-8'), 1):
        line = line.rstrip('\n')
        where = f'mutant table line {ln}'
        if line.startswith('@ '):
            parts = line.split()
            if len(parts) != 3:
                sys.exit(f'{where}: "@ NAME FILE" expected')
            cur = {'name': parts[1], 'file': parts[2], 'what': [], 'kill': [], 'old': [], 'new': []}
            muts.append(cur)
        elif not line.strip() or cur is None and line.startswith('#'):
            continue
        elif cur is None:
            sys.exit(f'{where}: text before the first mutant')
        elif line.startswith('# '):
            cur['what'].append(line[2:])
        elif line.startswith('kill: '):
            parts = line[6:].split()
            if len(parts) != 2 or '/' not in parts[1]:
                sys.exit(f'{where}: "kill: MESON_TEST SUITE/TEST" expected')
            cur['kill'].append(parts)
        elif line[0] == '-':
            cur['old'].append(line[1:])
        elif line[0] == '+':
            cur['new'].append(line[1:])
        else:
            sys.exit(f'{where}: unexpected line: {line}')
    seen = set()
    for m in muts:
        if m['name'] in seen:
            sys.exit(f'mutant {m["name"]}: named twice')
        seen.add(m['name'])
        if not m['old'] or not m['kill'] or m['old'] == m['new']:
            sys.exit(f'mutant {m["name"]}: needs a snippet, a change and a test that kills it')
    return muts

def find(muts, name):
    for m in muts:
        if m['name'] == name:
            return m
    sys.exit(f'no mutant {name}')

def occurrences(m, root):
    try:
        text = open(os.path.join(root, m['file']), encoding='utf-8').read()
    except OSError as e:
        return '', f'{m["file"]}: {e.strerror} (the mutant no longer applies)'
    n = text.count('\n'.join(m['old']))
    if n != 1:
        return text, f'{m["file"]}: its snippet occurs {n} times, not once (first line: {m["old"][0].strip()})'
    return text, None

EXCLUDE_TOP = ('build', '.git', '.deps', '.cluster', 'out')

def excluded(rel):
    top = rel.split('/', 1)[0]
    base = rel.rsplit('/', 1)[-1]
    return (top.startswith(EXCLUDE_TOP) or base == '__pycache__' or base.endswith('.o')
            or base.endswith('.profraw'))

def sync(src, dst):
    """dst becomes a copy of src (minus build dirs and the like); files
    compared by content, a copied one gets a new mtime (ninja rebuilds)."""
    want = set()
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = '' if rel_dir == '.' else rel_dir + '/'
        keep = []
        for d in dirnames:
            rel = rel_dir + d
            if excluded(rel):
                continue
            if os.path.islink(os.path.join(dirpath, d)):
                filenames.append(d)
            else:
                keep.append(d)
                want.add(rel)
                os.makedirs(os.path.join(dst, rel), exist_ok=True)
        dirnames[:] = keep
        for f in filenames:
            rel = rel_dir + f
            if excluded(rel):
                continue
            want.add(rel)
            s, d = os.path.join(src, rel), os.path.join(dst, rel)
            if os.path.islink(s):
                t = os.readlink(s)
                if not (os.path.islink(d) and os.readlink(d) == t):
                    if os.path.lexists(d):
                        shutil.rmtree(d) if os.path.isdir(d) and not os.path.islink(d) else os.unlink(d)
                    os.symlink(t, d)
                continue
            if os.path.islink(d) or (os.path.exists(d) and not os.path.isfile(d)):
                shutil.rmtree(d) if os.path.isdir(d) and not os.path.islink(d) else os.unlink(d)
            if not os.path.exists(d) or os.path.getsize(s) != os.path.getsize(d) or \
                    open(s, 'rb').read() != open(d, 'rb').read():
                shutil.copyfile(s, d)
            shutil.copymode(s, d)
    for dirpath, dirnames, filenames in os.walk(dst, topdown=False):
        rel_dir = os.path.relpath(dirpath, dst)
        rel_dir = '' if rel_dir == '.' else rel_dir + '/'
        for f in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            if rel_dir + f not in want:
                os.unlink(os.path.join(dirpath, f))
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if rel_dir + d not in want and os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)

def tests(build):
    return {t['name']: t for t in json.load(open(os.path.join(build, 'tests.json')))}

def bindable(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as redis-server binds
    try:
        s.bind(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()

def free_block(offset):
    """A base port B in 8100..8990 whose ten ports B..B+9 (+ offset) nothing
    holds; waits for one up to two minutes (a TIME_WAIT lasts one)."""
    for _ in range(120):
        run = 0
        for p in range(8100, 9000):
            run = run + 1 if bindable(p + offset) else 0
            if run == 10:
                return p - 9
        time.sleep(1)
    sys.exit('no ten free ports in a row in 8100..8999 (+ the offset) for two minutes')

def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'sync':
        sync(*args)
        return
    if cmd == 'targets':  # BUILD TEST...: the ninja targets they need
        build, names = args[0], args[1:]
        ts = tests(build)
        files = {}
        for t in json.load(open(os.path.join(build, 'targets.json'))):
            files[t['id']] = [os.path.relpath(f, build) for f in t['filename']]
        out = set()
        for n in names:
            if n not in ts:
                sys.exit(f'no meson test named {n}')
            for d in ts[n]['depends']:
                out.update(files.get(d, []))
        print('\n'.join(sorted(out)))
        return
    if cmd == 'cmd':  # BUILD TEST FILTER OFFSET: timeout, then the command line
        build, name, filt, offset = args
        t = tests(build).get(name)
        if t is None:
            sys.exit(f'no meson test named {name}')
        argv = list(t['cmd'])
        if '--' in argv and '-p' in argv[:argv.index('--')]:  # a cluster test
            argv[argv.index('-p') + 1] = str(free_block(int(offset)))
        argv.append('--filter=' + filt)
        env = ['%s=%s' % kv for kv in sorted(t.get('env', {}).items())]
        print(t.get('timeout') or 120)
        print(' '.join(shlex.quote(a) for a in ['env'] + env + argv))
        return
    muts = table(args[0])
    if cmd == 'names':  # TABLE: index, name, file, kill tests (TEST=FILTER ...)
        for i, m in enumerate(muts):
            print('%d\t%s\t%s\t%s' % (i, m['name'], m['file'], ' '.join('%s=%s' % tuple(k) for k in m['kill'])))
    elif cmd == 'list':
        for i, m in enumerate(muts):
            print('%2d %s (%s)' % (i, m['name'], m['file']))
            for w in m['what']:
                print('     ' + w)
            for k in m['kill']:
                print('     killed by: %s %s' % tuple(k))
    elif cmd == 'check':  # TABLE ROOT: every mutant applies to ROOT
        bad = 0
        for m in muts:
            err = occurrences(m, args[1])[1]
            if err:
                print('%s\t%s' % (m['name'], err))
                bad += 1
        sys.exit(1 if bad else 0)
    elif cmd == 'apply':  # TABLE NAME ROOT
        m = find(muts, args[1])
        text, err = occurrences(m, args[2])
        if err:
            sys.exit(err)
        text = text.replace('\n'.join(m['old']), '\n'.join(m['new']))
        with open(os.path.join(args[2], m['file']), 'w', encoding='utf-8') as f:
            f.write(text)
    else:
        sys.exit(f'unknown helper command {cmd}')

try:
    main()
except BrokenPipeError:  # --list | head
    os._exit(0)
PY

py() {
    python3 "$TMP/helper.py" "$@"
}

# The table: the here-document at the end of this file.
sed -n "/^: <<'__MUTANTS__'\$/,/^__MUTANTS__\$/p" "${BASH_SOURCE[0]}" | sed '1d;$d' >"$TMP/table"
py names "$TMP/table" >"$TMP/names" || die "the mutant table is malformed (above)"

if [[ $mode == list ]]; then
    py list "$TMP/table"
    exit 0
fi

# ---- which mutants --------------------------------------------------------------

declare -a name=() file=() kills=()
while IFS=$'\t' read -r _ n f k; do
    name+=("$n") file+=("$f") kills+=("$k")
done <"$TMP/names"
total=${#name[@]}
selected=()
case $sel in
all) selected=("${!name[@]}") ;;
share:*)
    k=${sel#share:} m=${k#*/} k=${k%/*}
    for i in "${!name[@]}"; do ((i % m == k)) && selected+=("$i"); done
    ;;
only:*)
    IFS=, read -r -a want <<<"${sel#only:}"
    for w in "${want[@]}"; do
        found=''
        for i in "${!name[@]}"; do [[ ${name[i]} == "$w" ]] && found=$i; done
        [[ -n $found ]] || die "no mutant '$w' (see --list)"
        selected+=("$found")
    done
    ;;
esac

passed=0 failed=0
started=$SECONDS
say() { echo "$PROG: $*"; }

# ---- the copy and its build -------------------------------------------------------

# Does every mutant of the table still apply to the checkout? One that does
# not fails now, selected or not.
declare -A rotten=()
while IFS=$'\t' read -r n why; do
    [[ -n $n ]] || continue
    rotten[$n]=1
    say "$n: no longer applies: $why"
    failed=$((failed + 1))
done < <(py check "$TMP/table" "$ROOT")

{ mkdir -p "$SRC" && touch "$DIR/mutate.stamp"; } || die "cannot make $SRC"
py sync "$ROOT" "$SRC" || die "cannot copy the tree into $SRC"
if [[ ! -f $BUILD/meson-private/coredata.dat ]]; then
    say "configuring $BUILD (from $SRC)"
    meson setup "$BUILD" "$SRC" -Dwerror=false -Dtests=enabled -Db_sanitize=none \
        >"$TMP/setup.log" 2>&1 || { cat "$TMP/setup.log"; die "meson setup $BUILD failed"; }
fi
# Brings build.ninja up to date with the copy's meson.build files.
ninja -C "$BUILD" build.ninja >"$TMP/regen.log" 2>&1 ||
    { cat "$TMP/regen.log"; die "meson could not regenerate $BUILD"; }
{ meson introspect --tests "$BUILD" >"$BUILD/tests.json" &&
    meson introspect --targets "$BUILD" >"$BUILD/targets.json"; } || die "meson introspect $BUILD failed"

# The meson tests the selected mutants name, and what ninja must build.
declare -A need=()
for i in "${selected[@]}"; do
    for kt in ${kills[i]}; do need[${kt%%=*}]=1; done
done
if ((${#need[@]})); then
    mapfile -t targets < <(py targets "$BUILD" "${!need[@]}") || die "a mutant names a meson test that does not exist (above)"
else
    targets=()
fi

build() {
    nice -n 5 ninja -C "$BUILD" "${targets[@]}" >"$TMP/build.log" 2>&1
}

if ((${#selected[@]})); then
    say "building the unmutated copy in $BUILD (${#targets[@]} targets)"
    t0=$SECONDS
    build || { tail -n 40 "$TMP/build.log"; die "the unmutated copy does not build (above)"; }
    say "built in $((SECONDS - t0)) s"
fi

# ---- one test ------------------------------------------------------------------------

# run_test TEST FILTER: criterion test FILTER (SUITE/TEST) of meson test
# TEST, alone, on the build. Sets `verdict`: pass, fail (then `failed_by`,
# SUITE::TEST, and `how`), or error (then `why`).
run_test() {
    local test=$1 filter=$2 log=$TMP/test.log to line pid rc t0 ran tapped
    verdict=error why='' failed_by='' how=''
    for _ in 1 2; do
        { read -r to && read -r line; } < <(py cmd "$BUILD" "$test" "$filter" "$OFFSET") ||
            { why="no command for meson test $test"; return; }
        local -a cmd
        eval "cmd=($line)"
        (cd "$BUILD" && exec setsid "${cmd[@]}") >"$log" 2>&1 &
        pid=$!
        running=$pid
        t0=$SECONDS
        while kill -0 "$pid" 2>/dev/null && ((SECONDS - t0 < to)); do
            sleep 0.2
        done
        local timed_out=0
        if kill -0 "$pid" 2>/dev/null; then
            timed_out=1
            stop_group "$pid"
        fi
        wait "$pid"
        rc=$?
        stop_group "$pid" # what the test left behind
        running=''
        reap_servers
        tapped=$(grep -c '^TAP version' "$log")
        ran=$(grep -E '^(not )?ok - ' "$log" | grep -vc '# SKIP')
        failed_by=$(sed -n 's/^not ok - \([^ ]*\).*/\1/p' "$log" | head -n 1)
        if [[ -n $failed_by ]]; then
            verdict=fail
            # Its first failed check, as criterion's TAP writes them: "  -
            # FILE.c:LINE: |+" and the message on the next line, the
            # last failure first; or what ended the test (a signal).
            how=$(awk '/^not ok - / { n++; if (n == 1 && /unexpected signal|timed out|crash/) { sub(/^not ok - [^ ]+ */, ""); sig = $0 } }
                       n == 1 && /^  \.\.\.$/ { exit }
                       n == 1 && /^  - [^ ]+\.c:[0-9]+: / { at = $2; want = 1; next }
                       want { sub(/^ +/, ""); first = at " " $0; want = 0 }
                       END { print first ? first : sig }' "$log" | LC_ALL=C tr -c '[:print:]\n' '?')
            how=${how:0:200}
            return
        fi
        if ((tapped && timed_out)); then
            verdict=fail failed_by=${filter/\//::} how="timed out after $to s"
            return
        fi
        if ((tapped && rc != 0)); then
            verdict=fail failed_by=${filter/\//::} how="exit status $rc"
            return
        fi
        if ((tapped && ran == 0)); then
            why="$test: no test ran for --filter=$filter (renamed, or it skipped: $(grep -m1 '# SKIP' "$log" | sed 's/.*# SKIP //'))"
            return
        fi
        if ((tapped)); then
            verdict=pass
            return
        fi
        # It never started: its cluster did not come up (a port taken
        # between our look and the servers' bind). Once more.
        why="$test: did not start: $(grep -m1 -E 'cluster-up.sh|with-cluster.sh|error' "$log" || tail -n 1 "$log")"
        cp -- "$log" "$TMP/nostart.log"
    done
}

# ---- control: the tests with no mutation ---------------------------------------------

if ((control)); then
    for i in "${selected[@]}"; do
        for kt in ${kills[i]}; do
            t=${kt%%=*} f=${kt#*=}
            t0=$SECONDS
            run_test "$t" "$f"
            case $verdict in
            pass) say "control ${name[i]}: $t $f passed ($((SECONDS - t0)) s)"; passed=$((passed + 1)) ;;
            fail)
                say "control ${name[i]}: $t $f FAILED without a mutation:"
                grep -A12 '^not ok' "$TMP/test.log" | head -n 30 | sed 's/^/    /'
                failed=$((failed + 1))
                ;;
            *) say "control ${name[i]}: error: $why"; failed=$((failed + 1)) ;;
            esac
        done
    done
    say "done in $((SECONDS - started)) s"
    echo "$passed passed, $failed failed"
    ((failed == 0))
    exit
fi

# ---- the mutants -------------------------------------------------------------------------

for i in "${selected[@]}"; do
    n=${name[i]} f=${file[i]}
    [[ -z ${rotten[$n]:-} ]] || continue # said above
    t0=$SECONDS
    if ! py apply "$TMP/table" "$n" "$SRC" 2>"$TMP/apply.log"; then
        say "$n: no longer applies: $(cat "$TMP/apply.log")"
        failed=$((failed + 1))
        continue
    fi
    result=''
    if ! build; then
        result="error: does not build: $(grep -m1 'error:' "$TMP/build.log")"
    else
        survived=()
        for kt in ${kills[i]}; do
            t=${kt%%=*} flt=${kt#*=}
            run_test "$t" "$flt"
            case $verdict in
            fail)
                result="killed by $failed_by (meson test $t, $((SECONDS - t0)) s)${how:+$'\n'    $how}"
                break
                ;;
            pass) survived+=("$t $flt") ;;
            *) result="error: $why"; break ;;
            esac
        done
        if [[ -z $result ]]; then
            result="survived ($(IFS=,; echo "${survived[*]}") passed; $((SECONDS - t0)) s)"
        fi
    fi
    # The copy's file back as the checkout has it (a new mtime: rebuilt
    # next time).
    cp -- "$ROOT/$f" "$SRC/$f" || die "cannot put $SRC/$f back"
    say "$n: $result"
    if [[ $result == killed* ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done

say "${#selected[@]} of $total mutants in $((SECONDS - started)) s"
echo "$passed passed, $failed failed"
((failed == 0))
exit

# ---- the mutants ---------------------------------------------------------------------------
# "@ NAME FILE", then "# " lines (what it breaks), "kill: MESON_TEST
# SUITE/TEST" lines (the tests that should notice, quickest first), and
# the snippet as '-' lines, its replacement as '+' lines (the character
# after '-' or '+' starts the line as it is in the file). The snippet must
# occur exactly once in FILE.
# shellcheck disable=SC2317  # read by the sed above, never run
: <<'__MUTANTS__'

@ quorum-half redlock/api/client.c
# The quorum is N/2 + 1 masters; with N/2, two clients that each hold two
# of five masters both have "a majority".
kill: contention contention/held_on_a_majority_is_econflict_after_every_retry
-    c->quorum = (uint32_t)(n / 2 + 1);
+    c->quorum = (uint32_t)(n / 2);

@ validity-no-elapsed redlock/kinds/acquire.c
# Validity forgets the time the attempt took: a quorum reached after the
# ttl still hands out a lease.
kill: faults-pause-quorum faults_pause/quorum_reached_after_the_ttl_is_eexpired_and_no_lease_is_returned
-    int64_t validity_ms = drift_validity_ms(a->w.ttl_ms, elapsed, c->cfg.drift_factor);
+    int64_t validity_ms = drift_validity_ms(a->w.ttl_ms, 0, c->cfg.drift_factor);

@ validity-no-margin redlock/kinds/acquire.c
# Validity without the drift margin: ttl - elapsed, as if the masters'
# clocks ran exactly at ours.
kill: acquire acquire/validity_is_positive_and_at_most_ttl_minus_margin
-    int64_t validity_ms = drift_validity_ms(a->w.ttl_ms, elapsed, c->cfg.drift_factor);
+    int64_t validity_ms = (int64_t)a->w.ttl_ms - (int64_t)(elapsed / 1000);

@ margin-no-drift-term drift/drift.c
# The margin keeps its 2 ms and loses its drift term (ttl * factor), for
# every acquire and extend.
kill: drift validity/is_ttl_minus_elapsed_minus_margin
kill: acquire acquire/validity_is_positive_and_at_most_ttl_minus_margin
-    return (uint64_t)rate_us + DRIFT_FIXED_US;
+    return DRIFT_FIXED_US;

@ validity-from-decision redlock/kinds/acquire.c
# The lock's validity runs from the decision instead of the attempt's
# start: a slow quorum adds its time to the lease.
kill: faults-pause-quorum faults_pause/a_lock_s_validity_runs_from_its_attempt_not_from_its_quorum
-    rl_lock_set_valid_until(lock, op->attempt_us + (uint64_t)validity_ms * 1000);
+    rl_lock_set_valid_until(lock, rl_now_us() + (uint64_t)validity_ms * 1000);

@ release-no-compare redlock/base/script.c
# The release script's common case deletes the key without comparing its
# value with our token.
kill: release release/wrong_token_is_enotheld_and_deletes_nothing
-        "  if v == ARGV[1] and redis.call('exists', KEYS[2]) == 0 then\n"
+        "  if redis.call('exists', KEYS[2]) == 0 then\n"

@ release-hand-over-no-compare redlock/base/script.c
# The release script's general case (sets, waiters, a failed attempt's
# cleanup) frees and hands on a key whatever it holds.
kill: contention contention/held_resource_is_econflict_with_every_vote_held
-        "  if ours(v, ARGV[1]) then\n"
+        "  if v then\n"

@ extend-no-compare redlock/base/script.c
# The extend script sets the new ttl on a key that holds another's token.
kill: extend extend/wrong_token_is_enotheld_and_leaves_the_holder_alone
-        "  if not ours(v, ARGV[1]) then return -1 end\n"
+

@ fast-ok-without-served redlock/wire/acquire.c
# The fast path counts an OK from a master whose marker is not served
# (flushed, evicted, or its window running).
kill: memory memory/flushall_refuses_a_client_that_met_the_master_before
-    else if (g->served == RL_UNSERVED)
+    else if (0)

@ vote-counts-unchecked redlock/node/node-memory.c
# An OK counts on a connection whose CHECK never answered as a Redis does:
# nobody knows who the master is, nor what it remembers.
kill: bad-input-masters bad_input/a_master_whose_check_fails_never_counts
-    if (n->env->cfg->restart_guard && !n->trust.checked) {
+    if (0) {

@ check-pending-counts redlock/base/script.c
# CHECK takes a pending (reborn, unsettled) marker for one whose window
# has passed, and marks it served: a master that forgot counts at once.
kill: memory memory/restart_without_persistence_refuses_a_fresh_client
-        "if f[5] then state = 2 elseif not f[4] and age < window then state = 1\n"
+        "if false then state = 2 elseif not f[4] and age < window then state = 1\n"

@ heard-pending-counts redlock/base/script-lua.h
# The acquire script's marker check (HEARD) ignores the pending state: a
# reborn master grants, and counts, before its window is settled.
kill: memory memory/flushall_refuses_a_fresh_client
-"  if m[3] then\n"
+"  if false then\n"

@ check-adopts-other-run redlock/base/script.c
# CHECK keeps a marker another process wrote (a restart that reloaded a
# snapshot, a copy, a promoted replica): its data may lack grants.
kill: memory memory/restart_from_an_older_snapshot_refuses_a_fresh_client
-        "elseif m[1] ~= run then\n"
+        "elseif false then\n"

@ moved-not-reborn redlock/base/script.c
# CHECK ignores 'moved': the server a master's name now points to counts
# at once, though it never saw what the old one granted.
kill: names-move names/a_name_moved_onto_a_server_that_counts_is_reborn_there_before_it_votes
-        "if ARGV[2] == 'moved' then\n"
+        "if false then\n"

@ moved-not-said redlock/node/node.c
# The client follows a name to its new address without saying so: the
# CHECK there does not make the new server reborn.
kill: names-move names/a_name_moved_onto_a_server_that_counts_is_reborn_there_before_it_votes
-            n->moved = true;
+

@ settle-any-birth redlock/base/script.c
# SETTLE applies to whatever rebirth the master is in, not only the one it
# was measured for: a stale settle lets a later rebirth count early.
kill: attack-stale stale/a_settle_measured_before_a_and_delivered_late_refuses_b_while_a_holds
-        "if ARGV[1] == '' or m[1] ~= ARGV[1] or not m[2] then return 0 end\n"
+        "if not m[2] then return 0 end\n"

@ settle-window-no-drift redlock/kinds/memory.c
# A measured window loses its two rate allowances: the lease left on
# another master's clock, taken as is on the reborn one's.
kill: memory memory/a_measured_window_has_its_rate_allowances
-        window = (uint32_t)(s->longest_ms + 2 * (int64_t)ceil((double)s->longest_ms * d) + 2);
+        window = (uint32_t)(s->longest_ms);

@ settle-no-wait redlock/kinds/memory.c
# The settle measures the fleet as soon as a master is seen pending, not
# RL_QUORUM_MAX_MS after: an attempt that counted its vote from before
# the rebirth may still write its lease after the measure.
kill: memory memory/a_settle_waits_out_the_attempts_that_may_have_counted_the_master
-    rl_monotime ripe = now + (credit < wait ? wait - credit : 0);
+    rl_monotime ripe = now;

@ settle-fence-not-raised redlock/base/script.c
# SETTLE leaves a reborn master's fence counter at 0 instead of raising it
# to the fleet's: a quorum of reborn masters hands out a fence that went
# back.
kill: memory memory/a_settle_raises_the_fence_counter_to_the_fleets
-        "raise(KEYS[2], ARGV[4])\n"
+

@ fence-no-incr redlock/base/script.c
# The acquire script reads the fence counter instead of raising it.
kill: fence fence/tokens_are_positive_and_grow_for_one_client
-        "  f = redis.call('incr', KEYS[fk + n])\n"
+        "  f = tonumber(redis.call('get', KEYS[fk + n]) or '0')\n"

@ fence-old-counter-not-above redlock/base/script.c
# A per-resource counter from before one counter per master is matched,
# not passed: the first fence after the change repeats the last one.
kill: fence fence/a_counter_from_before_the_change_keeps_fences_growing
-        "    if old[j] and old[j] >= top then top = old[j] + 1 end\n"
+        "    if old[j] and old[j] >= top then top = old[j] end\n"

@ fence-not-the-largest redlock/kinds/acquire-votes.c
# The fence is the last OK's counter, not the largest of the quorum's.
kill: fence fence/the_fence_is_the_largest_of_the_counters_that_granted
-    if (fence > a->att.fence)
-        a->att.fence = fence;
+    a->att.fence = fence;

@ cleanup-skips-unanswered redlock/kinds/acquire.c
# A failed attempt cleans up only where a master answered: a master still
# silent (or timed out) keeps the token its late SET writes.
kill: faults-pause-quorum faults_pause/three_paused_is_enoquorum_after_about_the_node_timeout
-        int kind = op->out.votes[i].kind;
+        int kind = op->out.votes[i].kind;
+        if (kind == REDLOCK_VOTE_PENDING || kind == REDLOCK_VOTE_TIMEOUT)
+            continue;

@ hand-over-to-the-tail redlock/base/script-lua.h
# A release hands the key to the newest waiter instead of the queue's
# head.
kill: wait wait/waiters_of_one_client_are_served_oldest_first
-"    local head = redis.call('zrange', q, 0, 0)[1]\n"
+"    local head = redis.call('zrange', q, -1, -1)[1]\n"

@ reservation-for-anyone redlock/base/script.c
# A key reserved for the queue's head is taken by any waiter's attempt.
kill: queue queue/a_dead_waiter_is_skipped_after_one_missed_reservation
-        "    elseif v and not (queued and v == mine) then\n"
+        "    elseif v and not (queued and string.byte(v, 1) == 1) then\n"

@ late-quorum-unbounded redlock/core/op.c
# With the memory guard on, a majority may come any time after the
# attempt started, not within RL_QUORUM_MAX_MS: a settle that waited that
# long no longer covers the attempt's votes.
kill: faults-pause-quorum faults_pause/a_quorum_later_than_500_ms_is_refused_with_the_guard_on
-    if (!c->cfg.restart_guard || elapsed <= (uint64_t)RL_QUORUM_MAX_MS * 1000)
+    if (1)
@ pass-no-compare redlock/base/script.c
# The PASS script (a local hand-off) takes the key over whatever it holds:
# another client's lease is overwritten.
kill: handoff handoff/a_pass_never_takes_over_another_clients_key
-        "if v ~= p and v ~= p .. '\\2' then return {-4} end\n"
+        "if not v then return {-4} end\n"

@ pass-acquire-no-compare redlock/base/script.c
# The acquire script's takeover (a fenced or set pass) counts any value as
# the passing token's.
kill: handoff handoff/a_pass_never_takes_over_another_clients_key
-        "    if prev and v and (v == prev or v == prev .. '\\2') then\n"
+        "    if prev and v then\n"

@ pass-keep-ttl redlock/base/script.c
# The pass keeps the key's old expiry while the new holder counts a full
# ttl from its attempt's start: its validity outlives the masters' lease.
kill: handoff handoff/a_release_passes_the_lock_to_a_waiter_of_its_client_without_a_release_round
-        "redis.call('set', KEYS[1], ARGV[1] .. string.sub(v, #p + 1), 'PX', ARGV[2])\n"
+        "redis.call('set', KEYS[1], ARGV[1] .. string.sub(v, #p + 1), 'KEEPTTL')\n"

@ pass-unbounded redlock/kinds/handoff.c
# No bound B: a client passes among its own waiters for ever while another
# client waits.
kill: handoff handoff/a_process_that_would_starve_another_is_cut_off_after_b
-    if (c->freeing || lock_run(lock) >= c->cfg.local_run_max)
+    if (c->freeing || c->cfg.local_run_max < 2)
__MUTANTS__
