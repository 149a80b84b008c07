#!/usr/bin/env bash
# check-example.sh [--expect ERE]... -- PROGRAM [ARGS...] - run one of
# examples/ against the masters in $REDLOCK_TEST_MASTERS (with-cluster.sh),
# given as its last argument, as its comment says to run it. TAP: it exits 0,
# and each ERE matches a line of its standard output.
set -euo pipefail
expect=()
while (($#)); do
    case $1 in
    --expect) expect+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "check-example.sh: unexpected argument '$1'" >&2; exit 2 ;;
    esac
done
name=$(basename -- "$1")
echo "1..$((1 + ${#expect[@]}))"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$@" "$REDLOCK_TEST_MASTERS" >"$out" || rc=$?
sed 's/^/# /' "$out"
fail=0
if ((rc == 0)); then
    echo "ok 1 - $name exits 0"
else
    echo "not ok 1 - $name exits $rc"
    fail=1
fi
i=2
for re in "${expect[@]}"; do
    if grep -Eq -- "$re" "$out"; then
        echo "ok $i - $name prints /$re/"
    else
        echo "not ok $i - $name prints no line matching /$re/"
        fail=1
    fi
    i=$((i + 1))
done
exit "$fail"
