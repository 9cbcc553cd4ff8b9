#!/bin/sh
# A PreToolUse hook that allows.
cat >"$COLLIE_TEST_RECORD/input.json"
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"yes on the phone"}}'
