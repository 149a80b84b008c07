#!/usr/bin/env bash
# check-exports.sh - libredlock.so exports the header's functions, versioned,
# and nothing else.
#
# usage: check-exports.sh LIBREDLOCK.so [redlock.h [libredlock.sym]]
#
# Reads the dynamic symbol table (nm -D --defined-only). Fails if:
#   - any defined symbol lacks the redlock_ prefix (a helper leaked past the
#     version script or the hidden visibility);
#   - any symbol has no version, or a version other than a node LIBREDLOCK_1.x
#     (libredlock.sym: soname 1's nodes are LIBREDLOCK_1.0, 1.1, ...), or the
#     library defines a version node not of that form;
# given the public header (the line after each REDLOCK_API names a function):
#   - the set exported and the set declared differ, in either direction
#     (declared but never built, or exported but not public);
# given the version script:
#   - the names its nodes list (global:) differ from the header's.
set -euo pipefail

PROG="check-exports.sh"
(($# >= 1 && $# <= 3)) || {
    echo "usage: $PROG LIBREDLOCK.so [redlock.h [libredlock.sym]]" >&2
    exit 2
}
so=$1
header=${2:-}
symfile=${3:-}
[[ -f $so ]] || { echo "$PROG: $so: no such file" >&2; exit 2; }
[[ -z $header || -f $header ]] || { echo "$PROG: $header: no such file" >&2; exit 2; }
[[ -z $symfile || -f $symfile ]] || { echo "$PROG: $symfile: no such file" >&2; exit 2; }
command -v nm >/dev/null || { echo "$PROG: nm not found (install binutils)" >&2; exit 2; }

VERSION_RE='^LIBREDLOCK_1\.[0-9]+$'

# "ADDR TYPE NAME[@VERSION]" (@@ for a symbol's default version); type A
# entries are the version nodes themselves (LIBREDLOCK_1.0).
nm_out=$(nm -D --defined-only "$so")
mapfile -t nodes < <(awk 'NF >= 3 && $2 == "A" { print $3 }' <<<"$nm_out" | sort -u)
mapfile -t versioned < <(awk 'NF >= 3 && $2 != "A" { print $3 }' <<<"$nm_out" | sort -u)
mapfile -t exported < <(printf '%s\n' "${versioned[@]}" | sed 's/@.*//' | sort -u)

fail=0
if ((${#versioned[@]} == 0)); then
    echo "$PROG: $so exports no symbols at all" >&2
    exit 1
fi

for sym in "${exported[@]}"; do
    if [[ $sym != redlock_* ]]; then
        echo "$PROG: $so exports '$sym' (only redlock_* may be exported)" >&2
        fail=1
    fi
done

# Every symbol carries a version of soname 1: name@@LIBREDLOCK_1.x (or
# name@LIBREDLOCK_1.x, an older default kept for compatibility).
for entry in "${versioned[@]}"; do
    if [[ $entry != *@* ]]; then
        echo "$PROG: $so exports '$entry' without a symbol version (libredlock.sym must list it in a LIBREDLOCK_1.x node)" >&2
        fail=1
        continue
    fi
    ver=${entry##*@}
    if ! [[ $ver =~ $VERSION_RE ]]; then
        echo "$PROG: $so exports '${entry%%@*}' with version '$ver' (want a node LIBREDLOCK_1.x)" >&2
        fail=1
    fi
done
for node in "${nodes[@]}"; do
    if ! [[ $node =~ $VERSION_RE ]]; then
        echo "$PROG: $so defines version node '$node' (want LIBREDLOCK_1.x only)" >&2
        fail=1
    fi
done
if ((${#nodes[@]} == 0)); then
    echo "$PROG: $so defines no version node (is libredlock.sym passed to the linker?)" >&2
    fail=1
fi

# diff_sets WHAT_A A_FILE WHAT_B B_FILE: name what is in one sorted list
# and not in the other; status 1 if they differ.
diff_sets() {
    local what_a=$1 a=$2 what_b=$3 b=$4 sym rc=0
    while IFS= read -r sym; do
        echo "$PROG: $sym is in $what_a but not in $what_b" >&2
        rc=1
    done < <(comm -23 "$a" "$b")
    while IFS= read -r sym; do
        echo "$PROG: $sym is in $what_b but not in $what_a" >&2
        rc=1
    done < <(comm -13 "$a" "$b")
    return "$rc"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-exports.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
printf '%s\n' "${exported[@]}" | LC_ALL=C sort -u >"$tmp/exported"

summary="${#exported[@]} symbols exported (version nodes: ${nodes[*]:-none})"
if [[ -n $header ]]; then
    # The line after each REDLOCK_API names the function.
    awk '/^REDLOCK_API[[:space:]]*$/ { getline; print }' "$header" |
        grep -o 'redlock_[a-z0-9_]*[[:space:]]*(' | tr -d '( \t' | LC_ALL=C sort -u >"$tmp/declared" || true
    ndeclared=$(wc -l <"$tmp/declared")
    ((ndeclared)) || { echo "$PROG: no REDLOCK_API functions found in $header" >&2; exit 1; }
    diff_sets "$header (REDLOCK_API)" "$tmp/declared" "$so's exports" "$tmp/exported" || fail=1
    summary+=", $ndeclared declared in the header"

    if [[ -n $symfile ]]; then
        # The names in the script's global: parts, comments (/* */) dropped;
        # local: parts (the '*') and node names are not names of functions.
        awk '
            {
                line = $0; out = ""
                while (line != "") {
                    if (incomment) {
                        i = index(line, "*/")
                        if (!i) { line = ""; break }
                        line = substr(line, i + 2); incomment = 0
                    } else {
                        i = index(line, "/*")
                        if (!i) { out = out line; line = ""; break }
                        out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1
                    }
                }
                print out
            }' "$symfile" |
            sed 's/[{};]/\n&\n/g' | tr -s ' \t' '\n' | awk '
                /^global:$/ { g = 1; next }
                /^local:$/ { g = 0; next }
                /^}$/ { g = 0; next }
                g && /^[A-Za-z_][A-Za-z0-9_]*$/ { print }' | LC_ALL=C sort >"$tmp/listed.all"
        LC_ALL=C sort -u "$tmp/listed.all" >"$tmp/listed"
        nlisted=$(wc -l <"$tmp/listed")
        if dups=$(uniq -d "$tmp/listed.all") && [[ -n $dups ]]; then
            echo "$PROG: $symfile lists more than once: ${dups//$'\n'/ }" >&2
            fail=1
        fi
        ((nlisted)) || { echo "$PROG: no names found in the global: parts of $symfile" >&2; fail=1; }
        diff_sets "$header (REDLOCK_API)" "$tmp/declared" "$symfile" "$tmp/listed" || fail=1
        summary+=", $nlisted listed in $(basename -- "$symfile")"
    fi
fi
echo "$PROG: $summary"

if ((fail)); then
    exit 1
fi
echo "$PROG: ok: exactly the header's functions exported, each under a LIBREDLOCK_1.x version"
