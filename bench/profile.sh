#!/usr/bin/env bash
# Where the time of an authenticated read goes: a release server on SQLite under wrk load
# (2 threads, 64 connections) on one route while `perf` samples the server's threads, then the
# hottest functions by their own time and a summary by component (bench/profile_summary.py).
# Needs wrk and perf (Debian: apt-get install wrk linux-perf).
# Usage: bench/profile.sh [path, default /api/v1/auth/me] [seconds, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
path="${1:-/api/v1/auth/me}"
seconds="${2:-10}"
for tool in wrk perf; do
  command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 1; }
done
cargo build --release --quiet -p tradehost
data="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
ROCKET_CONFIG="$PWD/Rocket.toml" TRADEHOST_DATA_DIR="$data" PORT="$port" TRADEHOST_LOG=warn \
  TRADEHOST_AUTH_RATE_LIMIT=100000000 TRADEHOST_API_RATE_MULTIPLIER=1000000 \
  target/release/tradehost serve > "$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "$base/health" && break; sleep 0.1; done
user='{"email":"profile@example.com","password":"correct horse battery staple","full_name":"Profile","accept_terms":true}'
curl -sf -X POST "$base/api/v1/auth/register" -H 'Content-Type: application/json' -d "$user" > /dev/null
token="$(curl -sf -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"profile@example.com","password":"correct horse battery staple"}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["access_token"])')"

wrk -t2 -c64 -d"$((seconds + 4))s" -H "Authorization: Bearer $token" "$base$path" > "$data/wrk.txt" &
load=$!
sleep 2
perf record -q -F 1999 -g -p "$server" -o "$data/perf.data" -- sleep "$seconds" 2>/dev/null
wait $load
grep -E "Requests/sec|Latency" "$data/wrk.txt"
perf report -i "$data/perf.data" --no-children --sort symbol --percent-limit 1 --stdio 2>/dev/null \
  | grep -E "^ +[0-9]" | cut -c1-110 | head -40
perf report -i "$data/perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null \
  | python3 bench/profile_summary.py
