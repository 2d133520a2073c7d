#!/usr/bin/env bash
# run.sh: Sortie in each mode a user runs against Restate 1.7.12, side by
# side, in one go: ROUNDS rounds, each running Restate (bench/restate/run.sh,
# one round) then Sortie embedded with in-process workers, embedded with
# warm workers (the `sortie run` path), `sortie --in-process serve` over
# HTTP and `sortie serve` (warm workers) over HTTP, each with N runs
# (unique idempotency keys, C in flight, W unmeasured first), every state
# change durable (SQLite WAL, synchronous FULL; Restate's defaults). It
# prints the benchmark lines as they come, then one table: mean runs/s,
# p50 and p99 per mode and their ratios to Restate's.
#
# Environment (optional): ROUNDS (3), N (2000), C (32), WARMUP (64),
# ROUND_TIMEOUT (300 s for one mode's round), RESULTS (a file to keep the
# benchmark lines in).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3} N=${N:-2000} C=${C:-32} WARMUP=${WARMUP:-64} ROUND_TIMEOUT=${ROUND_TIMEOUT:-300}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sortie-bench.XXXXXX")
RESULTS=${RESULTS:-$TMP/results.txt}
SERVE_PID=

cleanup() {
  if [ -n "$SERVE_PID" ]; then kill -TERM "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$TMP/sortie" ./cmd/sortie
go build -o "$TMP/sortieload" ./bench/sortieload
echo "$(go version); $(nproc) CPUs; $(uptime)"
: >"$RESULTS"

# load NAME ARGS... runs one Sortie round and keeps its line.
load() {
  local name=$1
  shift
  "$TMP/sortieload" -name "$name" -n "$N" -c "$C" -warmup "$WARMUP" -timeout "${ROUND_TIMEOUT}s" \
    -key-prefix "bench-$round-$name-$$" "$@" | tee -a "$RESULTS"
}

# serve NAME FLAGS... starts a sortie serve on a free loopback port, runs
# one round against it over HTTP and stops it.
serve() {
  local name=$1
  shift
  local dir=$TMP/$name-$round
  "$TMP/sortie" --state-dir "$dir" "$@" serve --listen 127.0.0.1:0 2>"$dir.log" &
  SERVE_PID=$!
  local url=
  for _ in $(seq 600); do
    url=$(sed -n 's/^sortie serve: listening on \(http:[^ ]*\).*/\1/p' "$dir.log" 2>/dev/null || true)
    [ -n "$url" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$dir.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { echo "run.sh: sortie serve did not listen within 60 s" >&2; exit 1; }
  load "$name" -url "$url"
  kill -TERM "$SERVE_PID"
  wait "$SERVE_PID" || true
  SERVE_PID=
}

for round in $(seq "$ROUNDS"); do
  echo "round $round: $(uptime)"
  ROUNDS=1 N=$N C=$C WARMUP=$WARMUP ROUND_TIMEOUT=$ROUND_TIMEOUT bench/restate/run.sh | grep '^Benchmark' | tee -a "$RESULTS"
  load EmbeddedInProcess -state-dir "$TMP/in-process-$round" -in-process
  load EmbeddedWarm -state-dir "$TMP/warm-$round" -worker "$TMP/sortie"
  serve ServeInProcess --in-process
  serve ServeWarm
done
echo
"$TMP/sortieload" -table "$RESULTS"
