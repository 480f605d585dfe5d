# Sourced by the benchmark scripts: a release server on SQLite in a fresh data directory, with the
# rate limits raised so the load measures the request path rather than 429s (the limiter still
# counts every request), and one signed-in user.
#   start_server [extra VAR=value ...]  sets $data, $port, $base and $server; stops it on exit
#   sign_in                             sets $token (registers bench@example.com first)
bench_password="correct horse battery staple"

start_server() {
  cargo build --release --quiet -p tradehost
  data="$(mktemp -d)"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  base="http://127.0.0.1:$port"
  env ROCKET_CONFIG="$PWD/Rocket.toml" TRADEHOST_DATA_DIR="$data" PORT="$port" TRADEHOST_LOG=warn \
    TRADEHOST_AUTH_RATE_LIMIT=100000000 TRADEHOST_API_RATE_MULTIPLIER=1000000 "$@" \
    target/release/tradehost serve > "$data/server.log" 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null; rm -rf "$data"' EXIT
  for _ in $(seq 100); do curl -s -o /dev/null "$base/health" && break; sleep 0.1; done
}

sign_in() {
  curl -sf -X POST "$base/api/v1/auth/register" -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$bench_password\",\"full_name\":\"Bench\",\"accept_terms\":true}" > /dev/null
  token="$(curl -sf -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$bench_password\"}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["access_token"])')"
}
