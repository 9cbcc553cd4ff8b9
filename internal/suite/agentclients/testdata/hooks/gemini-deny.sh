#!/bin/sh
# A Gemini CLI BeforeTool hook that denies, with a reason the test looks for.
cat >"$COLLIE_TEST_RECORD/input.json"
echo '{"decision":"deny","reason":"denied on the phone: REASON-42"}'
