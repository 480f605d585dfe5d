#!/usr/bin/env python3
"""Mixed-traffic soak of a running tradehost server, watching its resident memory.

Workers (threads, standard library only) loop over a weighted mix of what users and careless
clients do: registering and signing in (argon2id), wrong passwords, authenticated reads of every
kind, settings changes valid and invalid, bots started and stopped on the paper broker, webhook
signals, exports, and malformed requests (bad JSON, large bodies, unknown routes, wrong methods,
repeated parameters). The server's RSS is sampled from /proc every few seconds.

The load is stationary: registrations go on all the time (argon2id is what a careless allocator
keeps), but only each worker's first ten users trade, so the number of running bots stops growing
once they have started; what is held after the warm-up is what the traffic needs, not history.

Usage: soak.py BASE_URL PID SECONDS WARMUP_SECONDS [WORKERS]
Prints a line per sample and a summary: RSS after warm-up, at the end, the peak, and the ratio
end / warm-up (the soak's figure: within 1.2 means memory does not grow with traffic).
"""

import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

BASE, PID, SECONDS, WARMUP = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
WORKERS = int(sys.argv[5]) if len(sys.argv) > 5 else 8
PASSWORD = "correct horse battery staple"
URL = urllib.parse.urlparse(BASE)

counts = {}
counts_lock = threading.Lock()
stop = threading.Event()


def rss_kib():
    with open(f"/proc/{PID}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Client:
    def __init__(self):
        self.conn = None

    def request(self, method, path, body=None, token=None, raw=None, headers=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = {"Content-Type": "application/json"}
        if token:
            hdrs["Authorization"] = f"Bearer {token}"
        hdrs.update(headers or {})
        for _ in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=30)
                self.conn.request(method, path, body=data, headers=hdrs)
                response = self.conn.getresponse()
                payload = response.read()
                with counts_lock:
                    counts[response.status] = counts.get(response.status, 0) + 1
                try:
                    return response.status, json.loads(payload or b"null")
                except ValueError:
                    return response.status, None
            except (OSError, http.client.HTTPException):
                self.conn = None
        return 0, None


def register(client, n):
    email = f"soak-{n}-{random.getrandbits(40):x}@example.com"
    client.request("POST", "/api/v1/auth/register",
                   {"email": email, "password": PASSWORD, "full_name": "Soak", "accept_terms": True})
    status, answer = client.request("POST", "/api/v1/auth/login", {"email": email, "password": PASSWORD})
    if status != 200:
        return None
    token = answer["data"]["access_token"]
    client.request("POST", "/api/v1/config/brokers",
                   {"broker": "paper", "api_key": "paper-key-1234", "api_secret": "paper-secret"}, token)
    status, key = client.request("POST", "/api/v1/config/webhook-key", {}, token)
    webhook_key = key["data"].get("webhook_key") if status in (200, 201) and key else None
    return {"email": email, "token": token, "key": webhook_key}


READS = [
    "/api/v1/auth/me", "/api/v1/account/balance", "/api/v1/account/positions",
    "/api/v1/account/history?page=1&per_page=50", "/api/v1/account/performance?period=30d",
    "/api/v1/account/stats", "/api/v1/analytics/dashboard", "/api/v1/config/settings",
    "/api/v1/trading/status", "/api/status", "/api/pnl", "/api/v1/dashboard/metrics",
    "/api/v1/dashboard/equity-curve?days=7", "/api/kpi/current", "/api/trades/statistics",
    "/api/v1/subscription/current", "/api/safety/status",
]

BAD = [
    ("POST", "/api/v1/auth/login", b"{not json"),
    ("POST", "/api/v1/auth/register", b'{"email": "' + b"x" * 200_000 + b'"}'),
    ("GET", "/api/v1/nowhere/at/all", None),
    ("DELETE", "/api/v1/auth/login", None),
    ("GET", "/api/v1/account/performance?period=7d&period=x", None),
    ("PUT", "/api/v1/config/settings", b'{"trading": {"risk_level": "wild"}}'),
    ("POST", "/api/v1/webhooks/signals", b'{"api_key": "nope", "symbol": "BTC-USD", "action": "buy"}'),
]


TRADERS_PER_WORKER = 10


def worker(n):
    random.seed(n)
    client = Client()
    traders, others = [], []
    while not stop.is_set():
        roll = random.random()
        trading = 0.75 <= roll < 0.94
        pool = traders if trading or not others else random.choice([traders, others])
        user = random.choice(pool) if pool else None
        if roll < 0.04 or not traders:
            created = register(client, n)
            if created:
                if len(traders) < TRADERS_PER_WORKER:
                    traders.append(created)
                else:
                    others = (others + [created])[-20:]
        elif roll < 0.07:
            client.request("POST", "/api/v1/auth/login", {"email": user["email"], "password": "wrong password here"})
        elif roll < 0.55:
            client.request("GET", random.choice(READS), token=user["token"])
        elif roll < 0.62:
            client.request("PUT", "/api/v1/config/settings",
                           {"trading": {"max_position_size_usd": random.randint(10, 400)}}, user["token"])
        elif roll < 0.75:
            method, path, raw = random.choice(BAD)
            client.request(method, path, raw=raw, token=user["token"] if random.random() < 0.5 else None)
        elif roll < 0.82:
            client.request("POST", "/api/v1/trading/start", {"broker": "paper"}, user["token"])
        elif roll < 0.86:
            client.request("POST", "/api/v1/trading/stop", {"close_positions": random.random() < 0.5}, user["token"])
        elif roll < 0.94:
            if user["key"]:
                client.request("POST", "/api/v1/webhooks/signals",
                               {"api_key": user["key"], "symbol": random.choice(["BTC-USD", "ETH-USD", "SOL-USD"]),
                                "action": random.choice(["buy", "sell", "close"]), "size_usd": 50})
        elif roll < 0.97:
            client.request("GET", "/api/trades/export?format=csv", token=user["token"])
        else:
            client.request("POST", "/api/v1/auth/refresh", {"refresh_token": "not-a-token"})


def main():
    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(WORKERS)]
    for thread in threads:
        thread.start()
    start = time.time()
    warm, peak, last = None, 0, 0
    samples = []
    while time.time() - start < SECONDS:
        time.sleep(5)
        last = rss_kib()
        peak = max(peak, last)
        elapsed = time.time() - start
        samples.append((elapsed, last))
        if warm is None and elapsed >= WARMUP:
            warm = last
        with counts_lock:
            total = sum(counts.values())
        print(f"{elapsed:7.0f} s  rss {last / 1024:7.1f} MiB  requests {total}", flush=True)
    stop.set()
    for thread in threads:
        thread.join(timeout=35)
    with counts_lock:
        by_status = dict(sorted(counts.items()))
    warm = warm or last
    print(f"statuses: {by_status}")
    print(f"rss after warm-up {warm / 1024:.1f} MiB, at the end {last / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, "
          f"end / warm-up {last / warm:.2f}")
    # Single samples swing with what is in flight (an export, a few password hashes): the medians
    # of the two minutes after the warm-up and of the last two minutes say the same less noisily.
    after = sorted(r for t, r in samples if WARMUP <= t < WARMUP + 120)
    final = sorted(r for t, r in samples if t >= SECONDS - 120)
    if after and final:
        a, f = after[len(after) // 2], final[len(final) // 2]
        print(f"median rss, two minutes after warm-up {a / 1024:.1f} MiB, last two minutes {f / 1024:.1f} MiB, "
              f"ratio {f / a:.2f}")


main()
