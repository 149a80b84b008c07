#!/usr/bin/env bash
# check-map.sh - does docs/map.md name every source file?
#
#   tools/check-map.sh
#
# Every .c and .h under redlock/, drift/, cli/ and bench/ must be named in
# docs/map.md: by its path below its directory, in backticks
# (`kinds/acquire.c`, `include/redlock.h`), anywhere in the section whose
# "## " heading names that directory in backticks (`redlock/`), or by its
# whole path in backticks anywhere (`cli/opts.c`). In a table row of such a
# section whose first cell is a folder in backticks (`kinds/`), the row's
# names are below that folder (`acquire.c` is `redlock/kinds/acquire.c`). Prints one line per file the map does
# not name (and a summary on stderr) and exits 1 if there is any; 0 and
# one summary line otherwise.
# No build, no server: the format stage of tools/run-tests.sh runs it.
set -euo pipefail

PROG="check-map.sh"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
DIRS=(redlock drift cli bench)
MAP=docs/map.md

[[ -f $MAP ]] || { echo "$PROG: no $MAP" >&2; exit 2; }

# What the map names: "DIR/PATH" for each `PATH` in a section of DIR
# ("DIR/FOLDER/PATH" in a row of FOLDER), and each `DIR/PATH` anywhere,
# one per line.
named=$(awk '
    /^## / {
        dir = ""
        if (match($0, /`[a-z][a-z0-9_-]*\/`/))
            dir = substr($0, RSTART + 1, RLENGTH - 2)
    }
    {
        folder = ""
        if (dir != "" && match($0, /^\| *`[a-z][a-z0-9_-]*\/` *\|/)) {
            folder = substr($0, RSTART, RLENGTH)
            sub(/^\| *`/, "", folder)
            sub(/` *\|$/, "", folder)
        }
        line = $0
        while (match(line, /`[^`]+`/)) {
            tok = substr(line, RSTART + 1, RLENGTH - 2)
            line = substr(line, RSTART + RLENGTH)
            if (tok !~ /\.[ch]$/)
                continue
            print tok
            if (dir != "")
                print dir tok
            if (folder != "" && tok !~ /\//)
                print dir folder tok
        }
    }' "$MAP" | LC_ALL=C sort -u)

files=$(find "${DIRS[@]}" -type f -name '*.[ch]' | LC_ALL=C sort)
total=$(wc -l <<<"$files")
missing=0
while IFS= read -r f; do
    [[ -n $f ]] || continue
    echo "$PROG: $MAP does not name $f"
    missing=$((missing + 1))
done < <(LC_ALL=C comm -23 <(echo "$files") <(echo "$named"))

if ((missing)); then
    echo "$PROG: $missing of $total source files missing from $MAP (add each to its directory's table there)" >&2
    exit 1
fi
echo "$PROG: $MAP names all $total source files of ${DIRS[*]}"
