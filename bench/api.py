"""Throughput and latency of ``POST /v1/classify`` for small languages, against uvicorn on loopback.

Starts ``langclass serve`` on 127.0.0.1 (a free port, a throw-away SQLite database), sends a bounded
number of requests with a fixed number of concurrent clients, cycling through small languages
(2–6 state minimal DFAs), then stops the server. Prints requests/s and latency percentiles.

    .venv/bin/python bench/api.py                      # 400 requests, 8 concurrent clients
    .venv/bin/python bench/api.py --requests 1000 --concurrency 16
    .venv/bin/python bench/api.py --isolation thread          # worker threads instead of processes
    .venv/bin/python bench/api.py --url http://127.0.0.1:8000   # an already running server

Only loopback addresses are accepted as targets.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlparse

import httpx

LANGUAGES = [
    ("(ab)*", ["a", "b"]),
    ("(aa)*", ["a"]),
    ("a(a|b)*", ["a", "b"]),
    ("(a|b)*a", ["a", "b"]),
    ("(a|b|c)*ab(a|b|c)*", ["a", "b", "c"]),
    ("b*ab*", ["a", "b"]),
    ("a*b*", ["a", "b"]),
    ("(a|ba)*b?", ["a", "b"]),
    ("((a|b)(a|b))*", ["a", "b"]),
    ("0*(10*10*)*", ["0", "1"]),
    ("(10)*", ["0", "1"]),
    ("0*1*0*1*", ["0", "1"]),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(port: int, db_path: str, isolation: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env.update({
        "LANGCLASS_DATABASE_URL": f"sqlite:///{db_path}",
        "LANGCLASS_LOG_LEVEL": "warning",
        "LANGCLASS_CLASSIFY_ISOLATION": isolation,
    })
    proc = subprocess.Popen(
        [sys.executable, "-m", "langclass.app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited during start-up")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not become ready within 60 s")


async def _run(base: str, total: int, concurrency: int) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    counter = iter(range(total))

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        for i in counter:
            regex, alphabet = LANGUAGES[i % len(LANGUAGES)]
            t0 = time.perf_counter()
            r = await client.post(f"{base}/v1/classify", json={"regex": regex, "alphabet": alphabet})
            latencies.append(time.perf_counter() - t0)
            if r.status_code != 200:
                errors += 1

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        # warm-up: one request per language (imports, caches)
        for regex, alphabet in LANGUAGES:
            (await client.post(f"{base}/v1/classify", json={"regex": regex, "alphabet": alphabet})).raise_for_status()
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    return latencies, errors, wall


def _pct(sorted_values: list[float], q: float) -> float:
    k = max(0, min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1))))
    return sorted_values[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=400, help="measured requests (bounded; max 20000)")
    ap.add_argument("--concurrency", type=int, default=8, help="concurrent clients")
    ap.add_argument("--isolation", choices=["process", "thread"], default="process", help="LANGCLASS_CLASSIFY_ISOLATION")
    ap.add_argument("--url", default=None, help="use a running server on loopback instead of starting one")
    args = ap.parse_args()
    total = max(1, min(args.requests, 20_000))

    proc = None
    tmp = tempfile.TemporaryDirectory(prefix="langclass-bench-")
    if args.url:
        host = urlparse(args.url).hostname or ""
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise SystemExit("only loopback targets are allowed")
        base = args.url.rstrip("/")
    else:
        port = _free_port()
        proc = _start_server(port, os.path.join(tmp.name, "bench.db"), args.isolation)
        base = f"http://127.0.0.1:{port}"
    try:
        latencies, errors, wall = asyncio.run(_run(base, total, args.concurrency))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        tmp.cleanup()

    lat = sorted(latencies)
    where = args.url or f"uvicorn 1 worker, classify isolation {args.isolation}"
    print(f"POST /v1/classify  {len(LANGUAGES)} small languages (2-6 DFA states), {where}, {os.cpu_count()} CPUs")
    print(f"requests {len(lat)}  concurrency {args.concurrency}  errors {errors}  wall {wall:.2f} s")
    print(f"throughput {len(lat) / wall:.1f} requests/s")
    print(
        f"latency ms  p50 {1000 * _pct(lat, 0.50):.1f}  p90 {1000 * _pct(lat, 0.90):.1f}  "
        f"p99 {1000 * _pct(lat, 0.99):.1f}  max {1000 * lat[-1]:.1f}  mean {1000 * statistics.fmean(lat):.1f}"
    )


if __name__ == "__main__":
    main()
