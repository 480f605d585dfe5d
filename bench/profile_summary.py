#!/usr/bin/env python3
"""Sums a `perf report --sort symbol` listing (on standard input) by component of the server.

The first matching rule names a symbol's component; what matches none is "other". Kernel
symbols (`[k]`) are the sockets, the scheduler and the system calls around them.
"""

import re
import sys

RULES = [
    ("kernel (sockets, scheduling, system calls)", lambda s, k: k),
    ("SQLite and sqlx", lambda s, k: re.search(r"sqlite3|sqlx", s)),
    ("bearer verification (HMAC-SHA256, base64, claims)", lambda s, k: re.search(r"sha2|hmac|jsonwebtoken|base64|digest::", s)),
    ("JSON (serde_json)", lambda s, k: "serde_json" in s or "serde::" in s),
    ("memory allocation (mimalloc)", lambda s, k: re.search(r"\bmi_|_mi_|mimalloc", s)),
    ("memcpy, memset, string compare", lambda s, k: re.search(r"mem(cpy|move|set|cmp)|strlen|__strcmp", s)),
    ("tokio runtime and synchronisation", lambda s, k: re.search(r"tokio|parking_lot|crossbeam|futures", s)),
    ("hyper and Rocket (HTTP, routing, responders)", lambda s, k: re.search(r"hyper|rocket|http::|h2::|httparse|state::", s)),
    ("dashmap (session cache, rate-limit counters)", lambda s, k: "dashmap" in s),
    ("tradehost code", lambda s, k: "tradehost" in s),
    ("time and formatting (chrono, fmt)", lambda s, k: re.search(r"chrono|core::fmt|alloc::fmt", s)),
]

totals = {}
for line in sys.stdin:
    m = re.match(r"\s+([0-9.]+)%\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    share, kind, symbol = float(m.group(1)), m.group(2), m.group(3)
    name = next((n for n, rule in RULES if rule(symbol, kind == "k")), "other")
    totals[name] = totals.get(name, 0.0) + share

print("\n| component | share of server CPU |\n|---|---|")
for name, share in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"| {name} | {share:.1f} % |")
