# bash completion for collie(1)                            -*- shell-script -*-
# Generated from collie's command table: make completions. Do not edit.

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

    if ((cword == 1)); then
        COMPREPLY=($(compgen -W "daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -- "$cur"))
        return
    fi

    local cmd=${words[1]} first=2
    if ((cword > 2)); then
        case "${words[1]} ${words[2]}" in
            "durable attach" | "durable detach" | "durable list" | "devices revoke" | "push test" | "audit verify" | "agents list" | "agents revoke")
                cmd="${words[1]} ${words[2]}" first=3
                ;;
        esac
    fi

    case $cmd in
        "daemon")
            COMPREPLY=($(compgen -W "--debug" -- "$cur"))
            ;;
        "demo")
            ;;
        "doctor")
            case $prev in
                --check)
                    COMPREPLY=($(compgen -W "binary config sources durable-socket agent-config desk state-dir audit-log units linger journald daemon device-listener public_url push config-reload agent-login coding-agents runs" -- "$cur"))
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--check --json" -- "$cur"))
            ;;
        "durable")
            if ((cword == first)); then
                COMPREPLY=($(compgen -W "attach detach list" -- "$cur"))
                return
            fi
            ;;
        "durable attach")
            case $prev in
                --ca-file)
                    _filedir
                    return
                    ;;
                --socket)
                    _filedir
                    return
                    ;;
                --token-env)
                    COMPREPLY=($(compgen -v -- "$cur"))
                    return
                    ;;
                --url)
                    :
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--ca-file --socket --token-env --url" -- "$cur"))
            ;;
        "durable detach")
            COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
            ;;
        "durable list")
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        "show")
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        "ask")
            case $prev in
                --agent)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    return
                    ;;
                --choice)
                    :
                    return
                    ;;
                --command)
                    :
                    return
                    ;;
                --form)
                    :
                    return
                    ;;
                --hook)
                    COMPREPLY=($(compgen -W "claude codex gemini opencode" -- "$cur"))
                    return
                    ;;
                --rationale)
                    :
                    return
                    ;;
                --socket)
                    _filedir
                    return
                    ;;
                --timeout)
                    :
                    return
                    ;;
                --title)
                    :
                    return
                    ;;
                --tool)
                    :
                    return
                    ;;
                --tool-call)
                    :
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--agent --choice --command --form --hook --json --line --rationale --socket --timeout --title --tool --tool-call --yes-no" -- "$cur"))
            ;;
        "run")
            case $prev in
                --name)
                    :
                    return
                    ;;
            esac
            local i
            for ((i = first; i < cword; i++)); do
                if [[ ${words[i]} == -- ]]; then
                    _command_offset $((i + 1))
                    return
                fi
            done
            COMPREPLY=($(compgen -W "--name --no-systemd --sandbox" -- "$cur"))
            ;;
        "setup")
            case $prev in
                --project)
                    _filedir -d
                    return
                    ;;
                --timeout)
                    :
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "claude codex gemini opencode --dry-run --no-hook --no-mcp --project --timeout" -- "$cur"))
            ;;
        "mcp")
            case $prev in
                --agent)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    return
                    ;;
                --socket)
                    _filedir
                    return
                    ;;
                --timeout)
                    :
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--agent --socket --timeout" -- "$cur"))
            ;;
        "pair")
            COMPREPLY=($(compgen -W "--json --local --no-qr" -- "$cur"))
            ;;
        "devices")
            if ((cword == first)); then
                COMPREPLY=($(compgen -W "revoke --json" -- "$cur"))
                return
            fi
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        "devices revoke")
            ;;
        "push")
            if ((cword == first)); then
                COMPREPLY=($(compgen -W "test" -- "$cur"))
                return
            fi
            ;;
        "push test")
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        "audit")
            case $prev in
                --agent)
                    COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))
                    return
                    ;;
                --device)
                    :
                    return
                    ;;
                --event)
                    COMPREPLY=($(compgen -W "answer send abort action starter.start durable.reopen space.rename pane.close pane.rename tab.rename push.subscribe push.unsubscribe" -- "$cur"))
                    return
                    ;;
                --since)
                    :
                    return
                    ;;
            esac
            if ((cword == first)); then
                COMPREPLY=($(compgen -W "verify --agent --device --event --json --since" -- "$cur"))
                return
            fi
            COMPREPLY=($(compgen -W "--agent --device --event --json --since" -- "$cur"))
            ;;
        "audit verify")
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            _filedir
            ;;
        "login")
            case $prev in
                --ca-file)
                    _filedir
                    return
                    ;;
                --url)
                    :
                    return
                    ;;
            esac
            COMPREPLY=($(compgen -W "--ca-file --url" -- "$cur"))
            ;;
        "logout")
            ;;
        "whoami")
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        "agents")
            if ((cword == first)); then
                COMPREPLY=($(compgen -W "list revoke" -- "$cur"))
                return
            fi
            ;;
        "agents list")
            COMPREPLY=($(compgen -W "--json" -- "$cur"))
            ;;
        "agents revoke")
            ;;
        "version")
            ;;
        "help")
            ;;
    esac
} &&
    complete -F _collie collie

# ex: filetype=sh
