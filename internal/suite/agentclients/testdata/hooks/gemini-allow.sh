#!/bin/sh
# A Gemini CLI BeforeTool hook that allows.
cat >"$COLLIE_TEST_RECORD/input.json"
echo '{"decision":"allow","reason":"yes on the phone"}'
