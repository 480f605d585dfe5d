#!/usr/bin/env bash
# Chaos run: bots trade on the paper venue with partial fills and delays while the server is
# SIGKILLed at random moments and restarted; then every account's books are compared with the
# venue's own record. Figures go to docs/benchmarks.md.
#
#   bench/chaos.sh [--kills 100] [--users 4] [--seed N] [--max-uptime-ms 2000]
#
# Uses a release build of the server; the database is SQLite unless TEST_DATABASE_URL names a
# PostgreSQL server (as for the test suites).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p tradehost --bin tradehost
export TRADEHOST_BIN="$PWD/target/release/tradehost"
cargo run --release -p tradehost-blackbox --bin chaos -- "$@"
