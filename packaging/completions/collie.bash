# bash completion for collie(1)                            -*- shell-script -*-

_collie_agents()
{
    # Names of the attached agents, from sources.json; no daemon needed.
    local f=${XDG_CONFIG_HOME:-$HOME/.config}/collie/sources.json
    [[ -r $f ]] && sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' "$f"
}

_collie()
{
    local cur prev words cword
    _init_completion || return

    local checks="binary config sources durable-socket agent-config desk state-dir audit-log units linger journald daemon device-listener public_url push config-reload agent-login coding-agents runs"
    case $prev in
        --socket | --ca-file)
            _filedir
            return
            ;;
        --check)
            COMPREPLY=($(compgen -W "$checks" -- "$cur"))
            return
            ;;
        --token-env)
            COMPREPLY=($(compgen -v -- "$cur"))
            return
            ;;
        --url)
            return
            ;;
    esac

    if ((cword == 1)); then
        COMPREPLY=($(compgen -W "daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -- "$cur"))
        return
    fi

    case ${words[1]} in
        daemon)
            COMPREPLY=($(compgen -W "--debug" -- "$cur"))
            ;;
        doctor)
            COMPREPLY=($(compgen -W "--json --check" -- "$cur"))
            ;;
        show)
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        pair)
            COMPREPLY=($(compgen -W "--json --no-qr --local" -- "$cur"))
            ;;
        login)
            COMPREPLY=($(compgen -W "--url --ca-file" -- "$cur"))
            ;;
        whoami)
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        push)
            if ((cword == 2)); then
                COMPREPLY=($(compgen -W "test" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--json" -- "$cur"))
            fi
            ;;
        agents)
            if ((cword == 2)); then
                COMPREPLY=($(compgen -W "list revoke" -- "$cur"))
            elif [[ ${words[2]} == list ]]; then
                COMPREPLY=($(compgen -W "--json" -- "$cur"))
            fi
            ;;
        devices)
            if ((cword == 2)); then
                COMPREPLY=($(compgen -W "revoke --json" -- "$cur"))
            fi
            ;;
        ask)
            case $prev in
                --socket)
                    _filedir
                    return
                    ;;
                --agent)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    return
                    ;;
                --hook)
                    COMPREPLY=($(compgen -W "claude codex gemini opencode" -- "$cur"))
                    return
                    ;;
                --choice | --form | --title | --rationale | --tool-call | --tool | --command | --timeout)
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--yes-no --choice --line --form --title --rationale --tool-call --tool --command --timeout --json --agent --socket --hook" -- "$cur"))
            ;;
        run)
            case $prev in
                --name)
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--name --no-systemd --sandbox" -- "$cur"))
            ;;
        setup)
            case $prev in
                --project)
                    _filedir -d
                    return
                    ;;
                --timeout)
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "claude codex gemini opencode --project --dry-run --timeout --no-hook --no-mcp" -- "$cur"))
            ;;
        mcp)
            case $prev in
                --socket)
                    _filedir
                    return
                    ;;
                --agent)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    return
                    ;;
                --timeout)
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--agent --socket --timeout" -- "$cur"))
            ;;
        audit)
            case $prev in
                --event)
                    COMPREPLY=($(compgen -W "answer send abort action starter.start durable.reopen space.rename pane.close pane.rename tab.rename" -- "$cur"))
                    return
                    ;;
                --agent)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    return
                    ;;
                --device | --since)
                    return
                    ;;
            esac
            if ((cword == 2)); then
                COMPREPLY=($(compgen -W "verify --agent --device --event --since --json" -- "$cur"))
            elif [[ ${words[2]} == verify ]]; then
                COMPREPLY=($(compgen -W "--json" -- "$cur"))
                _filedir
            else
                COMPREPLY=($(compgen -W "--agent --device --event --since --json" -- "$cur"))
            fi
            ;;
        durable)
            if ((cword == 2)); then
                COMPREPLY=($(compgen -W "attach detach list" -- "$cur"))
                return
            fi
            case ${words[2]} in
                attach)
                    COMPREPLY=($(compgen -W "--socket --url --token-env --ca-file" -- "$cur"))
                    ;;
                detach)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    ;;
                list)
                    COMPREPLY=($(compgen -W "--json" -- "$cur"))
                    ;;
            esac
            ;;
    esac
} &&
    complete -F _collie collie

# ex: filetype=sh
