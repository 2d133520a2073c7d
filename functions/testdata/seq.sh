#!/bin/sh
# An exec worker that numbers its own events: $1 is "good" (1, 2, then a
# result) or "gap" (1, then 3).
read -r invocation
echo '{"event":{"seq":1,"kind":"a"}}'
if [ "$1" = gap ]; then
  echo '{"event":{"seq":3,"kind":"b"}}'
  sleep 600
fi
echo '{"event":{"seq":2,"kind":"b"}}'
echo '{"event":{"kind":"c"}}'
echo '{"result":{"output":"numbered"}}'
echo 'garbage after the result is ignored'
