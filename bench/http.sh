#!/usr/bin/env bash
# HTTP benchmark of the foundation on loopback, bounded in time:
#   1. an authenticated read (GET /api/v1/auth/me: JWT check, session and user from the session
#      cache, rate limit);
#   2. login alone (argon2id verification, session and refresh-token rows, audit row);
#   3. the authenticated read again while 8 clients log in continuously (its p99 is the figure).
# Needs wrk (Debian: apt-get install wrk). Usage: bench/http.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

. bench/server.sh
start_server
sign_in
base="$base/api/v1"
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
