#!/usr/bin/env bash
# run.sh: measure Restate 1.7.12 on the shape of Sortie's BenchmarkSubmitToResult.
#
# Installs the pinned server (npm ci with install scripts off), builds the Go
# service and load generator, then, inside a private network namespace that
# has only a loopback interface (unshare -rn; the server's unconditional
# start-up check for a newer release on api.github.com cannot leave it), runs
# ROUNDS rounds. Each round starts a fresh server (new base dir, free loopback
# ports) and the service, registers the service, runs the load and stops
# both. Everything it starts is killed on exit.
#
# Environment (optional): ROUNDS (default 3), N (2000), C (32), WARMUP (64),
# ROUND_TIMEOUT (300 s for one round's load).
set -euo pipefail
cd "$(dirname "$0")"
SELF=$PWD/$(basename "$0") # $0 may be relative to the directory just left

ROUNDS=${ROUNDS:-3} N=${N:-2000} C=${C:-32} WARMUP=${WARMUP:-64} ROUND_TIMEOUT=${ROUND_TIMEOUT:-300}
export DO_NOT_TRACK=1 SCARF_ANALYTICS=false
SERVER=node_modules/@restatedev/restate-server-linux-x64/bin/restate-server
PIDS=()

stop() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

# config NODE ADMIN INGRESS writes the server configuration for one round.
config() {
  cat > "$TMP/restate.toml" <<TOML
node-name = "bench"
base-dir = "$TMP/data-$round"
listen-mode = "tcp"
bind-address = "127.0.0.1:$1"
advertised-address = "http://127.0.0.1:$1/"
disable-telemetry = true
[admin]
bind-address = "127.0.0.1:$2"
advertised-admin-endpoint = "http://127.0.0.1:$2/"
disable-web-ui = true
[ingress]
bind-address = "127.0.0.1:$3"
advertised-ingress-endpoint = "http://127.0.0.1:$3/"
TOML
}

# rounds runs inside the network namespace; TMP holds bin/ and the logs.
rounds() {
  trap stop EXIT
  trap 'exit 130' INT TERM
  ip link set lo up
  for round in $(seq "$ROUNDS"); do
    mapfile -t ports < <("$TMP/bin/freeport" -n 4)
    local node=${ports[0]} admin=${ports[1]} ingress=${ports[2]} svc=${ports[3]}
    config "$node" "$admin" "$ingress"
    "$SERVER" --no-logo -c "$TMP/restate.toml" --log-disable-ansi-codes true >"$TMP/restate-$round.log" 2>&1 &
    PIDS+=($!)
    "$TMP/bin/service" -addr "127.0.0.1:$svc" >"$TMP/service-$round.log" 2>&1 &
    PIDS+=($!)
    for i in $(seq 600); do
      curl -sf --max-time 1 "http://127.0.0.1:$admin/health" >/dev/null && break
      [ "$i" -lt 600 ] || { echo "run.sh: admin API not healthy after 60 s" >&2; exit 1; }
      sleep 0.1
    done
    echo "round $round: $(uptime)"
    "$TMP/bin/load" -admin "http://127.0.0.1:$admin" -deployment "http://127.0.0.1:$svc" \
      -ingress "http://127.0.0.1:$ingress" -n "$N" -c "$C" -warmup "$WARMUP" \
      -key-prefix "bench-$round-$$" -timeout "${ROUND_TIMEOUT}s" &
    PIDS+=($!)
    wait "$!" # in the background so a signal's trap runs at once
    stop
  done
}

if [ "${1:-}" = "--rounds" ]; then
  TMP=$2
  rounds
  exit
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/restate-bench.XXXXXX")
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "run.sh: failed ($rc); last server/service log lines:" >&2
    tail -n 20 "$TMP"/*.log >&2 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
[ -x "$SERVER" ] || npm ci --ignore-scripts --no-audit --no-fund
echo "$("$SERVER" --version), $(go version)"
go build -o "$TMP/bin/" ./cmd/...
unshare -rn "$SELF" --rounds "$TMP" &
inner=$!
trap 'kill -TERM "$inner" 2>/dev/null; wait "$inner"; exit 143' INT TERM
wait "$inner"
