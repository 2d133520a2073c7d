#!/bin/sh
# A session worker that answers each invoke with a result and then, outside
# any attempt, one more message: the pool must stop it.
while read -r line; do
  case "$line" in
    *'"invoke"'*) printf '%s\n%s\n' '{"result":{"output":"done"}}' '{"event":{"kind":"stray"}}' ;;
  esac
done
