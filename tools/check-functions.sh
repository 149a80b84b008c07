#!/usr/bin/env bash
# check-functions.sh - is every function of redlock/ at most 60 lines long?
#
#   tools/check-functions.sh [MAX]
#
# Issue 30: a function a reader holds in one screen. The body is what lies
# between a "{" and a "}" alone at the start of a line, which is where
# .clang-format puts a function's braces (the format stage checks that
# first). Prints one line per function over MAX (default 60) lines, with
# its file, line and name, and exits 1 if there is any; 0 and one summary
# line otherwise. No build, no server: the format stage of
# tools/run-tests.sh runs it.
set -euo pipefail

PROG="check-functions.sh"
MAX=${1:-60}
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

mapfile -t files < <(find redlock -type f -name '*.c' | LC_ALL=C sort)
out=$(awk -v max="$MAX" '
    FNR == 1 { prev = ""; open = 0 }
    /^\{$/ { open = FNR; name = prev; next }
    /^\}/ && open {
        n = FNR - open - 1
        if (n > max) {
            sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
            printf "%s:%d: %s is %d lines (at most %d)\n", FILENAME, open, name, n, max
        }
        open = 0; next
    }
    !open && /^[A-Za-z_]/ && /\(/ { prev = $0 }
' "${files[@]}")
if [[ -n $out ]]; then
    printf '%s\n' "$out"
    echo "$PROG: $(wc -l <<<"$out") function(s) over $MAX lines in redlock/: split them" >&2
    exit 1
fi
echo "$PROG: every function of ${#files[@]} files in redlock/ is at most $MAX lines"
