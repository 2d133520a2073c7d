#!/bin/sh
# An exec worker that ignores SIGTERM (and so does the sleep it starts):
# only SIGKILL stops it. It reports its process ID first.
trap '' TERM
read -r invocation
echo "{\"event\":{\"kind\":\"pid\",\"data\":{\"pid\":$$}}}"
while :; do sleep 600; done
