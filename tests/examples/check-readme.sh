#!/usr/bin/env bash
# check-readme.sh README EXAMPLE... - every program the README shows in full
# is the example file it names, byte for byte, so the README's program is
# the one the tests build and run. In the README the marker line
# `<!-- example: examples/NAME -->` precedes the fenced code block. TAP.
set -euo pipefail
readme=$1
shift
root=$(dirname -- "$readme")
echo "1..$#"
i=0 fail=0
for f in "$@"; do
    i=$((i + 1))
    rel=${f#"$root"/}
    block=$(awk -v m="<!-- example: $rel -->" '
        $0 == m { want = 1; next }
        want && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }' "$readme")
    if [[ -z $block ]]; then
        echo "not ok $i - $readme shows no block marked <!-- example: $rel -->"
        fail=1
    elif ! d=$(diff -u --label "$readme" --label "$rel" <(printf '%s\n' "$block") "$f"); then
        printf '%s\n' "$d" | sed 's/^/# /'
        echo "not ok $i - $readme's program differs from $rel"
        fail=1
    else
        echo "ok $i - $readme shows $rel as it is"
    fi
done
exit "$fail"
