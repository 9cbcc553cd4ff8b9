#!/bin/sh
# A PreToolUse hook that denies, with a reason the test looks for.
cat >"$COLLIE_TEST_RECORD/input.json"
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied on the phone: REASON-42"}}'
