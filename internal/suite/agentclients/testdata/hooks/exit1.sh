#!/bin/sh
# A hook that crashes: exit status 1, a message on stderr.
cat >/dev/null
echo "hook crashed" >&2
exit 1
