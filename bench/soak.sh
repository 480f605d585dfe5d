#!/usr/bin/env bash
# Memory soak: a release server on SQLite in a fresh data directory under mixed traffic
# (bench/soak.py) for a bounded time on loopback, its resident memory sampled every 5 s.
# The figure is RSS at the end against RSS after the warm-up (within 1.2: memory follows the
# load, not the time). Usage: bench/soak.sh [seconds, default 1800] [warm-up seconds, default 300]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-1800}"
warmup="${2:-300}"

. bench/server.sh
start_server TRADEHOST_FAILED_LOGIN_LIMIT=100000000 TRADEHOST_SCAN_INTERVAL=1
python3 bench/soak.py "http://127.0.0.1:$port" "$server" "$seconds" "$warmup" 8
