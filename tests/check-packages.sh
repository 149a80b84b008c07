#!/usr/bin/env bash
# check-packages.sh - check the Debian packages tools/package.sh built.
#
#   tests/check-packages.sh [DEBDIR]          (default: out/deb)
#
# Nothing is installed: each package is unpacked (dpkg -x) into a temp dir.
#   - contents: each package holds what it should and nothing from another;
#     the symbols file lists exactly what the library exports;
#   - TLS: libredlock.so.1 holds the vendored hiredis 1.2 (needs no
#     libhiredis, needs libssl.so.3, and libredlock1 depends on libssl3);
#     nothing depends on or requires a hiredis package or .pc file;
#   - redlock-cli runs from its unpacked package, with LD_LIBRARY_PATH at the
#     unpacked libredlock1 alone, says "TLS yes", takes and releases a lock,
#     and does so over TLS too, on a TLS redis-server of its own;
#   - examples/hello.c as libredlock-dev ships it builds with pkg-config alone
#     (PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR at the unpacked package),
#     shared and static (libredlock.a holds hiredis too), and runs; so do
#     examples/libuv.c and glib.c, on the adapters the package ships;
#   - redlock-bench runs from its unpacked package, and its --help names
#     the cluster-up.sh its package ships;
#   - the packages that hold the vendored hiredis say so in Built-Using.
# Needs masters: without $REDLOCK_TEST_MASTERS it runs itself under
# tests/with-cluster.sh (base port 7040 + $REDLOCK_TEST_PORT_OFFSET). TAP on
# stdout; the last line is "check-packages.sh: N passed, N failed".
# shellcheck disable=SC2317  # the checks are functions that check() calls
set -euo pipefail

PROG="check-packages.sh"
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
debdir=${1:-$here/../out/deb}
[[ -d $debdir ]] || { echo "$PROG: no directory $debdir (run tools/package.sh first)" >&2; exit 2; }
debdir=$(cd -- "$debdir" && pwd -P)
if [[ -z ${REDLOCK_TEST_MASTERS:-} ]]; then
    exec "$here/with-cluster.sh" -p 7040 -- "$here/check-packages.sh" "$debdir"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-check-packages.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
n=0 failed=0

# check DESCRIPTION CMD...: one TAP line; CMD's output becomes # comments.
check() {
    local what=$1 out rc=0
    shift
    n=$((n + 1))
    out=$("$@" 2>&1) || rc=$?
    [[ -z $out ]] || printf '%s\n' "$out" | sed 's/^/# /'
    if ((rc == 0)); then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what"
        failed=$((failed + 1))
    fi
}

finish() {
    echo "1..$n"
    echo "$PROG: $((n - failed)) passed, $failed failed"
    exit $((failed > 0))
}

# --- which packages --------------------------------------------------------------

packages=(libredlock1 libredlock-dev redlock-cli redlock-bench)
declare -A deb
# Set outside check(), which runs its command in a subshell.
for p in "${packages[@]}"; do
    found=("$debdir/${p}_"*.deb)
    [[ -f ${found[0]} ]] && deb[$p]=${found[*]}
done
one_deb() {
    local p=$1 found
    read -r -a found <<<"${deb[$p]:-}"
    ((${#found[@]} == 1)) || { echo "want one ${p}_*.deb in $debdir, found ${#found[@]}"; return 1; }
}
for p in "${packages[@]}"; do
    check "one $p package in $debdir" one_deb "$p"
done
((failed == 0)) || finish
version=$(dpkg-deb -f "${deb[libredlock1]}" Version)
upstream=${version%-*}
arch=$(dpkg-deb -f "${deb[libredlock1]}" Architecture)
multiarch=$(dpkg-architecture -a "$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
lib=usr/lib/$multiarch

same_version() {
    local p v
    for p in "${packages[@]}"; do
        v=$(dpkg-deb -f "${deb[$p]}" Version)
        [[ $v == "$version" ]] || { echo "$p is $v, libredlock1 is $version"; return 1; }
    done
}
check "all four packages are version $version" same_version

# --- contents ----------------------------------------------------------------------

# Allowed paths, one ERE per line, anchored; each package's own doc dir and
# lintian overrides are allowed too. A file that matches none is in the
# wrong package (or should not be packaged at all).
declare -A allowed required
allowed[libredlock1]="$lib/libredlock\\.so\\.1(\\.[0-9]+\\.[0-9]+)?"
required[libredlock1]="$lib/libredlock.so.1 $lib/libredlock.so.$upstream"
allowed[libredlock-dev]="usr/include/redlock\\.h
usr/include/redlock/(version|libuv|glib)\\.h
$lib/libredlock\\.(a|so)
$lib/pkgconfig/redlock\\.pc
usr/share/doc/libredlock-dev/README\\.md(\\.gz)?
usr/share/doc/libredlock-dev/NEWS(\\.gz)?
usr/share/man/man3/redlock(_acquire|_release|_extend)?\\.3\\.gz
usr/share/doc/libredlock-dev/docs/[A-Za-z-]+\\.md(\\.gz)?
usr/share/doc/libredlock-dev/examples/[a-z-]+\\.(c|sh|service|timer)"
required[libredlock-dev]="usr/include/redlock.h usr/include/redlock/version.h $lib/libredlock.a
$lib/libredlock.so $lib/pkgconfig/redlock.pc usr/share/doc/libredlock-dev/examples/hello.c
usr/include/redlock/libuv.h usr/include/redlock/glib.h
usr/share/doc/libredlock-dev/examples/libuv.c usr/share/doc/libredlock-dev/examples/glib.c
usr/share/man/man3/redlock.3.gz usr/share/man/man3/redlock_acquire.3.gz"
allowed[redlock-cli]="usr/bin/redlock-cli
usr/share/man/man1/redlock-cli\\.1\\.gz
usr/share/bash-completion/completions/redlock-cli
usr/share/zsh/vendor-completions/_redlock-cli
usr/share/doc/redlock-cli/NEWS(\\.gz)?"
required[redlock-cli]="usr/bin/redlock-cli usr/share/man/man1/redlock-cli.1.gz
usr/share/bash-completion/completions/redlock-cli usr/share/zsh/vendor-completions/_redlock-cli"
allowed[redlock-bench]="usr/bin/redlock-bench
usr/share/man/man1/redlock-bench\\.1\\.gz
usr/share/redlock-bench/cluster-up\\.sh"
required[redlock-bench]="usr/bin/redlock-bench usr/share/man/man1/redlock-bench.1.gz
usr/share/redlock-bench/cluster-up.sh"

# Paths of the files and links in a package, without the leading "./".
paths() {
    dpkg-deb --fsys-tarfile "$1" | tar -t | sed -n 's|^\./||; /[^/]$/p'
}

contents() {
    local p=$1 f re ok=0
    local own="usr/share/doc/$p/(copyright|changelog\\.Debian\\.gz)
usr/share/lintian/overrides/$p"
    paths "${deb[$p]}" >"$tmp/$p.paths"
    while IFS= read -r f; do
        while IFS= read -r re; do
            [[ $f =~ ^($re)$ ]] && continue 2
        done <<<"${allowed[$p]}
$own"
        echo "$p has $f, which is not its to have"
        ok=1
    done <"$tmp/$p.paths"
    for f in ${required[$p]} "usr/share/doc/$p/copyright"; do
        grep -qxF -- "$f" "$tmp/$p.paths" || { echo "$p lacks $f"; ok=1; }
    done
    return "$ok"
}
for p in "${packages[@]}"; do
    check "$p holds what it should and nothing else" contents "$p"
done

depends_on() {
    local p=$1 want=$2 deps
    deps=$(dpkg-deb -f "${deb[$p]}" Depends)
    grep -qE -- "(^|, )$want(,|$)" <<<"$deps" || { echo "$p Depends: $deps"; return 1; }
}
check "libredlock-dev depends on libredlock1 (= $version)" \
    depends_on libredlock-dev "libredlock1 \\(= $version\\)"
dev_depends() {
    local d
    for d in libevent-dev libssl-dev; do
        depends_on libredlock-dev "$d( \\([^)]*\\))?" || return 1
    done
}
check "libredlock-dev depends on the -dev packages redlock.pc requires" dev_depends
dev_suggests() {
    local d suggests
    suggests=$(dpkg-deb -f "${deb[libredlock-dev]}" Suggests)
    for d in libuv1-dev libglib2.0-dev; do
        grep -qE -- "(^|, )$d( \\([^)]*\\))?(,|$)" <<<"$suggests" ||
            { echo "libredlock-dev Suggests: $suggests"; return 1; }
    done
}
check "libredlock-dev suggests what its loop adapters include (libuv1-dev, libglib2.0-dev)" dev_suggests
# hiredis is vendored (debian/rules): no package may ask for Debian's.
no_hiredis_depends() {
    local p deps
    for p in "${packages[@]}"; do
        deps=$(dpkg-deb -f "${deb[$p]}" Depends)
        if grep -q hiredis <<<"$deps"; then
            echo "$p Depends: $deps"
            return 1
        fi
    done
}
check "no package depends on a hiredis package (it is vendored)" no_hiredis_depends
check "libredlock1 depends on libssl3 (TLS, through shlibs)" \
    depends_on libredlock1 "libssl3( \\([^)]*\\))?"
check "redlock-cli depends on libredlock1" depends_on redlock-cli "libredlock1 \\(>= [^)]*\\)"
check "redlock-bench depends on libredlock1" depends_on redlock-bench "libredlock1 \\(>= [^)]*\\)"

# Built-Using (debian/rules): hiredis's source version where its code is
# linked in statically; redlock-cli links only libredlock.so.
built_using() {
    local p bu ok=0
    for p in libredlock1 libredlock-dev redlock-bench; do
        bu=$(dpkg-deb -f "${deb[$p]}" Built-Using)
        [[ $bu =~ ^hiredis\ \(=\ 1\.2\.[^\)]+\)$ ]] || { echo "$p Built-Using: '$bu'"; ok=1; }
    done
    bu=$(dpkg-deb -f "${deb[redlock-cli]}" Built-Using)
    [[ -z $bu ]] || { echo "redlock-cli Built-Using: '$bu' (it holds no hiredis)"; ok=1; }
    return "$ok"
}
check "libredlock1, libredlock-dev and redlock-bench are Built-Using hiredis (= 1.2.x)" built_using

# Everything goes into $tmp/all (for the symbols check and the dev build);
# $tmp/lib holds libredlock1 alone, $tmp/cli and $tmp/bench their package.
for p in "${packages[@]}"; do
    dpkg -x "${deb[$p]}" "$tmp/all"
done
dpkg -x "${deb[libredlock1]}" "$tmp/lib"
dpkg -x "${deb[redlock-cli]}" "$tmp/cli"
dpkg -x "${deb[redlock-bench]}" "$tmp/bench"
dpkg-deb -e "${deb[libredlock1]}" "$tmp/control"

symbols_match() {
    local exported listed
    # Name@version pairs, as the symbols file writes them: a function's
    # default version (nm's @@) and the version node itself (type A,
    # LIBREDLOCK_1.0@LIBREDLOCK_1.0); every one of soname 1 is a
    # LIBREDLOCK_1.x (redlock/libredlock.sym).
    exported=$(nm -D --defined-only "$tmp/lib/$lib/libredlock.so.1" |
        awk '$2 == "A" { print $3 "@" $3; next } { sub(/@@/, "@", $3); print $3 }' | sort -u)
    listed=$(sed -n 's/^ \([^@ ]*@[^ ]*\) .*/\1/p' "$tmp/control/symbols" | sort -u)
    diff <(echo "$exported") <(echo "$listed") ||
        { echo "(<: exported but not in debian/libredlock1.symbols; >: listed but gone)"; return 1; }
    # No `grep | grep -q` under pipefail: the first grep can die of SIGPIPE
    # when -q quits early, and the pipeline then hides the very match.
    local others
    others=$(grep -vxE -e 'LIBREDLOCK_1\.[0-9]+@LIBREDLOCK_1\.[0-9]+' \
        -e 'redlock_[a-z0-9_]+@LIBREDLOCK_1\.[0-9]+' <<<"$exported") || true
    if [[ -n $others ]]; then
        echo "exports something not named redlock_* or not under a LIBREDLOCK_1.x version: ${others//$'\n'/ }"
        return 1
    fi
}
check "the symbols file lists exactly what libredlock.so.1 exports" symbols_match
vendored_hiredis() {
    local needed
    needed=$(readelf -d "$tmp/lib/$lib/libredlock.so.1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    if grep -q hiredis <<<"$needed" || ! grep -qx 'libssl\.so\.3' <<<"$needed"; then
        echo "libredlock.so.1 needs: ${needed//$'\n'/ }"
        return 1
    fi
}
check "libredlock.so.1 holds hiredis (needs no libhiredis) and needs libssl.so.3" vendored_hiredis

# --- redlock-cli from its package -------------------------------------------------------

cli() {
    LD_LIBRARY_PATH=$tmp/lib/$lib "$tmp/cli/usr/bin/redlock-cli" --masters "$REDLOCK_TEST_MASTERS" "$@"
}
loads_from() {
    local bin=$1 want=$2 got
    got=$(LD_LIBRARY_PATH=$tmp/lib/$lib ldd "$bin" | awk '$1 == "libredlock.so.1" {print $3}')
    [[ $got == "$want" ]] || { echo "libredlock.so.1 resolves to '$got', not $want"; return 1; }
}
check "redlock-cli loads the unpacked libredlock1" \
    loads_from "$tmp/cli/usr/bin/redlock-cli" "$tmp/lib/$lib/libredlock.so.1"
cli_version() {
    cli -V | grep -F "redlock-cli $upstream (library $upstream"
}
check "redlock-cli -V names version $upstream" cli_version
cli_tls() {
    cli -V | grep -F "TLS yes"
}
check "redlock-cli -V says TLS yes" cli_tls
cli_lock_unlock() {
    local res="check-packages-$$" token
    token=$(cli lock "$res" --ttl 10s) || return 1
    [[ $token =~ ^[0-9a-f]{32}$ ]] || { echo "lock printed '$token'"; return 1; }
    cli status "$res" | grep -F "$token" >/dev/null || { echo "status does not show $token"; return 1; }
    cli unlock "$res" "$token"
}
check "redlock-cli takes, shows and releases a lock" cli_lock_unlock
cli_man() {
    local page
    page=$(zcat "$tmp/cli/usr/share/man/man1/redlock-cli.1.gz") || return 1
    grep -q '^\.TH REDLOCK-CLI 1 ' <<<"$page"
}
check "the redlock-cli man page is a man page" cli_man

# A TLS master of our own (a CA, a certificate for 127.0.0.1, redis-server
# with its TLS port only), beside the cluster's ports.
tls_master() {
    local d=$tmp/tls port=$((REDLOCK_TEST_BASEPORT + 10)) i
    mkdir -p -- "$d"
    printf '[v3]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n[req]\ndistinguished_name=dn\n[dn]\n' >"$d/ca.ext"
    printf '[v3]\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/server.ext"
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$d/ca.key" \
        -out "$d/ca.crt" -days 1 -subj "/CN=check-packages CA" -extensions v3 -config "$d/ca.ext" &&
        openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$d/server.key" \
            -out "$d/server.csr" -subj /CN=127.0.0.1 &&
        openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
            -out "$d/server.crt" -days 1 -extfile "$d/server.ext" -extensions v3 || return 1
    "${REDLOCK_TEST_SERVER:-redis-server}" --port 0 --tls-port "$port" --bind 127.0.0.1 \
        --tls-cert-file "$d/server.crt" --tls-key-file "$d/server.key" --tls-ca-cert-file "$d/ca.crt" \
        --tls-auth-clients no --save '' --appendonly no --dir "$d" --logfile "$d/log" \
        --pidfile "$d/pid" --daemonize yes || return 1
    for ((i = 0; i < 100; i++)); do
        grep -q 'eady to accept connections' "$d/log" 2>/dev/null && { echo "127.0.0.1:$port" >"$d/addr"; return 0; }
        sleep 0.05
    done
    cat -- "$d/log"
    return 1
}
stop_tls_master() {
    [[ -f $tmp/tls/pid ]] && kill "$(cat -- "$tmp/tls/pid")" 2>/dev/null
    return 0
}
trap 'stop_tls_master; rm -rf -- "$tmp"' EXIT
cli_over_tls() {
    tls_master || return 1
    local res="check-packages-tls-$$" token
    local -a opts=(--masters "$(cat -- "$tmp/tls/addr")" --tls --cacert "$tmp/tls/ca.crt")
    LD_LIBRARY_PATH=$tmp/lib/$lib "$tmp/cli/usr/bin/redlock-cli" "${opts[@]}" declare-empty || return 1
    token=$(LD_LIBRARY_PATH=$tmp/lib/$lib "$tmp/cli/usr/bin/redlock-cli" "${opts[@]}" lock "$res" --ttl 10000) ||
        return 1
    [[ $token =~ ^[0-9a-f]{32}$ ]] || { echo "lock printed '$token'"; return 1; }
    LD_LIBRARY_PATH=$tmp/lib/$lib "$tmp/cli/usr/bin/redlock-cli" "${opts[@]}" unlock "$res" "$token"
}
check "redlock-cli takes and releases a lock over TLS (--tls --cacert)" cli_over_tls
stop_tls_master

# --- a program against libredlock-dev, with pkg-config alone ------------------------------

pc() {
    PKG_CONFIG_PATH=$tmp/all/$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$tmp/all pkg-config "$@"
}
hello=$tmp/all/usr/share/doc/libredlock-dev/examples/hello.c
build_shared() {
    # shellcheck disable=SC2046  # pkg-config's output is a list of words
    cc -Wall -Wextra -Werror "$hello" $(pc --cflags --libs redlock) -o "$tmp/hello"
}
check "hello.c builds against libredlock-dev: cc hello.c \$(pkg-config --cflags --libs redlock)" build_shared
check "hello links the unpacked libredlock1" loads_from "$tmp/hello" "$tmp/lib/$lib/libredlock.so.1"
runs_hello() {
    local out
    out=$("$@" "$REDLOCK_TEST_MASTERS") || { echo "$out"; return 1; }
    grep -qx released <<<"$out" || { echo "$out"; return 1; }
}
check "hello takes and releases a lock" runs_hello env LD_LIBRARY_PATH="$tmp/lib/$lib" "$tmp/hello"
build_static() {
    # shellcheck disable=SC2046
    cc -Wall -Wextra -Werror "$hello" $(pc --cflags redlock) -Wl,--as-needed \
        "$tmp/all/$lib/libredlock.a" $(pc --static --libs redlock) -o "$tmp/hello-static" &&
        ! readelf -d "$tmp/hello-static" | grep -F libredlock
}
check "hello builds against libredlock.a with pkg-config --static" build_static
check "static hello takes and releases a lock, without LD_LIBRARY_PATH" runs_hello "$tmp/hello-static"
# The loop adapters: headers only, so the program links libuv or GLib
# itself (the system's, through plain pkg-config: the sysroot is only ours).
build_loop() {
    local name=$1 pkg=$2
    # shellcheck disable=SC2046
    cc -Wall -Wextra -Werror "$tmp/all/usr/share/doc/libredlock-dev/examples/$name.c" \
        $(pc --cflags --libs redlock) $(pkg-config --cflags --libs "$pkg") -o "$tmp/$name"
}
for loop in libuv:libuv glib:glib-2.0; do
    name=${loop%%:*} pkg=${loop#*:}
    check "examples/$name.c builds against libredlock-dev's <redlock/$name.h> and $pkg" \
        build_loop "$name" "$pkg"
    check "$name takes and releases a lock on its loop" \
        runs_hello env LD_LIBRARY_PATH="$tmp/lib/$lib" "$tmp/$name"
done

# --- redlock-bench from its package --------------------------------------------------------

bench() {
    LD_LIBRARY_PATH=$tmp/lib/$lib "$tmp/bench/usr/bin/redlock-bench" "$@"
}
check "redlock-bench loads the unpacked libredlock1" \
    loads_from "$tmp/bench/usr/bin/redlock-bench" "$tmp/lib/$lib/libredlock.so.1"
check "redlock-bench measures the masters" bench --masters "$REDLOCK_TEST_MASTERS" \
    --scenarios uncontended --duration 1 --no-progress --no-json --out "$tmp/bench-out"
bench_names_cluster_up() {
    local out rc=0
    bench --help | grep -F -- /usr/share/redlock-bench/cluster-up.sh || return 1
    [[ -x $tmp/bench/usr/share/redlock-bench/cluster-up.sh ]] || { echo "cluster-up.sh not executable"; return 1; }
    out=$(env -u REDLOCK_MASTERS "$tmp/bench/usr/share/redlock-bench/cluster-up.sh" --help) || rc=$?
    if ((rc != 0)) || ! grep -q 'usage: cluster-up.sh' <<<"$out"; then
        echo "cluster-up.sh --help: exit $rc"
        return 1
    fi
}
check "redlock-bench's --help names the cluster-up.sh its package ships, which runs" bench_names_cluster_up
no_default_masters() {
    local out rc=0
    out=$(bench 2>&1) || rc=$?
    if ((rc != 2)) || ! grep -q 'cluster-up.sh start' <<<"$out"; then
        echo "exit $rc: $out"
        return 1
    fi
}
check "redlock-bench without masters says how to start them, exit 2" no_default_masters

finish
