#!/usr/bin/env bash
# check-exports.sh - libredlock.so exports redlock_* and nothing else.
#
# usage: check-exports.sh LIBREDLOCK.so [redlock.h]
#
# Reads the dynamic symbol table (nm -D --defined-only). Fails if any defined
# symbol lacks the redlock_ prefix (a helper leaked past the version script
# or the hidden visibility), and, given the public header, if a function it
# declares with REDLOCK_API is not exported (declared but never built).
set -euo pipefail

PROG="check-exports.sh"
(($# >= 1 && $# <= 2)) || {
    echo "usage: $PROG LIBREDLOCK.so [redlock.h]" >&2
    exit 2
}
so=$1
header=${2:-}
[[ -f $so ]] || { echo "$PROG: $so: no such file" >&2; exit 2; }
command -v nm >/dev/null || { echo "$PROG: nm not found (install binutils)" >&2; exit 2; }

# "ADDR TYPE NAME[@VERSION]"; type A entries are version nodes (LIBREDLOCK_0).
mapfile -t exported < <(nm -D --defined-only "$so" |
    awk 'NF >= 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)

fail=0
if ((${#exported[@]} == 0)); then
    echo "$PROG: $so exports no symbols at all" >&2
    exit 1
fi

for sym in "${exported[@]}"; do
    if [[ $sym != redlock_* ]]; then
        echo "$PROG: $so exports '$sym' (only redlock_* may be exported)" >&2
        fail=1
    fi
done

if [[ -n $header ]]; then
    # The line after each REDLOCK_API names the function.
    mapfile -t declared < <(awk '/^REDLOCK_API[[:space:]]*$/ { getline; print }' "$header" |
        grep -o 'redlock_[a-z0-9_]*[[:space:]]*(' | tr -d '( \t' | sort -u)
    ((${#declared[@]})) || { echo "$PROG: no REDLOCK_API functions found in $header" >&2; exit 1; }
    # A lookup table, not `printf | grep -q`: under pipefail, grep -q exits
    # at the first match and printf may die of SIGPIPE, failing the pipeline
    # on a symbol that is there.
    declare -A is_exported=()
    for sym in "${exported[@]}"; do
        is_exported[$sym]=1
    done
    for fn in "${declared[@]}"; do
        if [[ -z ${is_exported[$fn]:-} ]]; then
            echo "$PROG: $header declares $fn() but $so does not export it" >&2
            fail=1
        fi
    done
    echo "$PROG: ${#exported[@]} symbols exported, ${#declared[@]} declared in the header"
else
    echo "$PROG: ${#exported[@]} symbols exported"
fi

if ((fail)); then
    exit 1
fi
echo "$PROG: ok: only redlock_* exported"
