#!/bin/sh
# bundle-static.sh LIBDIR ARCHIVE... - meson install script (redlock/meson.build):
# append the vendored hiredis archives (tools/deps.sh --hiredis12) to the
# installed libredlock.a, as they are inside libredlock.so already, so that
# `pkg-config --static --libs redlock` (which names no hiredis) is enough for
# a static link. The hiredis objects keep their names (redisConnect, ...):
# a program that also links another hiredis statically gets two.
set -eu
libdir=$1
shift
case $libdir in
/*) a=${DESTDIR:-}$libdir/libredlock.a ;;
*) a=$MESON_INSTALL_DESTDIR_PREFIX/$libdir/libredlock.a ;;
esac
[ -f "$a" ] || { echo "bundle-static.sh: no $a" >&2; exit 1; }
{
    echo "OPEN $a"
    for lib; do echo "ADDLIB $lib"; done
    echo "SAVE"
    echo "END"
} | ${AR:-ar} -M
${RANLIB:-ranlib} "$a"
[ -n "${MESON_INSTALL_QUIET:-}" ] || echo "bundle-static.sh: $a now holds $*"
