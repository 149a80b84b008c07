#!/usr/bin/env bash
# abi-check.sh - compare the built libredlock's ABI with the committed baseline.
#
#   tools/abi-check.sh BUILD_DIR             compare (stage 'abi' of run-tests.sh)
#   tools/abi-check.sh --update BUILD_DIR    regenerate the baseline, on purpose
#
# The baseline is abi/libredlock.so.N.abi (N: the soname's major), written by
# abidw (libabigail, Debian's abigail-tools) from a debug build: only the
# types of the public header count (--headers-dir redlock/include
# --drop-private-types), only what the library exports
# (--exported-interfaces-only), and nothing that names this machine (no
# source locations, build paths or DT_NEEDED; translation units named from
# the source root), so that any checkout and build dir writes the same file.
#
# Compare: BUILD_DIR's library (any build with -g: the plain build's
# debugoptimized will do) is dumped the same way and abidiff'ed against the
# baseline; abidiff's report is printed. It fails on a removed or changed
# function, a changed public type, or a removed symbol (abidiff's
# "incompatible" bit, or any Removed or Changed count in its summary), and
# passes additions: a new function is compatible, in a version node the
# baseline does not have (LIBREDLOCK_1.1 after 1.0; one added to 1.0 fails)
# or in the node of the version being made, not released yet (meson.build's
# version: 1.1.0 keeps LIBREDLOCK_1.1 open until 1.2.0 is the version).
# A field added at the end of a sized struct passes (abi/suppressions.ini).
# Harmless changes abidiff filters by default (e.g. a new enumerator at the
# end) pass too.
#
# --update: rewrite the baseline from BUILD_DIR, which must be a debug build
# (-O0 -g: meson setup B --buildtype=debug), so that every exported function
# has its DWARF (at -O2, gcc may fold two identical functions into one and
# leave one symbol without a description). Regenerate only for a soname bump
# (a new abi/libredlock.so.N+1.abi) or after additions the check passed, never
# to silence a change it refused (docs/api.md,
# "Soname 1, symbol versions, an ABI baseline").
set -euo pipefail

PROG="abi-check.sh"
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
die() {
    echo "$PROG: $*" >&2
    exit 2
}

update=0
case ${1:-} in
-h | --help) usage; exit 0 ;;
--update) update=1; shift ;;
-*) die "unknown option '$1' (see --help)" ;;
esac
(($# == 1)) || die "usage: $PROG [--update] BUILD_DIR"
build=$1
[[ -d $build ]] || die "$build: no such directory"
for tool in abidw abidiff readelf; do
    command -v "$tool" >/dev/null ||
        die "$tool not found (apt-get install abigail-tools binutils; tools/deps.sh installs them)"
done

# The library: the shared one, through its soname link.
lib=''
for f in "$build"/redlock/libredlock.so.[0-9]*; do
    [[ -f $f ]] || continue
    soname=$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [[ -n $soname && -e $build/redlock/$soname ]] && { lib=$build/redlock/$soname; break; }
done
[[ -n $lib ]] || die "no libredlock.so.N in $build/redlock (build it first: ninja -C $build)"
readelf -S "$lib" | grep -q '\.debug_info' ||
    die "$lib has no debug info: build with -g (meson's debug or debugoptimized)"
baseline=$ROOT/abi/$soname.abi

# dump OUT: the ABI of $lib as abixml, the same way for the baseline and for
# a comparison. abidw names each translation unit by its path from the build
# dir (../redlock/kinds/acquire.c, or ../../src/redlock/... from elsewhere):
# it is rewritten from the source root (redlock/kinds/acquire.c).
dump() {
    abidw --headers-dir "$ROOT/redlock/include" --drop-private-types --exported-interfaces-only \
        --no-show-locs --no-comp-dir-path --no-corpus-path --no-elf-needed --type-id-style hash \
        --out-file "$1.raw" "$lib" || return 1
    sed -E "s#(<abi-instr [^>]* path=')[^']*/((redlock|drift)/[^']+')#\\1\\2#" "$1.raw" >"$1"
    rm -f -- "$1.raw"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/abi-check.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

if ((update)); then
    opts=$(meson introspect --buildoptions "$build" 2>/dev/null | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o.get("optimization"), o.get("debug"))') || die "$build: not a meson build dir"
    [[ $opts == "0 True" ]] ||
        die "--update wants a debug build (-O0 -g); $build has optimization/debug '$opts': meson setup build-abi --buildtype=debug -Dtests=disabled && ninja -C build-abi redlock/$(basename "$(readlink -f "$lib")")"
    dump "$tmp/new.abi" || die "abidw failed on $lib"
    mkdir -p -- "$ROOT/abi"
    if [[ -f $baseline ]] && cmp -s "$tmp/new.abi" "$baseline"; then
        echo "$PROG: ${baseline#"$ROOT"/}: unchanged"
    else
        cp -- "$tmp/new.abi" "$baseline"
        echo "$PROG: wrote ${baseline#"$ROOT"/} from $lib ($(grep -c '<elf-symbol ' "$baseline") symbols): commit it, saying why"
    fi
    exit 0
fi

[[ -f $baseline ]] ||
    { echo "$PROG: no baseline ${baseline#"$ROOT"/} for $soname (a new soname? make one with --update)" >&2; exit 1; }
dump "$tmp/built.abi" || { echo "$PROG: abidw failed on $lib" >&2; exit 1; }

rc=0
abidiff --suppressions "$ROOT/abi/suppressions.ini" "$baseline" "$tmp/built.abi" >"$tmp/report" 2>&1 || rc=$?
if ((rc & 3)); then
    cat -- "$tmp/report"
    echo "$PROG: abidiff failed (status $rc)" >&2
    exit 1
fi
if ((rc == 0)); then
    echo "$PROG: ok: $soname's ABI is the baseline's (${baseline#"$ROOT"/})"
    exit 0
fi

# An ABI change (bit 4), perhaps incompatible (bit 8: a removed symbol). Its
# summary lines ("Functions changes summary: 0 Removed, 1 Changed, 0 Added
# function") say what kind.
echo "$PROG: abidiff ${baseline#"$ROOT"/} (baseline) against $lib:"
sed 's/^/    /' "$tmp/report"
bad=$( (grep -E 'summary:' "$tmp/report" || true) |
    grep -E '(^|[^0-9])[1-9][0-9]* (Removed|Changed)' || true)
if ((rc & 8)) || [[ -n $bad ]]; then
    echo "$PROG: FAILED: an incompatible change to $soname's ABI (above): a removed or changed function or a changed public type needs a new soname; if it is meant, say so in docs/api.md" >&2
    exit 1
fi
# Additions go in a node of their own: a symbol added to a node the baseline
# already has (LIBREDLOCK_1.0) would tell the loader that 1.0 had it. The
# node of the version being made (meson.build's, 1.1 for 1.1.0) is not
# released yet and takes additions until it is: the next version's
# meson.build (1.2.0) closes it.
open_node=LIBREDLOCK_$(sed -n "s/^ *version: '\([0-9]*\.[0-9]*\)\.[0-9]*',.*/\1/p" "$ROOT/meson.build" | head -n 1)
mapfile -t old_nodes < <(grep -o "<elf-symbol [^>]* version='[^']*'" "$baseline" |
    sed "s/.* version='\([^']*\)'/\1/" | sort -u | grep -vx -- "$open_node")
misplaced=''
while IFS= read -r added; do
    for node in "${old_nodes[@]}"; do
        [[ ${added##*@} == "$node" ]] && misplaced+=" $added"
    done
done < <(sed -n 's/^ *\[A\] .*{\([^}]*\)}.*/\1/p' "$tmp/report")
if [[ -n $misplaced ]]; then
    echo "$PROG: FAILED: added to a version node the baseline already has:$misplaced; a new function goes in a new node (LIBREDLOCK_1.1 { global: ...; } LIBREDLOCK_1.0; in redlock/libredlock.sym)" >&2
    exit 1
fi
echo "$PROG: ok: additions only (compatible): list them in a new LIBREDLOCK_1.x node (or $open_node, not released yet) of redlock/libredlock.sym and debian/libredlock1.symbols, then tools/abi-check.sh --update a debug build"
exit 0
