#!/usr/bin/env bash
# deps.sh - what redlock builds, tests and benches with, on Debian 12.
#
#   tools/deps.sh [--hiredis12] [--valkey] [--valkey9] [--redis8]
#                 [--redis80] [--valkey81] [--promtool]
#
# Always: the Debian 12 packages (compilers, meson, libhiredis-dev 0.14.1,
# libevent, OpenSSL, criterion, redis-server, abigail-tools, ...). dpkg is
# asked first and apt only when something is missing (apt-get update, then
# install), so a second run is instant, needs no network and prints one line.
#
#   --hiredis12   also hiredis 1.2.x with TLS (hiredis_ssl), built from the
#                 source of Debian's own package (trixie's hiredis,
#                 BSD-3-Clause) into DEPS/hiredis-1.2/. Prints that prefix.
#                 Static archives only, compiled -fPIC (they end up inside
#                 libredlock.so): nothing to find at run time, no
#                 LD_PRELOAD or LD_LIBRARY_PATH. Use it with
#                   meson setup B -Dpkg_config_path=PREFIX/lib/pkgconfig
#   --valkey      also Valkey 8: valkey-server from bookworm-backports,
#                 unpacked (dpkg -x) into DEPS/valkey-8/ and checked to
#                 start. Prints the server's path. Use it with
#                   REDLOCK_SERVER=PATH meson test ... (see cluster-up.sh)
#   --valkey9     also Valkey 9 (SET IFEQ, DELIFEQ): valkey-server built
#                 from the source of Debian's own package (sid's valkey,
#                 BSD-3-Clause: its binary needs a newer glibc than Debian
#                 12's) into DEPS/valkey-9/bin/, the server alone (no TLS,
#                 libc malloc, -O2: the build is what CI would pay for),
#                 and checked to start. Prints the server's path.
#   --redis8      also Redis 8 (SET IFEQ, DELEX): redis-server built the
#                 same way from experimental's redis source (RSALv2/SSPLv1/
#                 AGPLv3) into DEPS/redis-8/bin/. Prints the server's path.
#   --redis80     also Redis 8.0 (Debian 13's), the same way from trixie's
#                 redis source into DEPS/redis-8.0/bin/.
#   --valkey81    also Valkey 8.1 (Debian 13's: SET IFEQ), the same way from
#                 trixie's valkey source into DEPS/valkey-8.1/bin/.
#   --promtool    also promtool (Prometheus's checker), from Debian 12's
#                 prometheus package, unpacked (dpkg -x) into DEPS/prometheus/
#                 and checked to run; the package is not installed. Prints
#                 promtool's path. Use it with
#                   REDLOCK_PROMTOOL=PATH meson test ... metrics
#                 (test-metrics.c's `promtool check metrics`).
#   Where the mirror has a source package's upstream tarball but not its
#   .dsc or Debian part (seen for trixie's stable updates), the tarball
#   alone is fetched, checked against the signed index's SHA-256, and built
#   without Debian's patches; the log and DEPS/NAME/share/doc/*/SOURCE
#   say so.
#
# No option changes the system's package setup: each runs apt with a
# sources list, lists and cache of their own (under DEPS/apt/, removed once
# done), checked against the system's Debian archive keyring; the only
# system-wide installs are the Debian 12 packages above. A second run finds
# the stamp in each dir and does nothing.
#
# Output: one line per step on stderr ("deps.sh: ..."). apt's, dpkg's and
# make's output go to log files under DEPS/logs/; on failure the log is
# named and its last lines printed. stdout carries only the paths asked for,
# one line per option, in the order given, e.g.
#   prefix=$(tools/deps.sh --hiredis12)
#
# Environment:
#   REDLOCK_DEPS_DIR        DEPS (default: .deps in the checkout, which git
#                           ignores). In the checkout rather than a shared
#                           cache so that no checkout depends on another's
#                           state and `git clean -xdf` resets it; building
#                           both into a fresh clone takes about 10 s.
#   REDLOCK_DEBIAN_MIRROR   Debian archive (default http://deb.debian.org/debian)
set -euo pipefail

PROG="deps.sh"
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)

PACKAGES=(
    build-essential pkg-config meson ninja-build
    libhiredis-dev libevent-dev libssl-dev libcriterion-dev
    libuv1-dev libglib2.0-dev
    redis-server faketime iproute2 gnuplot-nox
    clang libclang-rt-14-dev clang-format python3
    spin abigail-tools
)
# Bumped whenever what --hiredis12 or --valkey puts into its dir changes, so
# that the next run rebuilds instead of trusting an old stamp.
RECIPE=1
MIRROR=${REDLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

say() {
    printf '%s: %s\n' "$PROG" "$*" >&2
}

die() {
    say "$*"
    exit 1
}

# die_log LOG MESSAGE: the message, the log's name and its last lines.
die_log() {
    local log=$1
    shift
    say "$* (log: $log); its last lines:"
    tail -n 25 -- "$log" | sed 's/^/    /' >&2
    exit 1
}

wants=()
for arg; do
    case $arg in
    --hiredis12 | --valkey | --valkey9 | --redis8 | --redis80 | --valkey81 | --promtool) wants+=("$arg") ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$PROG: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
    esac
done

DEPS=${REDLOCK_DEPS_DIR:-$ROOT/.deps}
LOGS=$DEPS/logs

sudo=()
need_root() {
    if ((EUID != 0)) && ((${#sudo[@]} == 0)); then
        command -v sudo >/dev/null ||
            die "$1 needs root, and there is no sudo: run as root"
        sudo=(sudo)
    fi
}

# --- Debian 12 packages, from the system's own sources ---------------------------

# The packages among "$@" that dpkg does not list as installed, in one query.
missing_packages() {
    local -A ok=()
    local name status
    while IFS=' ' read -r name status; do
        [[ $status == "install ok installed" ]] && ok[${name%%:*}]=1
    done < <(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null || true)
    for name; do
        [[ -n ${ok[$name]:-} ]] || echo "$name"
    done
}

# ensure_packages LABEL PACKAGE...: install what is missing. Quiet when
# nothing is, unless LABEL is the main set (one line then).
ensure_packages() {
    local label=$1 log own_policy=0 policy=/usr/sbin/policy-rc.d
    shift
    local -a missing
    mapfile -t missing < <(missing_packages "$@")
    if ((${#missing[@]} == 0)); then
        [[ $label != "apt packages" ]] || say "apt packages: all $# present"
        return 0
    fi
    need_root "installing ${missing[*]}"
    mkdir -p -- "$LOGS"
    log=$LOGS/apt.log
    say "$label: ${#missing[@]} missing (${missing[*]}), installing (log: $log)"
    # Keep the redis-server package from starting its service during the
    # install: the tests run their own masters on their own ports. Our
    # policy-rc.d is removed afterwards; an existing one is left alone.
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\n# written by redlock tools/deps.sh during apt-get install\nexit 101\n' |
            "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 755 "$policy"
        own_policy=1
        trap '"${sudo[@]}" rm -f '"$policy" EXIT
    fi
    {
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
                apt-get install -y --no-install-recommends "${missing[@]}"
    } >"$log" 2>&1 || die_log "$log" "$label: apt-get failed"
    if ((own_policy)); then
        "${sudo[@]}" rm -f "$policy"
        trap - EXIT
    fi
    mapfile -t missing < <(missing_packages "${missing[@]}")
    ((${#missing[@]} == 0)) || die_log "$log" "$label: still missing after apt-get: ${missing[*]}"
    say "$label: installed"
}

ensure_packages "apt packages" "${PACKAGES[@]}"
((${#wants[@]})) || exit 0

# --- apt of our own, for packages from other Debian suites ---------------------

mkdir -p -- "$DEPS" "$LOGS"

# dep_lock NAME: one deps.sh at a time works on DEPS/NAME (its work dir, its
# apt state); others may fetch other things beside it (run-tests.sh builds
# the servers in the background while its stages fetch hiredis). Holding fd
# 9 on NAME's lock file: the next dep_lock lets the previous one go.
dep_lock() {
    exec 9>"$DEPS/.lock-$1"
    if ! flock -n 9; then
        say "another deps.sh is working on $DEPS/$1: waiting for it"
        flock 9
    fi
}

# private_apt NAME SOURCES_LINE: set APT_OPTS to run apt-get and apt-cache on
# a sources list, lists dir and cache of their own in DEPS/apt/NAME. Nothing
# of the system's apt state is read or written but its configuration and
# keyring (and dpkg's status, which `download` and `source` do not change).
APT_OPTS=()
private_apt() {
    local d=$DEPS/apt/$1
    mkdir -p -- "$d/sources.list.d" "$d/lists/partial" "$d/cache/archives/partial"
    printf '%s\n' "$2" >"$d/sources.list"
    APT_OPTS=(
        -o "Dir::Etc::SourceList=$d/sources.list"
        -o "Dir::Etc::SourceParts=$d/sources.list.d"
        -o "Dir::State::Lists=$d/lists"
        -o "Dir::Cache=$d/cache"
    )
    # apt downloads as user _apt, who may not be able to enter our dirs
    # (a checkout under /root): as root, download as root, into our dirs.
    ((EUID != 0)) || APT_OPTS+=(-o APT::Sandbox::User=root)
}

# stamp_ok DIR WHAT: DIR was made by this recipe for WHAT.
stamp_ok() {
    [[ -f $1/.redlock-deps ]] && [[ $(head -n 1 -- "$1/.redlock-deps") == "recipe $RECIPE $2" ]]
}

# fetch_index LABEL WHICH NAME SOURCES_LINE: a fresh $work dir and $log (the
# caller's), then apt of our own (DEPS/apt/NAME) reads that one source.
# apt-get update says only "W: Failed to fetch" (status 0) for a mirror it
# cannot reach: that is an error here. (And `|| true` after each apt-cache
# look-up below: one that finds nothing fails, and set -e would exit
# without the recipe's own message.)
fetch_index() {
    rm -rf -- "$work"
    mkdir -p -- "$work"
    : >"$log"
    say "$1: reading $2 with apt of our own (log: $log)"
    private_apt "$3" "$4"
    if ! apt-get "${APT_OPTS[@]}" update >>"$log" 2>&1; then
        if grep -q NO_PUBKEY "$log"; then
            die_log "$log" "$1: $KEYRING cannot verify $2 (an old debian-archive-keyring? apt-get install debian-archive-keyring)"
        fi
        die_log "$log" "$1: apt-get update failed"
    fi
    if grep -q '^W: Failed to fetch' "$log"; then
        die_log "$log" "$1: cannot read $2 from $MIRROR (REDLOCK_DEBIAN_MIRROR)"
    fi
}

# install_stage LABEL STAGED DIR WHAT VERSION NAME: stamp the staged tree,
# put it in DIR's place, and drop the work dir and apt state NAME.
install_stage() {
    printf 'recipe %s %s\n%s\n' "$RECIPE" "$4" "$5" >"$2/.redlock-deps"
    rm -rf -- "$3"
    mv -- "$2" "$3"
    rm -rf -- "$work" "$DEPS/apt/$6"
    # DEPS/work and DEPS/apt stay, empty or not: another deps.sh may be
    # making its own dir under them this moment (dep_lock is per NAME).
    say "$1: $5 ready in $3"
}

# --- hiredis 1.2 -------------------------------------------------------------------

# The prefix holds static archives only: the linker then takes them even where
# the system's libhiredis.so (0.14) sits in a later -L dir, and nothing needs
# an rpath or LD_LIBRARY_PATH. hiredis's Makefile compiles every object with
# -fPIC, as libredlock.so needs.
hiredis12() {
    local dir=$DEPS/hiredis-1.2 work=$DEPS/work/hiredis-1.2 log=$LOGS/hiredis-1.2.log
    local ver dsc stage
    dep_lock hiredis-1.2
    if stamp_ok "$dir" hiredis && grep -qx "prefix=$dir" "$dir/lib/pkgconfig/hiredis.pc" 2>/dev/null; then
        say "hiredis 1.2: $(sed -n 2p "$dir/.redlock-deps") ready in $dir"
        echo "$dir"
        return 0
    fi
    fetch_index "hiredis 1.2" "trixie's source index" hiredis-1.2 "deb-src [signed-by=$KEYRING] $MIRROR trixie main"
    ver=$(apt-cache "${APT_OPTS[@]}" showsrc --only-source hiredis 2>>"$log" |
        sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
    [[ -n $ver ]] || die_log "$log" "hiredis 1.2: no hiredis source package in trixie"
    [[ ${ver#*:} == 1.2.* ]] ||
        die "hiredis 1.2: trixie's hiredis is $ver, not 1.2.x: this script needs updating"

    say "hiredis 1.2: fetching and unpacking Debian's hiredis $ver source"
    (cd -- "$work" && apt-get "${APT_OPTS[@]}" source --download-only "hiredis=$ver") >>"$log" 2>&1 ||
        die_log "$log" "hiredis 1.2: apt-get source failed"
    # apt checked every file against the signed index; dpkg-source checks
    # them against the .dsc again. Its warning that it cannot check the
    # .dsc's own signature (no debian-keyring) is expected.
    dsc=$work/hiredis_${ver#*:}.dsc
    dpkg-source -x "$dsc" "$work/src" >>"$log" 2>&1 || die_log "$log" "hiredis 1.2: dpkg-source -x failed"

    say "hiredis 1.2: building libhiredis.a and libhiredis_ssl.a (-fPIC)"
    # Every path variable is given: the Makefile reads LIBRARY_PATH and the
    # like from the environment, where they mean something else to gcc.
    local -a vars=(USE_SSL=1 "PREFIX=$dir" LIBRARY_PATH=lib INCLUDE_PATH=include/hiredis
        PKGCONF_PATH=pkgconfig OPTIMIZATION=-O2 DEBUG_FLAGS=-g)
    stage=$work/stage
    {
        nice -n 10 make -C "$work/src" -j "$(nproc)" "${vars[@]}" static pkgconfig &&
            make -C "$work/src" "${vars[@]}" DESTDIR="$stage" install
    } >>"$log" 2>&1 || die_log "$log" "hiredis 1.2: make failed"
    rm -rf -- "$stage$dir"/lib/*.so* "$stage$dir/lib/cmake"
    mkdir -p -- "$stage$dir/share/doc/hiredis"
    cp -- "$work/src/COPYING" "$work/src/debian/copyright" "$stage$dir/share/doc/hiredis/"

    say "hiredis 1.2: checking that a program and a shared object link against it"
    link_check "$stage$dir" "$work/check" >>"$log" 2>&1 ||
        die_log "$log" "hiredis 1.2: a program using redisConnect and redisCreateSSLContext does not link"

    install_stage "hiredis 1.2" "$stage$dir" "$dir" hiredis "$ver" hiredis-1.2
    echo "$dir"
}

# link_check STAGED_PREFIX WORKDIR: compile, link and run a program that calls
# into hiredis and hiredis_ssl, with pkg-config's flags, as meson gets them
# (the .pc files name the final prefix, so they are rewritten to the staged
# one here); and link the same code into a shared object, which fails unless
# the archives are position-independent.
link_check() {
    local pfx=$1 w=$2 pc flags
    mkdir -p -- "$w/pkgconfig"
    for pc in "$pfx"/lib/pkgconfig/*.pc; do
        sed "s|^prefix=.*|prefix=$pfx|; s|^libdir=.*|libdir=$pfx/lib|; s|^includedir=.*|includedir=$pfx/include|; s|^pkgincludedir=.*|pkgincludedir=$pfx/include/hiredis|" \
            "$pc" >"$w/pkgconfig/$(basename -- "$pc")"
    done
    cat >"$w/check.c" <<'EOF'
#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <stdio.h>

int check(void)
{
    redisSSLContextError err = REDIS_SSL_CTX_NONE;
    redisSSLContext *ssl;
    redisContext *c;

    redisInitOpenSSL();
    ssl = redisCreateSSLContext(NULL, NULL, NULL, NULL, NULL, &err);
    if (ssl == NULL)
        return 1;
    redisFreeSSLContext(ssl);
    c = redisConnect("127.0.0.1", 1); /* refused: only the call is checked */
    if (c == NULL)
        return 1;
    redisFree(c);
    printf("hiredis %d.%d.%d with hiredis_ssl\n", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    return 0;
}

int main(void)
{
    return check();
}
EOF
    flags=$(PKG_CONFIG_PATH=$w/pkgconfig pkg-config --cflags --libs hiredis_ssl libssl libcrypto) || return 1
    # shellcheck disable=SC2086  # pkg-config's flags are words
    cc -Wall -Wextra -Werror -o "$w/check" "$w/check.c" $flags &&
        "$w/check" &&
        cc -Wall -Wextra -Werror -shared -fPIC -o "$w/check.so" "$w/check.c" $flags &&
        ! ldd "$w/check" | grep -q hiredis
}

# --- Valkey 8 ------------------------------------------------------------------------

valkey8() {
    local dir=$DEPS/valkey-8 work=$DEPS/work/valkey-8 log=$LOGS/valkey-8.log
    local ver deb stage
    local -a libs
    dep_lock valkey-8
    if stamp_ok "$dir" valkey && [[ -x $dir/usr/bin/valkey-server ]]; then
        say "valkey 8: $(sed -n 2p "$dir/.redlock-deps") ready in $dir"
        echo "$dir/usr/bin/valkey-server"
        return 0
    fi
    fetch_index "valkey 8" "bookworm-backports' index" bookworm-backports "deb [signed-by=$KEYRING] $MIRROR bookworm-backports main"
    mkdir -p -- "$work/debs"
    ver=$(apt-cache "${APT_OPTS[@]}" show valkey-server 2>>"$log" |
        sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
    [[ -n $ver ]] || die_log "$log" "valkey 8: no valkey-server in bookworm-backports"
    [[ ${ver#*:} == 8.* ]] ||
        die "valkey 8: bookworm-backports' valkey-server is $ver, not 8.x: this script needs updating"

    # valkey-server is a symlink into valkey-tools' one binary: both are needed.
    say "valkey 8: fetching and unpacking valkey-server and valkey-tools $ver"
    (cd -- "$work/debs" && apt-get "${APT_OPTS[@]}" download "valkey-server=$ver" "valkey-tools=$ver") \
        >>"$log" 2>&1 || die_log "$log" "valkey 8: apt-get download failed"
    stage=$work/root
    for deb in "$work"/debs/*.deb; do
        dpkg -x "$deb" "$stage" >>"$log" 2>&1 || die_log "$log" "valkey 8: dpkg -x $(basename -- "$deb") failed"
    done
    # Its shared libraries are Debian 12 packages (most come with
    # redis-server already): install the missing ones from the system's
    # sources, like the packages above.
    mapfile -t libs < <(for deb in "$work"/debs/*.deb; do dpkg-deb -f "$deb" Depends; done |
        tr ',' '\n' | sed 's/|.*//; s/(.*//; s/[[:space:]]//g' | grep '^lib' | sort -u)
    ensure_packages "valkey 8: libraries" "${libs[@]}"

    say "valkey 8: checking that it starts and answers PING"
    start_check "$stage/usr/bin" >>"$log" 2>&1 || die_log "$log" "valkey 8: valkey-server does not start"

    install_stage "valkey 8" "$stage" "$dir" valkey "$ver" bookworm-backports
    echo "$dir/usr/bin/valkey-server"
}

# --- promtool ---------------------------------------------------------------------

# promtool alone is wanted, from Debian 12's prometheus (Apache-2.0): one
# static Go binary, so dpkg -x is all it takes and no library is missing.
promtool() {
    local dir=$DEPS/prometheus work=$DEPS/work/prometheus log=$LOGS/prometheus.log
    local ver stage
    dep_lock prometheus
    if stamp_ok "$dir" prometheus && [[ -x $dir/usr/bin/promtool ]]; then
        say "promtool: $(sed -n 2p "$dir/.redlock-deps") ready in $dir"
        echo "$dir/usr/bin/promtool"
        return 0
    fi
    fetch_index "promtool" "bookworm's index" bookworm "deb [signed-by=$KEYRING] $MIRROR bookworm main"
    mkdir -p -- "$work/debs"
    ver=$(apt-cache "${APT_OPTS[@]}" show prometheus 2>>"$log" |
        sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
    [[ -n $ver ]] || die_log "$log" "promtool: no prometheus in bookworm"
    say "promtool: fetching and unpacking prometheus $ver"
    (cd -- "$work/debs" && apt-get "${APT_OPTS[@]}" download "prometheus=$ver") \
        >>"$log" 2>&1 || die_log "$log" "promtool: apt-get download failed"
    stage=$work/root
    dpkg -x "$work"/debs/prometheus_*.deb "$stage" >>"$log" 2>&1 ||
        die_log "$log" "promtool: dpkg -x failed"
    "$stage/usr/bin/promtool" --version >>"$log" 2>&1 || die_log "$log" "promtool: it does not run"
    install_stage "promtool" "$stage" "$dir" prometheus "$ver" bookworm
    echo "$dir/usr/bin/promtool"
}

# start_check BINDIR [SERVER CLI]: SERVER (default BINDIR/valkey-server)
# starts, on a unix socket only (--port 0: no TCP port to clash with
# anyone's), answers PING through CLI (default BINDIR/valkey-cli), and stops.
start_check() {
    local server=${2:-$1/valkey-server} cli=${3:-$1/valkey-cli} tmp pid rc=1 i
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-valkey-check.XXXXXX")
    "$server" --version || { rm -rf -- "$tmp"; return 1; }
    "$server" --port 0 --unixsocket "$tmp/sock" --unixsocketperm 700 \
        --save '' --appendonly no --dir "$tmp" --logfile "$tmp/log" --daemonize no &
    pid=$!
    for ((i = 0; i < 200; i++)); do
        if [[ $("$cli" -s "$tmp/sock" ping 2>/dev/null) == PONG ]]; then
            rc=0
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    ((rc)) || "$cli" -s "$tmp/sock" info server | grep -E '^(valkey|redis)_version'
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" || true
    cat -- "$tmp/log" 2>/dev/null || true
    rm -rf -- "$tmp"
    return "$rc"
}

# --- servers built from Debian's source packages ---------------------------------

# server_from_source LABEL NAME SUITE PACKAGE MAJOR BINARY: the source of
# PACKAGE (version MAJOR.*) from SUITE's index, and only BINARY built from it
# into DEPS/NAME/bin/ (with the package's copyright files). The upstream
# tarball carries its deps/ (Lua, hdr_histogram, ...); Debian's build uses
# the system's jemalloc, which Debian 12 has too old or not at all for these,
# so MALLOC=libc; TLS is off (no test needs a TLS master of this kind), and
# -O2 without LTO: the link-time optimisation doubles the build for a few
# per cent of speed no figure here depends on. Prints the binary's path.
server_from_source() {
    local label=$1 name=$2 suite=$3 pkg=$4 major=$5 binary=$6
    local dir=$DEPS/$name work=$DEPS/work/$name log=$LOGS/$name.log
    local ver stage t0 how
    dep_lock "$name"
    if stamp_ok "$dir" "$pkg" && [[ -x $dir/bin/$binary ]]; then
        say "$label: $(sed -n 2p "$dir/.redlock-deps") ready in $dir"
        echo "$dir/bin/$binary"
        return 0
    fi
    t0=$SECONDS
    fetch_index "$label" "$suite's source index" "$name" "deb-src [signed-by=$KEYRING] $MIRROR $suite main"
    ver=$(apt-cache "${APT_OPTS[@]}" showsrc --only-source "$pkg" 2>>"$log" |
        sed -n 's/^Version: //p' | sort -V | tail -n 1) || true
    [[ -n $ver ]] || die_log "$log" "$label: no $pkg source package in $suite"
    [[ ${ver#*:} == "$major".* ]] ||
        die "$label: $suite's $pkg is $ver, not $major.x: this script needs updating"

    say "$label: fetching and unpacking Debian's $pkg $ver source"
    if (cd -- "$work" && apt-get "${APT_OPTS[@]}" source --download-only "$pkg=$ver") >>"$log" 2>&1; then
        # As for hiredis: apt checked the files against the signed index,
        # dpkg-source checks them against the .dsc.
        dpkg-source -x "$work/${pkg}_${ver#*:}.dsc" "$work/src" >>"$log" 2>&1 ||
            die_log "$log" "$label: dpkg-source -x failed"
        how="Debian's source package"
    else
        orig_alone "$label" "$pkg" "$ver"
        how="upstream's tarball from Debian's source package, without Debian's patches (the mirror lacks the rest)"
    fi

    say "$label: building $binary alone (make -j$(nproc); a few minutes on two cores)"
    # GIT_DIR: the server's version line takes the git commit around its
    # source, which under .deps/ would be ours.
    GIT_DIR=/nonexistent nice -n 10 make -C "$work/src/src" -j "$(nproc)" "$binary" BUILD_TLS=no MALLOC=libc \
        USE_SYSTEMD=no OPTIMIZATION=-O2 >>"$log" 2>&1 || die_log "$log" "$label: make failed"
    stage=$work/stage
    mkdir -p -- "$stage/bin" "$stage/share/doc/$pkg"
    cp -- "$work/src/src/$binary" "$stage/bin/"
    [[ ! -f $work/src/debian/copyright ]] || cp -- "$work/src/debian/copyright" "$stage/share/doc/$pkg/"
    for f in COPYING LICENSE.txt; do
        [[ ! -f $work/src/$f ]] || cp -- "$work/src/$f" "$stage/share/doc/$pkg/"
    done
    echo "$how" >"$stage/share/doc/$pkg/SOURCE"

    say "$label: checking that it starts and answers PING"
    start_check "$stage/bin" "$stage/bin/$binary" redis-cli >>"$log" 2>&1 ||
        die_log "$log" "$label: $binary does not start"

    install_stage "$label" "$stage" "$dir" "$pkg" "$ver" "$name"
    say "$label: fetched and built in $((SECONDS - t0)) s"
    echo "$dir/bin/$binary"
}

# orig_alone LABEL PACKAGE VERSION: the upstream tarball of PACKAGE VERSION
# (the *.orig.tar.* the signed index lists) into $work/src, checked against
# the index's SHA-256 by apt's own downloader. For a mirror that has the
# tarball but not the .dsc or the Debian part: the upstream source carries
# its deps/, which is all the server alone needs.
orig_alone() {
    local label=$1 pkg=$2 ver=$3 rec dir file sum
    say "$label: the mirror lacks part of $pkg $ver's source package: fetching the upstream tarball alone"
    rec=$(apt-cache "${APT_OPTS[@]}" showsrc --only-source "$pkg" 2>>"$log" |
        awk -v v="$ver" '/^Package: /{keep=0} /^Version: /{keep=($2==v)} keep') || true
    dir=$(sed -n 's/^Directory: //p' <<<"$rec")
    read -r sum file < <(sed -n '/^Checksums-Sha256:/,/^[^ ]/{/^ /p}' <<<"$rec" |
        awk '$3 ~ /\.orig\.tar\./{print $1, $3; exit}')
    [[ -n $dir && -n $file && -n $sum ]] || die_log "$log" "$label: no upstream tarball listed for $pkg $ver"
    /usr/lib/apt/apt-helper "${APT_OPTS[@]}" download-file "$MIRROR/$dir/$file" "$work/$file" "SHA256:$sum" \
        >>"$log" 2>&1 || die_log "$log" "$label: cannot fetch $MIRROR/$dir/$file (or its SHA-256 differs)"
    mkdir -p -- "$work/src"
    tar -xf "$work/$file" -C "$work/src" --strip-components=1 >>"$log" 2>&1 ||
        die_log "$log" "$label: cannot unpack $file"
}

for want in "${wants[@]}"; do
    case $want in
    --hiredis12) hiredis12 ;;
    --valkey) valkey8 ;;
    --valkey9) server_from_source "valkey 9" valkey-9 sid valkey 9 valkey-server ;;
    --redis8) server_from_source "redis 8" redis-8 experimental redis 8 redis-server ;;
    --redis80) server_from_source "redis 8.0" redis-8.0 trixie redis 8.0 redis-server ;;
    --valkey81) server_from_source "valkey 8.1" valkey-8.1 trixie valkey 8.1 valkey-server ;;
    --promtool) promtool ;;
    esac
done
