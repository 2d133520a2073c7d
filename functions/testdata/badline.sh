#!/bin/sh
# An exec worker that writes two good events, then an invalid line (an
# event without a kind), then would hang: the runtime must kill it.
read -r invocation
echo '{"event":{"kind":"progress","text":"one"}}'
echo '{"event":{"kind":"progress","text":"two"}}'
echo '{"event":{"text":"no kind"}}'
sleep 600
echo '{"result":{"output":"never"}}'
