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
. bench/server.sh
start_server
sign_in

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
