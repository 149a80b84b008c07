#!/usr/bin/env bash
# deps.sh - install the Debian 12 packages redlock builds, tests and benches with.
#
# Asks dpkg first and touches apt only when something is missing, so a second
# run is instant and needs no network. Never starts or needs Debian's own
# redis-server service: the tests run their own masters (cluster-up.sh) on
# their own ports, and a service on 6379 is neither used nor in the way.
set -euo pipefail

PROG="deps.sh"
PACKAGES=(
    build-essential pkg-config meson ninja-build
    libhiredis-dev libevent-dev libssl-dev libcriterion-dev
    redis-server faketime iproute2 gnuplot-nox
    clang libclang-rt-14-dev python3
)

installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

missing=()
for p in "${PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
    echo "$PROG: all ${#PACKAGES[@]} packages present"
    exit 0
fi

echo "$PROG: installing: ${missing[*]}"
sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null ||
        { echo "$PROG: missing packages and not root (no sudo): run as root" >&2; exit 1; }
    sudo=(sudo)
fi

# Keep the redis-server package from starting its service during the
# install: nothing here uses it. policy-rc.d is honoured by invoke-rc.d and
# by deb-systemd-invoke; ours is removed afterwards, and an existing one is
# left alone.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# written by redlock tools/deps.sh during apt-get install\nexit 101\n' |
        "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    own_policy=1
fi
cleanup() {
    if ((own_policy)); then
        "${sudo[@]}" rm -f "$policy"
    fi
}
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"

still=()
for p in "${missing[@]}"; do
    installed "$p" || still+=("$p")
done
if ((${#still[@]})); then
    echo "$PROG: still missing after apt-get: ${still[*]}" >&2
    exit 1
fi
echo "$PROG: installed ${#missing[@]} package(s)"
