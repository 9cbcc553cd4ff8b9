#!/bin/sh
# A hook that says nothing and exits 0.
cat >/dev/null
exit 0
