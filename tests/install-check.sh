#!/usr/bin/env bash
# install-check.sh BUILDDIR SRCDIR - install into a scratch prefix, build
# examples/hello.c with nothing but `cc ... $(pkg-config --cflags --libs redlock)`
# and run it against the masters in $REDLOCK_TEST_MASTERS (from with-cluster.sh).
# Proves the installed header, library and redlock.pc are complete; without
# masters, hello says how to give them in one line and exits 64.
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
dest=$(mktemp -d); trap 'rm -rf "$dest"' EXIT
echo "# installing into $dest"
meson install -C "$build" --destdir "$dest" --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
libdir=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
pcdir=$(find "$dest" -name redlock.pc -printf '%h\n' -quit)
[ -n "$pcdir" ] || { echo "not ok 1 - redlock.pc was not installed"; echo "1..1"; exit 1; }
# Where the build found hiredis, if not in the system's paths (a hiredis
# 1.x of tools/deps.sh): redlock.pc names it as a private requirement, so
# pkg-config must find its .pc file, as it would for a user who built
# against that hiredis.
extra=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(":".join(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="pkg_config_path")))')
export PKG_CONFIG_PATH="$pcdir${extra:+:$extra}" PKG_CONFIG_SYSROOT_DIR="$dest"
# A sanitized build installs a sanitized library: its users must link the
# same runtime, or the loader refuses to start them.
san=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="b_sanitize"))')
sanflags=()
[ "$san" != none ] && sanflags=(-fsanitize="$san")
cc "${sanflags[@]}" "$src/examples/hello.c" $(pkg-config --cflags --libs redlock) -o "$dest/hello"
echo "1..3"
echo "ok 1 - hello.c builds with pkg-config --cflags --libs redlock"
case "$libdir" in /*) ;; *) libdir="$prefix/$libdir" ;; esac
if out=$(LD_LIBRARY_PATH="$dest$libdir" "$dest/hello" "$REDLOCK_TEST_MASTERS" 2>&1) \
   && grep -q '^released$' <<<"$out"; then
  echo "ok 2 - hello takes and releases a lock on the masters"
else
  echo "not ok 2 - hello failed: $out"; exit 1
fi
rc=0
out=$(env -u REDLOCK_MASTERS LD_LIBRARY_PATH="$dest$libdir" "$dest/hello" 2>&1 </dev/null) || rc=$?
if ((rc == 64)) && [[ $(wc -l <<<"$out") -eq 1 && $out == *REDLOCK_MASTERS* ]]; then
  echo "ok 3 - hello without masters says how in one line and exits 64: $out"
else
  echo "not ok 3 - hello without masters: exit $rc, not 64 with one line naming REDLOCK_MASTERS: $out"; exit 1
fi
