#!/bin/sh
# An exec worker that reports what it can see: some environment variables,
# its working directory and the invocation it read, then a result.
read -r invocation
printf '{"event":{"kind":"env","text":"secret=%s foo=%s home=%s dir=%s"}}\n' \
  "${SORTIE_TEST_SECRET-unset}" "${FOO-unset}" "${HOME-unset}" "$(pwd)"
printf '{"result":{"output":%s}}\n' "$invocation"
