#!/bin/sh
# An exec agent that marks every moment it runs: it appends the time (ns
# since the epoch) to $MARKS/RUN-ATTEMPT every 20 ms until it is stopped,
# so a test can tell when each attempt's handler ran.
read -r invocation
run=$(printf '%s' "$invocation" | sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s' "$invocation" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
trap 'exit 143' TERM
while :; do
  date +%s%N >> "$MARKS/$run-$attempt"
  sleep 0.02
done
