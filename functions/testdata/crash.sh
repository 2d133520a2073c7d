#!/bin/sh
# An exec worker that reports an event, logs, and exits 3 without a
# terminal message.
read -r invocation
echo '{"event":{"kind":"progress","text":"about to crash"}}'
echo "crash.sh: giving up" >&2
exit 3
