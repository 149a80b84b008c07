#!/usr/bin/env bash
# completion-check.sh SRCDIR - cli/completion/: bash's offers the commands,
# the options of the command on the line, fixed values and, after
# `run R --`, commands; zsh's parses (when zsh is installed). TAP.
set -uo pipefail
bash_file=$1/cli/completion/redlock-cli.bash
zsh_file=$1/cli/completion/_redlock-cli
n=0 fail=0

# offers WHAT WANT WORD...: completing the last WORD offers WANT (words, all
# of them, in any order among others).
offers() {
    local what=$1 want=$2 got
    shift 2
    n=$((n + 1))
    # shellcheck disable=SC2016  # expanded by the inner bash
    got=$(bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
                   _redlock_cli; echo "${COMPREPLY[*]}"' sh "$bash_file" redlock-cli "$@")
    for w in $want; do
        if [[ " $got " != *" $w "* ]]; then
            echo "not ok $n - $what: '$w' not in '$got'"
            fail=1
            return
        fi
    done
    echo "ok $n - $what"
}

echo "1..10"
offers "the commands, first" "lock unlock extend run status ping declare-empty readmit metrics" ""
offers "a command from its start" "lock" lo
offers "the commands after global options" "run" --masters h:1 --ttl 5 ru
offers "run's own options" "--foreground --kill-after -k --nonblock -n --wait -w --metrics-file" run res -
offers "metrics' own options" "--samples" metrics -
offers "global options after a command" "--config --masters --tls" lock res --
offers "the clock policies" "warn exclude off" ping --clock-policy ""
offers "forever for --wait" "forever" lock r -w f
offers "a command to run after run R --" "bash" run res -- bas
n=$((n + 1))
if ! command -v zsh >/dev/null; then
    echo "ok $n # SKIP zsh is not installed"
elif out=$(zsh -n "$zsh_file" 2>&1); then
    echo "ok $n - the zsh completion parses"
else
    echo "not ok $n - zsh -n: $out"
    fail=1
fi
exit "$fail"
