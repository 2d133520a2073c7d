#!/bin/sh
# An exec worker that reports the same step twice: a protocol error.
read -r invocation
printf '{"step":{"version":"sortie.step/v1","name":"fetch","result":1}}\n'
printf '{"step":{"version":"sortie.step/v1","name":"fetch","result":2}}\n'
printf '{"result":{"output":"done"}}\n'
