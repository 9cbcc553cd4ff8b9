# fish completion for collie(1)
# Generated from collie's command table: make completions. Do not edit.

function __collie_agents
    set -l f (set -q XDG_CONFIG_HOME; and echo $XDG_CONFIG_HOME; or echo $HOME/.config)/collie/sources.json
    test -r $f; and sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' $f
end

# __collie_is CMD: the command line so far runs collie CMD (one word or two).
function __collie_is
    set -l w (commandline -opc)
    set -e w[1]
    set -l args
    for a in $w
        string match -q -- '-*' $a; or set -a args $a
    end
    test (count $argv) -le (count $args); or return 1
    for i in (seq (count $argv))
        test "$argv[$i]" = "$args[$i]"; or return 1
    end
    # collie devices is not collie devices revoke
    test (count $argv) -eq 1; and contains -- "$argv[1] $args[2]" $__collie_twos; and return 1
    return 0
end

set -g __collie_twos 'durable attach' 'durable detach' 'durable list' 'devices revoke' 'push test' 'audit verify' 'agents list' 'agents revoke'
complete -c collie -f
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a daemon -d 'run the bridge in the foreground (what collie.service runs)'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a demo -d 'run the bridge with a demo durable agent, in a throwaway folder'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a doctor -d 'check the installation; prints the fix for every row that is not ok'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a durable -d 'commands: attach, detach, list'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a show -d 'show what the bridge holds: conversations, items, open questions'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a ask -d 'ask the user through a durable agent and wait for the answer (collie ask --help)'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a run -d 'run a command (a coding agent) as the child of a durable agent of its own, so its tools cannot answer its questions'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a setup -d 'make a coding agent ask your phone before its tools run (its hook, fail-closed) and let its model ask you (collie mcp)'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a mcp -d 'an MCP server on stdio: any MCP client asks the user through a durable agent'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a pair -d 'pair a phone or browser: a single-use URL, QR code and check code'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a devices -d 'list paired devices'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a push -d 'commands: test'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a audit -d 'show the audit log of device writes'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a login -d 'in an agent environment: log this agent in to the bridge at BASE (agent login)'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a logout -d 'in an agent environment: remove this agent\'s session and have the bridge revoke it'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a whoami -d 'say who collie runs as: human, or the agent and its session\'s expiries (no network)'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a agents -d 'commands: list, revoke'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a version -d 'print the version'
complete -c collie -n "not __fish_seen_subcommand_from daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help" -a help -d 'print this list of commands'

complete -c collie -n '__collie_is daemon' -l debug -d 'log debug lines too'


complete -c collie -n '__collie_is doctor' -l check -x -a 'binary config sources durable-socket agent-config desk state-dir audit-log units linger journald daemon device-listener public_url push config-reload agent-login coding-agents runs' -d 'run only the check NAME'
complete -c collie -n '__collie_is doctor' -l json -d 'print JSON'

complete -c collie -n '__collie_is durable' -a 'attach detach list'

complete -c collie -n '__collie_is durable attach' -l ca-file -r -F -d 'a PEM file of a private CA to trust for --url'
complete -c collie -n '__collie_is durable attach' -l socket -r -F -d 'the agent\'s Unix socket path'
complete -c collie -n '__collie_is durable attach' -l token-env -x -a '(set -n)' -d 'the environment variable VAR that holds the token'
complete -c collie -n '__collie_is durable attach' -l url -x -d 'the agent\'s URL'

complete -c collie -n '__collie_is durable detach' -a '(__collie_agents)'

complete -c collie -n '__collie_is durable list' -l json -d 'print JSON'

complete -c collie -n '__collie_is show' -l json -d 'print JSON'

complete -c collie -n '__collie_is ask' -l agent -x -a '(__collie_agents)' -d 'ask through collie-agent@NAME'
complete -c collie -n '__collie_is ask' -l choice -x -d 'kind: one option LABEL of a single-choice question'
complete -c collie -n '__collie_is ask' -l command -x -d 'the tool\'s command CMD, for "always allow"'
complete -c collie -n '__collie_is ask' -l form -x -d 'kind: one field ID=LABEL of a short form'
complete -c collie -n '__collie_is ask' -l hook -x -a 'claude codex gemini opencode' -d 'be CLIENT\'s tool hook'
complete -c collie -n '__collie_is ask' -l json -d 'print the decision as JSON'
complete -c collie -n '__collie_is ask' -l line -d 'kind: one line of text'
complete -c collie -n '__collie_is ask' -l rationale -x -d 'why it is asked, as TEXT'
complete -c collie -n '__collie_is ask' -l socket -r -F -d 'ask through the agent listening at PATH'
complete -c collie -n '__collie_is ask' -l timeout -x -d 'deny by default after DURATION'
complete -c collie -n '__collie_is ask' -l title -x -d 'the question TEXT'
complete -c collie -n '__collie_is ask' -l tool -x -d 'the tool NAME the question gates, for "always allow"'
complete -c collie -n '__collie_is ask' -l tool-call -x -d 'asking again with the same KEY returns the first decision'
complete -c collie -n '__collie_is ask' -l yes-no -d 'kind: a yes/no question'

complete -c collie -n '__collie_is run' -l name -x -d 'the run\'s agent NAME, its socket $XDG_RUNTIME_DIR/desk/NAME.sock'
complete -c collie -n '__collie_is run' -l no-systemd -d 'do not ask the user manager for a scope: use a child cgroup where the cgroup tree is writable, else the process family'
complete -c collie -n '__collie_is run' -l sandbox -d 'run the command under bubblewrap with $XDG_RUNTIME_DIR emptied but for the run\'s socket: its tools cannot reach the user manager, other agents or the bridge\'s control socket'
complete -c collie -n '__collie_is run' -F

complete -c collie -n '__collie_is setup' -l dry-run -d 'print the change and write nothing'
complete -c collie -n '__collie_is setup' -l no-hook -d 'leave the hook out: tools run without asking your phone first'
complete -c collie -n '__collie_is setup' -l no-mcp -d 'leave the MCP server out: the model cannot ask you a question itself'
complete -c collie -n '__collie_is setup' -l project -r -a '(__fish_complete_directories)' -d 'write the project\'s settings in DIR instead of your own'
complete -c collie -n '__collie_is setup' -l timeout -x -d 'how long a question waits for your answer before the tool is denied'
complete -c collie -n '__collie_is setup' -a 'claude codex gemini opencode'

complete -c collie -n '__collie_is mcp' -l agent -x -a '(__collie_agents)' -d 'ask through collie-agent@NAME'
complete -c collie -n '__collie_is mcp' -l socket -r -F -d 'ask through the durable agent listening at PATH'
complete -c collie -n '__collie_is mcp' -l timeout -x -d 'deny a question by default after DURATION when the call gives no timeout'

complete -c collie -n '__collie_is pair' -l json -d 'print JSON'
complete -c collie -n '__collie_is pair' -l local -d 'show a link that only a browser on this machine can open'
complete -c collie -n '__collie_is pair' -l no-qr -d 'do not draw the QR code'

complete -c collie -n '__collie_is devices' -l json -d 'print JSON'
complete -c collie -n '__collie_is devices' -a 'revoke'


complete -c collie -n '__collie_is push' -a 'test'

complete -c collie -n '__collie_is push test' -l json -d 'print JSON'

complete -c collie -n '__collie_is audit' -l agent -x -a '(__collie_agents)' -d 'show only the lines of the durable agent NAME'
complete -c collie -n '__collie_is audit' -l device -x -d 'show only the lines of the device ID'
complete -c collie -n '__collie_is audit' -l event -x -a 'answer send abort action starter.start durable.reopen space.rename pane.close pane.rename tab.rename push.subscribe push.unsubscribe' -d 'show only the event E'
complete -c collie -n '__collie_is audit' -l json -d 'print the lines as they are in the log, one JSON object a line'
complete -c collie -n '__collie_is audit' -l since -x -d 'show only lines from DUR ago'
complete -c collie -n '__collie_is audit' -a 'verify'

complete -c collie -n '__collie_is audit verify' -l json -d 'print the report as JSON'
complete -c collie -n '__collie_is audit verify' -F

complete -c collie -n '__collie_is login' -l ca-file -r -F -d 'a PEM file with the bridge\'s certificate'
complete -c collie -n '__collie_is login' -l url -x -d 'the bridge\'s address: https://HOST[:PORT], or http://127.0.0.1:PORT'


complete -c collie -n '__collie_is whoami' -l json -d 'print it as JSON'

complete -c collie -n '__collie_is agents' -a 'list revoke'

complete -c collie -n '__collie_is agents list' -l json -d 'print JSON'



