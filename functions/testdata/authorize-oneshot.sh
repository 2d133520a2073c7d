#!/bin/sh
# A one-shot exec worker that asks for a tool call: its stdin is closed,
# so it can get no answer (a protocol error).
read -r invocation
printf '%s\n' '{"authorize":{"version":"sortie.authorize/v1","id":"a1","tool":{"name":"search"}}}'
printf '%s\n' '{"result":{"output":"unreachable"}}'
