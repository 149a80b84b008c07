#!/bin/sh
# private-hosts.sh - run a test with an /etc/hosts and /etc/resolv.conf of its own.
#
#   private-hosts.sh TEST [ARGS...]
#
# A test of names that move (test-names-move.c) rewrites what a host name
# resolves to while a client runs. It cannot touch the machine's /etc/hosts,
# so it runs in a private mount namespace (unshare -m: mounts made there are
# private to it) where a file of its own is bind-mounted over /etc/hosts;
# REDLOCK_TEST_HOSTS names that file. resolv.conf (REDLOCK_TEST_RESOLV, the
# same way) points at a port where no DNS server listens, so a name missing
# from the file fails at once instead of waiting for the machine's resolver,
# whatever the network does; a test may point it at a server that never
# answers, for a look-up that takes its time.
# Where the namespace or the mount is not permitted (no root, a container
# without CAP_SYS_ADMIN), the test runs anyway with REDLOCK_TEST_HOSTS_SKIP
# saying why, and skips each test with that line. Exits with the test's status.
set -eu

[ $# -ge 1 ] || { echo "usage: private-hosts.sh TEST [ARGS...]" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/redlock-hosts.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
printf '127.0.0.1 localhost\n::1 localhost\n' >"$dir/hosts"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$dir/resolv.conf"

# One probe that does what the run will do, so the reason is the real one.
if ! why=$(unshare -m sh -c 'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf' \
        sh "$dir/hosts" "$dir/resolv.conf" 2>&1); then
    why=$(printf '%s' "$why" | tr '\n' ' ')
    REDLOCK_TEST_HOSTS_SKIP="private /etc/hosts not permitted here (unshare -m, mount --bind): $why"
    export REDLOCK_TEST_HOSTS_SKIP
    echo "private-hosts.sh: $REDLOCK_TEST_HOSTS_SKIP" >&2
    status=0
    "$@" || status=$?
    exit "$status"
fi
REDLOCK_TEST_HOSTS=$dir/hosts
REDLOCK_TEST_RESOLV=$dir/resolv.conf
export REDLOCK_TEST_HOSTS REDLOCK_TEST_RESOLV
status=0
unshare -m sh -c 'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && shift 2 &&
    exec "$@"' sh "$dir/hosts" "$dir/resolv.conf" "$@" || status=$?
exit "$status"
