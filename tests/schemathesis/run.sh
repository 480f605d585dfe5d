#!/usr/bin/env bash
# Property-based contract check: schemathesis generates requests for every operation of the
# served OpenAPI document, with a user's token and then an admin's, and fails on any 5xx, any
# answer whose status the document does not list, and any body, content type or header that
# does not match it. Runs against the debug binary on SQLite; bounded by --max-examples.
#
#   tests/schemathesis/run.sh [max examples per operation, default 25]
set -euo pipefail
cd "$(dirname "$0")/../.."

examples="${1:-25}"
venv="${SCHEMATHESIS_VENV:-$HOME/.cache/tradehost-schemathesis}"
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/schemathesis/requirements.txt
fi

binary="target/debug/tradehost"
[ -x "$binary" ] || cargo build --quiet -p tradehost --bin tradehost

work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
export TRADEHOST_DATA_DIR="$work/data"
export ROCKET_PORT="$port"
# Generated requests come from one address at hundreds per minute; the limits are not under test.
export TRADEHOST_AUTH_RATE_LIMIT=1000000
export TRADEHOST_ANON_RATE_LIMIT=1000000
export TRADEHOST_API_RATE_MULTIPLIER=100000
export PAYMENT_WEBHOOK_SECRET="schemathesis-payment-secret"

"$binary" serve >"$work/server.log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 120); do
  curl -fsS "$base/health" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "$base/health" >/dev/null

token_of() {
  curl -fsS -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
    -d "{\"email\": \"$1\", \"password\": \"$2\"}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["access_token"])'
}

password="Schemathesis-Pass-1"
curl -fsS -X POST "$base/api/v1/auth/register" -H 'Content-Type: application/json' \
  -d "{\"email\": \"user@example.com\", \"password\": \"$password\", \"full_name\": \"Schema Thesis\", \"accept_terms\": true}" >/dev/null
TRADEHOST_ADMIN_PASSWORD="$password" "$binary" admin create --email admin@example.com >/dev/null
user_token="$(token_of user@example.com "$password")"
admin_token="$(token_of admin@example.com "$password")"
# The user trades on paper, so the account, trading and ledger routes have something to show.
curl -fsS -X POST "$base/api/v1/config/brokers" -H "Authorization: Bearer $user_token" \
  -H 'Content-Type: application/json' \
  -d '{"broker": "paper", "api_key": "paper-key-1234", "api_secret": "paper-secret"}' >/dev/null

checks="not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance"
# Signing out and changing the password revoke the token the run uses; they run last, alone.
revoking='^/api/v1/auth/(logout|change-password)$'
# The WebSocket answers an upgrade with 101 and then speaks its own protocol, which an HTTP fuzzer
# cannot; tests/tests/ws.rs covers it with a real client.
websocket='^/ws/v1$'

run() {
  local token="$1"
  shift
  # From the scratch directory, where schemathesis keeps its cache.
  (cd "$work" && "$venv/bin/st" run "$base/api/openapi.json" \
    --checks "$checks" \
    --max-examples "$examples" \
    --seed 20261125 \
    --generation-deterministic \
    --request-timeout 30 \
    --header "Authorization: Bearer $token" \
    --suppress-health-check all \
    "$@")
}

status=0
run "$user_token" --exclude-path-regex "$revoking|$websocket" || status=1
run "$admin_token" --exclude-path-regex "$revoking|$websocket" || status=1
run "$user_token" --include-path-regex "$revoking" || status=1
if [ "$status" -ne 0 ]; then
  echo "schemathesis found answers the OpenAPI document does not describe (server log: last 50 lines)" >&2
  tail -50 "$work/server.log" >&2
fi
exit "$status"
