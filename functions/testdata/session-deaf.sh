#!/bin/sh
# A session worker that reads every frame and answers none, cancels
# included: the pool must kill it.
while read -r line; do :; done
