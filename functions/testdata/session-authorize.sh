#!/bin/sh
# A session worker that, for each invoke, asks to call the tool
# "delete_all" (with an argument that must never be stored), waits for the
# host's authorize frame and returns the decision as its result.
while read -r line; do
  case "$line" in
    *'"invoke"'*)
      printf '%s\n' '{"authorize":{"version":"sortie.authorize/v1","id":"a1","tool":{"name":"delete_all","args":{"token":"arg-secret-5f1e"}}}}'
      read -r answer
      case "$answer" in
        *'"allowed":true'*) printf '%s\n' '{"result":{"output":"allowed"}}' ;;
        *'"allowed":false'*) printf '%s\n' '{"result":{"output":"refused"}}' ;;
        *) printf '%s\n' '{"error":{"type":"no_answer","message":"unexpected frame"}}' ;;
      esac ;;
  esac
done
