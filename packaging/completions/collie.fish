# fish completion for collie(1)

function __collie_agents
    set -l f (set -q XDG_CONFIG_HOME; and echo $XDG_CONFIG_HOME; or echo $HOME/.config)/collie/sources.json
    test -r $f; and sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' $f
end

set -l commands daemon demo doctor durable show ask run setup mcp pair devices push audit login logout whoami agents version help
complete -c collie -f
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a daemon -d 'Run the bridge in the foreground'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a demo -d 'Run the bridge with a demo agent'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a doctor -d 'Check the installation'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a durable -d 'Attach, detach or list durable agents'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a show -d 'Show what the bridge holds'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a ask -d 'Ask the user through a durable agent'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a setup -d 'Make a coding agent ask your phone before its tools run'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a mcp -d 'An MCP server on stdio that asks the user'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a pair -d 'Pair a phone or browser'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a devices -d 'List or revoke paired devices'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a push -d 'Send a test push'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a audit -d 'Show or verify the audit log'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a login -d 'Log an agent in to the bridge (agent environment)'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a logout -d 'Log an agent out (agent environment)'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a whoami -d 'Say who collie runs as'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a agents -d 'List or revoke agent platform sessions'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a version -d 'Print the version'
complete -c collie -n "not __fish_seen_subcommand_from $commands" -a help -d 'Print the usage'

complete -c collie -n '__fish_seen_subcommand_from daemon' -l debug -d 'Log debug lines too'
complete -c collie -n '__fish_seen_subcommand_from doctor show list pair devices audit whoami push' -l json -d 'Print JSON'
complete -c collie -n '__fish_seen_subcommand_from login' -l url -x -d "The bridge's address"
complete -c collie -n '__fish_seen_subcommand_from login' -l ca-file -r -F -d "The bridge's certificate"
complete -c collie -n '__fish_seen_subcommand_from audit; and not __fish_seen_subcommand_from verify' -a verify -d 'Check the hash chain'
complete -c collie -n '__fish_seen_subcommand_from audit' -l agent -x -a '(__collie_agents)' -d 'Only this agent'
complete -c collie -n '__fish_seen_subcommand_from audit' -l device -x -d 'Only this device'
complete -c collie -n '__fish_seen_subcommand_from audit' -l event -x -a 'answer send abort action starter.start durable.reopen space.rename pane.close pane.rename tab.rename' -d 'Only this event'
complete -c collie -n '__fish_seen_subcommand_from audit' -l since -x -d 'Only lines this recent (90m, 24h, 7d)'
complete -c collie -n '__fish_seen_subcommand_from verify' -F
complete -c collie -n '__fish_seen_subcommand_from ask' -l yes-no -d 'A yes/no question'
complete -c collie -n '__fish_seen_subcommand_from ask' -l choice -x -d 'One option of a single-choice question'
complete -c collie -n '__fish_seen_subcommand_from ask' -l line -d 'One line of text'
complete -c collie -n '__fish_seen_subcommand_from ask' -l form -x -d 'One field of a short form (ID=LABEL)'
complete -c collie -n '__fish_seen_subcommand_from ask' -l title -x -d 'The question'
complete -c collie -n '__fish_seen_subcommand_from ask' -l rationale -x -d 'Why it is asked'
complete -c collie -n '__fish_seen_subcommand_from ask' -l tool-call -x -d 'Asking again with the same key returns the first decision'
complete -c collie -n '__fish_seen_subcommand_from ask' -l tool -x -d 'The tool the question gates'
complete -c collie -n '__fish_seen_subcommand_from ask' -l command -x -d "The tool's command"
complete -c collie -n '__fish_seen_subcommand_from ask' -l timeout -x -d 'Deny by default after this long'
complete -c collie -n '__fish_seen_subcommand_from ask' -l json -d 'Print the decision as JSON'
complete -c collie -n '__fish_seen_subcommand_from ask' -l agent -x -d 'Ask through collie-agent@NAME'
complete -c collie -n '__fish_seen_subcommand_from ask' -l socket -r -F -d 'Ask through the agent listening here'
complete -c collie -n '__fish_seen_subcommand_from ask' -l hook -x -a claude -d "Read a hook's JSON on stdin"
complete -c collie -n '__fish_seen_subcommand_from run' -l name -x -d "The run's agent name"
complete -c collie -n '__fish_seen_subcommand_from run' -l no-systemd -d 'No scope from the user manager'
complete -c collie -n '__fish_seen_subcommand_from run' -l sandbox -d 'Run the command under bubblewrap'
complete -c collie -n '__fish_seen_subcommand_from ask' -l hook -x -a 'claude codex gemini opencode' -d "Read a hook's JSON on stdin"
complete -c collie -n '__fish_seen_subcommand_from setup' -a 'claude codex gemini opencode' -d 'Coding agent'
complete -c collie -n '__fish_seen_subcommand_from setup' -l project -r -a '(__fish_complete_directories)' -d 'Write the project settings in this folder'
complete -c collie -n '__fish_seen_subcommand_from setup' -l dry-run -d 'Print the change and write nothing'
complete -c collie -n '__fish_seen_subcommand_from setup' -l no-hook -d 'Leave the hook out'
complete -c collie -n '__fish_seen_subcommand_from setup' -l no-mcp -d 'Leave the MCP server out'
complete -c collie -n '__fish_seen_subcommand_from setup' -l timeout -x -d 'How long a question waits'
complete -c collie -n '__fish_seen_subcommand_from mcp' -l agent -x -d 'Ask through collie-agent@NAME'
complete -c collie -n '__fish_seen_subcommand_from mcp' -l socket -r -F -d 'Ask through the agent listening here'
complete -c collie -n '__fish_seen_subcommand_from mcp' -l timeout -x -d 'Deny by default after this long'
complete -c collie -n '__fish_seen_subcommand_from pair' -l no-qr -d 'Do not draw the QR code'
complete -c collie -n '__fish_seen_subcommand_from pair' -l local -d 'Show a link only this machine can open'
complete -c collie -n '__fish_seen_subcommand_from devices; and not __fish_seen_subcommand_from revoke' -a revoke -d 'Cut a device off at once'
complete -c collie -n '__fish_seen_subcommand_from agents; and not __fish_seen_subcommand_from list revoke' -a 'list revoke' -d 'List the sessions, or revoke one'
complete -c collie -n '__fish_seen_subcommand_from push; and not __fish_seen_subcommand_from test' -a test -d 'Send one test push through the guard and every provider'
complete -c collie -n '__fish_seen_subcommand_from doctor' -l check -x -d 'Run only one check' \
    -a 'binary config sources durable-socket agent-config desk state-dir audit-log units linger journald daemon device-listener public_url push config-reload agent-login coding-agents runs'

set -l durable_subs attach detach list
complete -c collie -n "__fish_seen_subcommand_from durable; and not __fish_seen_subcommand_from $durable_subs" -a "$durable_subs"
complete -c collie -n '__fish_seen_subcommand_from attach' -l socket -r -F -d "The agent's Unix socket"
complete -c collie -n '__fish_seen_subcommand_from attach' -l url -x -d "The agent's HTTPS URL"
complete -c collie -n '__fish_seen_subcommand_from attach' -l token-env -x -a '(set -n)' -d 'The variable that holds the token'
complete -c collie -n '__fish_seen_subcommand_from attach' -l ca-file -r -F -d 'A PEM file of a private CA'
complete -c collie -n '__fish_seen_subcommand_from detach' -a '(__collie_agents)' -d 'Attached agent'
