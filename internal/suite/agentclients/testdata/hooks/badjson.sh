#!/bin/sh
# A hook that prints JSON cut short.
cat >/dev/null
echo '{"hookSpecificOutput": {"permissionDecision": "deny"'
