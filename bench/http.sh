#!/usr/bin/env bash
# HTTP benchmark of the foundation on loopback, bounded in time:
#   1. an authenticated read (GET /api/v1/auth/me: JWT check, session, rate limit, one query);
#   2. login alone (argon2id verification, session and refresh-token rows, audit row);
#   3. the authenticated read again while 8 clients log in continuously (its p99 is the figure).
# Needs wrk (Debian: apt-get install wrk). Usage: bench/http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

cargo build --release --quiet -p tradehost
data="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port/api/v1"
# Limits raised so the load measures the code path, not 429s (the limiter still runs on every request).
ROCKET_CONFIG="$PWD/Rocket.toml" TRADEHOST_DATA_DIR="$data" PORT="$port" TRADEHOST_LOG=warn \
  TRADEHOST_AUTH_RATE_LIMIT=100000000 TRADEHOST_API_RATE_MULTIPLIER=1000000 \
  target/release/tradehost serve > "$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "$base/auth/me" && break; sleep 0.1; done

user='{"email":"bench@example.com","password":"correct horse battery staple","full_name":"Bench","accept_terms":true}'
curl -sf -X POST "$base/auth/register" -H 'Content-Type: application/json' -d "$user" > /dev/null
token="$(curl -sf -X POST "$base/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"correct horse battery staple"}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["access_token"])')"
login_lua="$data/login.lua"
cat > "$login_lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"email":"bench@example.com","password":"correct horse battery staple"}'
LUA

echo "== authenticated read: GET /api/v1/auth/me, 2 threads, 32 connections, ${seconds}s"
wrk -t2 -c32 -d"${seconds}s" --latency -H "Authorization: Bearer $token" "$base/auth/me"

echo "== login: POST /api/v1/auth/login, 8 connections, ${seconds}s"
wrk -t1 -c8 -d"${seconds}s" --latency -s "$login_lua" "$base/auth/login"

echo "== authenticated read while 8 clients log in continuously, ${seconds}s"
wrk -t1 -c8 -d"$((seconds + 2))s" -s "$login_lua" "$base/auth/login" > "$data/login-under-load.txt" &
logins=$!
sleep 1
wrk -t1 -c32 -d"${seconds}s" --latency -H "Authorization: Bearer $token" "$base/auth/me"
wait $logins
echo "-- the concurrent logins:"
cat "$data/login-under-load.txt"
