#!/bin/sh
# An exec worker that reports the inline-configuration variables it sees in
# its environment, and the invocation it read, then a result.
read -r invocation
printf '{"event":{"kind":"env","text":"API_TOKEN=%s REGION=%s FOO=%s OTHER=%s"}}\n' \
  "${API_TOKEN-unset}" "${REGION-unset}" "${FOO-unset}" "${OTHER-unset}"
printf '{"result":{"output":%s}}\n' "$invocation"
