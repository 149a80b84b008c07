#!/usr/bin/env bash
# package.sh - build redlock's Debian packages with Debian's own tooling.
#
#   tools/package.sh [OUTDIR]          (default: out/deb)
#
# Installs what is missing (debhelper, lintian and debian/control's
# Build-Depends; needs root for that), builds the hiredis 1.2 with TLS that
# the packages vendor (tools/deps.sh --hiredis12, into .deps/ of this
# checkout; debian/rules finds it through REDLOCK_HIREDIS12), copies the
# source tree to a scratch dir, runs `dpkg-buildpackage -us -uc -b` there and `lintian` on the result,
# and leaves libredlock1, libredlock-dev, redlock-cli and redlock-bench
# (.deb, plus .changes and .buildinfo; no -dbgsym packages unless
# DEB_BUILD_OPTIONS is set) in OUTDIR. lintian errors fail the run;
# its warnings are printed. One line per step: each step's output goes to a
# log in OUTDIR, named (with its last lines) when the step fails.
# tests/check-packages.sh OUTDIR checks the packages afterwards.
set -euo pipefail

PROG="package.sh"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)

case ${1:-} in
-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$ROOT/tools/package.sh"; exit 0 ;;
-*) echo "$PROG: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
out=${1:-out/deb}
mkdir -p -- "$out"
out=$(cd -- "$out" && pwd -P)
started=$SECONDS

say() { echo "$PROG: $*"; }
die() { echo "$PROG: $*" >&2; exit 1; }

# step LOG DESCRIPTION CMD...: run CMD with its output in OUTDIR/LOG; on
# failure name the log and show its end.
step() {
    local log=$out/$1 what=$2
    shift 2
    say "$what"
    if ! "$@" >"$log" 2>&1; then
        echo "$PROG: failed: $what; full log: $log; last lines:" >&2
        tail -n 20 -- "$log" | sed 's/^/    /' >&2
        exit 1
    fi
}

installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

apt_get() {
    env DEBIAN_FRONTEND=noninteractive apt-get -y -o Dpkg::Use-Pty=0 "$@"
}

# --- what the build needs ------------------------------------------------------

tools=(dpkg-dev debhelper lintian)
missing=()
for p in "${tools[@]}"; do
    installed "$p" || missing+=("$p")
done
builddeps_ok=0
if installed dpkg-dev && dpkg-checkbuilddeps debian/control >/dev/null 2>&1; then
    builddeps_ok=1
fi
if ((${#missing[@]} || !builddeps_ok)); then
    ((EUID == 0)) || die "packages are missing (${missing[*]:-Build-Depends}) and installing them needs root"
    step apt.log "apt-get update" apt_get update
    if ((${#missing[@]})); then
        step apt.log "installing ${missing[*]}" apt_get install --no-install-recommends "${missing[@]}"
    fi
    step apt.log "installing the Build-Depends of debian/control" \
        apt_get build-dep --no-install-recommends "$ROOT"
else
    say "tools and Build-Depends present"
fi
rm -f -- "$out/apt.log"

# --- the vendored hiredis --------------------------------------------------------

# debian/rules links libredlock against it statically (TLS; Debian 12's
# hiredis 0.14.1 has none). deps.sh prints its prefix on stdout, its steps on
# stderr; a second run finds it built and takes a moment.
say "hiredis 1.2 with TLS, to vendor: tools/deps.sh --hiredis12"
if ! REDLOCK_HIREDIS12=$("$ROOT/tools/deps.sh" --hiredis12 2>"$out/deps.log"); then
    echo "$PROG: failed: tools/deps.sh --hiredis12; full log: $out/deps.log; last lines:" >&2
    tail -n 20 -- "$out/deps.log" | sed 's/^/    /' >&2
    exit 1
fi
export REDLOCK_HIREDIS12
rm -f -- "$out/deps.log"

# --- one version, two places --------------------------------------------------

deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
meson_version=$(meson introspect --projectinfo meson.build |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
[[ ${deb_version%-*} == "$meson_version" ]] ||
    die "debian/changelog says $deb_version but meson.build says $meson_version: add a changelog entry (dch -v $meson_version-1)"

# --- build in a copy -------------------------------------------------------------

# dpkg-buildpackage writes its results next to the source tree and leaves
# obj-*/ and debian/<package>/ inside it: a scratch copy keeps the checkout
# clean. In a git checkout the copy is what git would track (uncommitted
# changes included, build dirs and other ignored files left out).
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-package.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
src=$work/redlock-$meson_version
mkdir -p -- "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done |
        tar --null -T - -cf - | tar -xf - -C "$src"
else
    tar --exclude='./build*' --exclude=./out --exclude=./.git -cf - . | tar -xf - -C "$src"
fi
say "copied the source tree to $src"

rm -f -- "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
jobs=$(nproc 2>/dev/null || echo 1)
export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=$jobs noautodbgsym}"
step build.log "dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS)" \
    env -C "$src" nice -n 10 dpkg-buildpackage -us -uc -b
mv -- "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/

# --- lintian -------------------------------------------------------------------------

changes=$(echo "$out"/redlock_*.changes)
[[ -f $changes ]] || die "no .changes file in $out"
rc=0
lintian --fail-on error --display-info "$changes" >"$out/lintian.log" 2>&1 || rc=$?
errors=$(grep -c '^E: ' "$out/lintian.log" || true)
warnings=$(grep -c '^W: ' "$out/lintian.log" || true)
say "lintian: $errors error(s), $warnings warning(s) (log: $out/lintian.log)"
grep -E '^[EW]: ' "$out/lintian.log" | sed 's/^/    /' || true
((rc == 0)) || die "lintian failed (status $rc): see $out/lintian.log"

debs=("$out"/*.deb)
say "${#debs[@]} packages in $out in $((SECONDS - started)) s: $(cd -- "$out" && echo *.deb)"
