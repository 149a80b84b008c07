#!/usr/bin/env bash
# check-layers.sh - does every include of redlock/ run down its layers?
#
#   tools/check-layers.sh
#
# redlock/ is one folder per layer, LAYERS below, bottom up (docs/map.md,
# "Layers"). A file may include the headers of its own layer and of the
# layers below it, never one of a layer above. The library's files name a
# header of the library by its layer ("core/op.h", from the one private
# include dir redlock/), so the layer is read from the include itself; a
# bare name of such a header ("op.h") is refused too, as is a .c or .h of
# redlock/ outside the layer folders and include/ (the public header,
# which includes none of them). The top layer, adapters/, holds the loop
# adapters (<redlock/libuv.h>, <redlock/glib.h>): installed headers that
# use the public API alone, so they may include no layer's header at all.
# Prints one line per violation (the file, the include, the two layers)
# and a summary on stderr, and exits 1 if there is any; 0 and one summary
# line otherwise.
# No build, no server: the format stage of tools/run-tests.sh runs it.
set -euo pipefail

PROG="check-layers.sh"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

# The layers of redlock/, bottom up: each may include those before it.
LAYERS=(base transport node wire core kinds api adapters)
# Layers that are the library's users: they include the public API alone.
PUBLIC_ONLY=(adapters)

declare -A rank=()
for i in "${!LAYERS[@]}"; do
    rank[${LAYERS[i]}]=$i
done

declare -A public_only=()
for l in "${PUBLIC_ONLY[@]}"; do
    public_only[$l]=1
done

# Every header of a layer, by its bare name: a bare include of one is refused.
# Not the adapters': they are included as <redlock/NAME.h>, and <glib.h> is
# GLib's.
declare -A ours=()
while IFS= read -r h; do
    ours[${h##*/}]=${h#redlock/}
done < <(find redlock -mindepth 2 -type f -name '*.h' -not -path 'redlock/include/*' \
    -not -path 'redlock/adapters/*')

bad=0
files=0
while IFS= read -r f; do
    files=$((files + 1))
    rel=${f#redlock/}
    layer=${rel%%/*}
    if [[ $rel != */* || -z ${rank[$layer]+x} ]]; then
        echo "$PROG: $f: in no layer's folder (${LAYERS[*]})"
        bad=$((bad + 1))
        continue
    fi
    while IFS=: read -r n inc; do
        to=${inc%%/*}
        if [[ $inc != */* ]]; then
            [[ -n ${ours[$inc]+x} ]] || continue
            echo "$PROG: $f:$n: #include \"$inc\": name it by its layer, \"${ours[$inc]}\""
        elif [[ -z ${rank[$to]+x} ]]; then
            continue
        elif [[ -n ${public_only[$layer]+x} ]]; then
            echo "$PROG: $f:$n: #include \"$inc\": $layer/ may include the public API (<redlock.h>) and no layer"
        elif ((rank[$to] > rank[$layer])); then
            echo "$PROG: $f:$n: #include \"$inc\": $layer includes $to, a layer above it"
        else
            continue
        fi
        bad=$((bad + 1))
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$f" |
        sed -n 's/^\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*["<]\([^">]*\)[">].*/\1:\2/p')
done < <(find redlock -type f -name '*.[ch]' -not -path 'redlock/include/*' | LC_ALL=C sort)

if ((bad)); then
    echo "$PROG: $bad against the layers in $files files of redlock/ (bottom up: ${LAYERS[*]}; docs/map.md, \"Layers\")" >&2
    exit 1
fi
echo "$PROG: the includes of all $files files of redlock/ run down its layers (${LAYERS[*]})"
