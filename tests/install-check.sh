#!/usr/bin/env bash
# install-check.sh BUILDDIR SRCDIR - install into a scratch prefix, build
# examples/hello.c with nothing but `cc ... $(pkg-config --cflags --libs redlock)`
# and run it against the masters in $REDLOCK_TEST_MASTERS (from with-cluster.sh).
# Proves the installed header, library and redlock.pc are complete, and that
# the installed redlock(3) and its link pages render without a troff warning.
# examples/libuv.c and glib.c build on the installed loop adapters
# (<redlock/libuv.h>, <redlock/glib.h>) and run, where libuv and GLib are.
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
echo "1..7"
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
mandir=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="mandir"))')
case "$mandir" in /*) ;; *) mandir="$prefix/$mandir" ;; esac
man3=$dest$mandir/man3
if [[ ! -f $man3/redlock.3 ]]; then
  echo "not ok 4 - no redlock(3) at $man3/redlock.3"; exit 1
elif warn=$(groff -ww -z -man "$man3/redlock.3" 2>&1) && [[ -z $warn ]]; then
  echo "ok 4 - the installed redlock(3) renders without troff warnings"
else
  echo "not ok 4 - troff warns about the installed redlock(3): $warn"; exit 1
fi
# Each link page is ".so man3/redlock.3", read from the man dir as man(1) does.
for f in redlock_acquire redlock_release redlock_extend; do
  if [[ ! -f $man3/$f.3 ]] || ! warn=$(cd "$dest$mandir" && groff -ww -z -man "man3/$f.3" 2>&1) ||
     [[ -n $warn ]] || ! grep -qx '\.so man3/redlock\.3' "$man3/$f.3"; then
    echo "not ok 5 - $f(3) is not a link page to redlock(3) that renders cleanly: ${warn:-missing}"; exit 1
  fi
done
echo "ok 5 - redlock_acquire(3), redlock_release(3), redlock_extend(3) lead to redlock(3)"
# The loop adapters: headers only, the program links libuv or GLib itself,
# from the system (so pkg-config without our sysroot).
n=5
for loop in libuv:libuv glib:glib-2.0; do
  name=${loop%%:*} pkg=${loop#*:} n=$((n + 1))
  if ! loopflags=$(env -u PKG_CONFIG_SYSROOT_DIR -u PKG_CONFIG_PATH pkg-config --cflags --libs "$pkg"); then
    echo "ok $n # SKIP $pkg not found: examples/$name.c not built"
    continue
  fi
  # shellcheck disable=SC2046,SC2086  # pkg-config's output is a list of words
  if ! err=$(cc "${sanflags[@]}" -Wall -Wextra -Werror "$src/examples/$name.c" \
             $(pkg-config --cflags --libs redlock) $loopflags -o "$dest/$name" 2>&1); then
    echo "not ok $n - examples/$name.c does not build on the installed <redlock/$name.h>"
    echo "# ${err//$'\n'/$'\n'# }"; exit 1
  fi
  if out=$(LD_LIBRARY_PATH="$dest$libdir" "$dest/$name" "$REDLOCK_TEST_MASTERS" 2>&1) \
     && grep -q '^released$' <<<"$out"; then
    echo "ok $n - examples/$name.c builds on the installed <redlock/$name.h> and takes and releases a lock"
  else
    echo "not ok $n - $name failed: $out"; exit 1
  fi
done
