#!/usr/bin/env python3
"""Authenticated reads of tradehost against a bare Rocket reference, side by side in one run.

The reference (bench/reference) verifies the same HS256 bearer and answers a record from memory.
Both servers run from target/release with the same JWT secret, so one token opens both. Every
round measures each target once with wrk (2 threads, CONNECTIONS keep-alive connections, SECONDS),
in the same order, so the machine's drift falls on all of them alike; the figures are the medians
of the rounds. Server CPU per request is the server's user+system time over the run (from /proc)
divided by the requests served. Any answer other than a 200 fails the run.

Usage: reads.py SECONDS ROUNDS CONNECTIONS
"""

import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

SECONDS, ROUNDS, CONNECTIONS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICKS = os.sysconf("SC_CLK_TCK")
POSTGRES_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
POSTGRES_DB = "tradehost_bench_reads"
PASSWORD = "correct horse battery staple"

# wrk prints one JSON line when it is done.
REPORT_LUA = """
done = function(summary, latency, requests)
  io.write(string.format('\\nREPORT {"requests":%d,"duration_us":%d,"non2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, token=None):
    request = urllib.request.Request(base + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def wait_up(url, process):
    for _ in range(300):
        if process.poll() is not None:
            sys.exit(f"server exited while starting: {url}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"server did not start: {url}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(url, token, pid, lua):
    before = cpu_seconds(pid)
    out = subprocess.run(
        ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SECONDS}s", "-s", lua,
         "-H", f"Authorization: Bearer {token}", url],
        check=True, capture_output=True, text=True).stdout
    cpu = cpu_seconds(pid) - before
    report = json.loads(out.split("REPORT ", 1)[1])
    if report["non2xx"] or report["errors"]:
        sys.exit(f"{url}: {report['non2xx']} answers other than 2xx, {report['errors']} socket errors")
    return {
        "rps": report["requests"] / (report["duration_us"] / 1e6),
        "p50_ms": report["p50_us"] / 1000,
        "p99_ms": report["p99_us"] / 1000,
        "cpu_us": cpu * 1e6 / max(report["requests"], 1),
    }


def start_tradehost(data, database_url, secret, vault_key):
    port = free_port()
    env = dict(os.environ, ROCKET_CONFIG=f"{ROOT}/Rocket.toml", TRADEHOST_DATA_DIR=data,
               PORT=str(port), TRADEHOST_LOG="warn", JWT_SECRET_KEY=secret,
               VAULT_ENCRYPTION_KEY=vault_key,
               # Limits raised so the load measures the path, not 429s (the limiter still counts).
               TRADEHOST_AUTH_RATE_LIMIT="100000000", TRADEHOST_API_RATE_MULTIPLIER="1000000")
    if database_url:
        env["DATABASE_URL"] = database_url
    else:
        env.pop("DATABASE_URL", None)
    log = open(os.path.join(data, "server.log"), "w")
    process = subprocess.Popen([f"{ROOT}/target/release/tradehost", "serve"], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_up(base + "/health", process)
    return process, base


def start_reference(secret, user_id, email):
    port = free_port()
    env = dict(os.environ, JWT_SECRET_KEY=secret, REFERENCE_USER_ID=user_id,
               REFERENCE_EMAIL=email, PORT=str(port))
    process = subprocess.Popen([f"{ROOT}/target/release/tradehost-bench-reference"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_up(base + "/api/v1/auth/me", process)
    return process, base


def postgres_available():
    return subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"]).returncode == 0


def fresh_postgres():
    for sql in (f"DROP DATABASE IF EXISTS {POSTGRES_DB} WITH (FORCE)", f"CREATE DATABASE {POSTGRES_DB}"):
        subprocess.run(["psql", "-q", POSTGRES_ADMIN, "-c", sql], check=True, capture_output=True)
    return f"postgres://postgres@127.0.0.1:5432/{POSTGRES_DB}"


def main():
    secret = secrets.token_hex(32)
    vault_key = secrets.token_hex(32)
    backends = [("SQLite", None)]
    if postgres_available():
        backends.append(("PostgreSQL", fresh_postgres()))
    processes = []
    try:
        targets = []
        user = None
        for name, database_url in backends:
            data = tempfile.mkdtemp(prefix="tradehost-reads-")
            process, base = start_tradehost(data, database_url, secret, vault_key)
            processes.append(process)
            email = "bench@example.com"
            call(base, "POST", "/api/v1/auth/register",
                 {"email": email, "password": PASSWORD, "full_name": "Bench", "accept_terms": True})
            login = call(base, "POST", "/api/v1/auth/login", {"email": email, "password": PASSWORD})
            token = login["data"]["access_token"]
            me = call(base, "GET", "/api/v1/auth/me", token=token)["data"]
            # A running paper bot, so the status reads take their full path (bot row, engine).
            call(base, "POST", "/api/v1/config/brokers", {"broker": "paper", "api_key": "paper-key-1234",
                                                          "api_secret": "paper-secret"}, token)
            call(base, "POST", "/api/v1/trading/start", {"broker": "paper", "paper_trading": True}, token)
            user = user or (me["user_id"], email)
            for path in ("/api/v1/auth/me", "/api/status", "/api/v1/trading/status"):
                targets.append((f"`GET {path}` ({name})", base + path, token, process.pid))
        reference, reference_base = start_reference(secret, *user)
        processes.append(reference)
        # The reference accepts the SQLite server's token: same secret, same subject.
        targets.insert(0, ("bare Rocket (reference)", reference_base + "/api/v1/auth/me",
                           targets[0][2], reference.pid))
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
            lua.write(REPORT_LUA)
        results = {label: [] for label, *_ in targets}
        for url in {t[1] for t in targets}:  # warm every path up once
            subprocess.run(["wrk", "-t1", "-c4", "-d1s", "-H", f"Authorization: Bearer {targets[0][2]}", url],
                           capture_output=True)
        for round_no in range(ROUNDS):
            for label, url, token, pid in targets:
                results[label].append(measure(url, token, pid, lua.name))
            print(f"round {round_no + 1} of {ROUNDS} done", file=sys.stderr)
        median = {label: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                  for label, runs in results.items()}
        reference_rps = median["bare Rocket (reference)"]["rps"]
        print(f"\nwrk -t2 -c{CONNECTIONS} -d{SECONDS}s, median of {ROUNDS} rounds\n")
        print("| route | req/s | p50 | p99 | server CPU per request | vs bare Rocket |")
        print("|---|---|---|---|---|---|")
        for label, m in median.items():
            print(f"| {label} | {m['rps']:,.0f} | {m['p50_ms']:.2f} ms | {m['p99_ms']:.2f} ms | "
                  f"{m['cpu_us']:.0f} µs | {m['rps'] / reference_rps:.2f} |")
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
