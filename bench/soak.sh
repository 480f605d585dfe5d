#!/usr/bin/env bash
# Memory soak: a release server on SQLite in a fresh data directory under mixed traffic
# (bench/soak.py) for a bounded time on loopback, its resident memory sampled every 5 s.
# The figure is RSS at the end against RSS after the warm-up (within 1.2: memory follows the
# load, not the time). Usage: bench/soak.sh [seconds, default 1800] [warm-up seconds, default 300]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-1800}"
warmup="${2:-300}"

cargo build --release --quiet -p tradehost
data="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# Limits raised so the load reaches the code paths (the limiter still counts every request).
ROCKET_CONFIG="$PWD/Rocket.toml" TRADEHOST_DATA_DIR="$data" PORT="$port" TRADEHOST_LOG=warn \
  TRADEHOST_AUTH_RATE_LIMIT=100000000 TRADEHOST_API_RATE_MULTIPLIER=1000000 \
  TRADEHOST_FAILED_LOGIN_LIMIT=100000000 TRADEHOST_SCAN_INTERVAL=1 \
  target/release/tradehost serve > "$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.1; done
python3 bench/soak.py "http://127.0.0.1:$port" "$server" "$seconds" "$warmup" 8
