#!/bin/sh
# A hook that hangs: it notes when it started and when it was told to
# stop (SIGTERM), then allows if it ever wakes up.
cat >/dev/null
date +%s.%N >"$COLLIE_TEST_RECORD/sleep-start"
trap 'date +%s.%N >"$COLLIE_TEST_RECORD/sleep-term"; exit 1' TERM
sleep "${1:-30}" &
wait
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'
