# redlock-cli(1) completion for bash: commands, options (those of the
# command on the line, and the global ones), option values that have a
# fixed set (clock policy, signals, forever), files where a file goes, and
# after `run RESOURCE --` the command to run. Self-contained: it needs no
# bash-completion helpers, so that `source`-ing it alone works.

_redlock_cli()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands='lock unlock extend run status ping declare-empty readmit metrics'
    local global='--masters --masters-file --config --timeout-ms --connect-timeout-ms
        --retry --retry-delay --drift-factor --prefix --user --password-file --tls
        --cacert --cacertdir --cert --key --sni --insecure --clock-policy
        --restart-guard-ms --no-restart-guard --json --quiet --verbose --help --version'
    # Options that take a value: the word after one is not the command.
    local valued=' --masters --masters-file --config --timeout-ms --connect-timeout-ms
        --retry --retry-delay --drift-factor --prefix --user --password-file --cacert
        --cacertdir --cert --key --sni --clock-policy --restart-guard-ms --ttl --wait -w
        --kill-after -k --samples -E --conflict-exit-code --max-extends --max-lease
        -c --command -s --signal --metrics-file '
    local cmd='' i w words=0 dashdash=0

    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $cmd == run && $w == -- && $words -gt 0 ]]; then
            dashdash=$i
            break
        fi
        if [[ $valued == *" $w "* ]]; then
            ((i++))
        elif [[ $w != -* ]]; then
            if [[ -z $cmd ]]; then cmd=$w; else ((words++)); fi
        fi
    done
    # run RESOURCE -- CMD ...: CMD is any command, then its own words.
    if ((dashdash > 0)); then
        if ((COMP_CWORD == dashdash + 1)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return 0
    fi
    case $prev in
    --masters-file | --password-file | --config | --cacert | --cert | --key | --metrics-file)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return 0 ;;
    --cacertdir)
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        return 0 ;;
    --clock-policy)
        mapfile -t COMPREPLY < <(compgen -W 'warn exclude off' -- "$cur")
        return 0 ;;
    -s | --signal)
        mapfile -t COMPREPLY < <(compgen -W 'TERM INT HUP QUIT KILL USR1 USR2' -- "$cur")
        return 0 ;;
    -w | --wait)
        mapfile -t COMPREPLY < <(compgen -W 'forever' -- "$cur")
        return 0 ;;
    esac
    if [[ $valued == *" $prev "* ]]; then
        COMPREPLY=()   # a number, a duration, a name: nothing to offer
        return 0
    fi
    if [[ -z $cmd && $cur != -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
        return 0
    fi
    if [[ $cur == -* ]]; then
        local own=''
        case $cmd in
        lock) own='--ttl --wait -w --nonblock -n --fence --no-pubsub --conflict-exit-code -E' ;;
        extend) own='--ttl' ;;
        readmit) own='--ttl --force' ;;
        declare-empty) own='--force' ;;
        run) own='--ttl --wait -w --nonblock -n --fence --no-pubsub --conflict-exit-code -E
                --kill-after -k --foreground --max-extends --max-lease --command -c --signal -s
                --metrics-file --' ;;
        ping | metrics) own='--samples' ;;
        esac
        mapfile -t COMPREPLY < <(compgen -W "$global $own" -- "$cur")
    fi
    return 0
}
complete -F _redlock_cli redlock-cli
