#!/usr/bin/env bash
# Authenticated reads side by side with a bare Rocket reference, in one run (bench/reads.py).
# Builds both in release, then measures on SQLite and, when PostgreSQL answers on 127.0.0.1:5432,
# on a fresh PostgreSQL database too. Needs wrk (Debian: apt-get install wrk).
# Usage: bench/reads.sh [seconds per run, default 10] [rounds, default 3] [connections, default 64]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet -p tradehost -p tradehost-bench-reference
exec python3 bench/reads.py "${1:-10}" "${2:-3}" "${3:-64}"
