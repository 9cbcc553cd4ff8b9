#!/bin/sh
# A hook that blocks the documented way: exit status 2, the reason on stderr.
cat >/dev/null
echo "blocked by exit 2: REASON-2" >&2
exit 2
