#!/bin/sh
# A hook that prints valid JSON with a decision the client does not know.
cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}'
