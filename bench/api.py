"""Throughput and latency of ``POST /v1/classify`` for small languages, against uvicorn on loopback.

Starts ``langclass serve`` on 127.0.0.1 (a free port, a throw-away SQLite database) and sends, with
the same client and a fixed number of concurrent clients, a bounded number of requests of three
kinds: ``GET /healthz`` (the framework's own speed), ``POST /v1/classify`` cycling through 12 small
languages (2–6 state minimal DFAs; after the first round they are answered by the per-process
classification cache), and ``POST /v1/classify`` of as many random 2–6 state DFAs over {a, b} of pairwise *different
languages* (distinct canonical fingerprints: every one a cache miss that goes to a worker process,
whatever a cache is keyed by). The three lines run interleaved in ``--rounds`` rounds (default 3;
every round's distinct languages differ from every other round's), so a drifting machine load hits
each alike. Prints requests/s (median over the rounds) and latency percentiles (all rounds pooled) of
each, the classify / healthz throughput ratio of each round and their median, and the CPU per
request of the API process and of its workers. The client is aiohttp by default: httpx costs about
1 ms of client CPU per request here, which caps ``/healthz`` near 1,000 requests/s on two cores
(the client, not the server, is then measured) and its own pauses add 100–1,300 ms outliers.

    .venv/bin/python bench/api.py                      # 3 rounds × 400 requests, 8 concurrent clients
    .venv/bin/python bench/api.py --client httpx       # the same with httpx as the client
    .venv/bin/python bench/api.py --requests 1000 --concurrency 16
    .venv/bin/python bench/api.py --isolation thread          # worker threads instead of processes
    .venv/bin/python bench/api.py --url http://127.0.0.1:8000   # an already running server

Only loopback addresses are accepted as targets.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's langclass (the distinct languages are checked with it)

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
        "PYTHONPATH": str(ROOT),
    })
    proc = subprocess.Popen(
        [sys.executable, "-m", "langclass.app.cli.commands", "serve", "--host", "127.0.0.1", "--port", str(port)],
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


def _distinct_dfas(total: int, seed: int = 0, max_states: int = 6) -> list[dict]:
    """``total`` DFA JSON bodies of pairwise *different languages* (2–``max_states`` states over {a, b}, seeded;
    deduplicated by the canonical fingerprint of their minimal DFA): every one a cache miss, whatever
    the cache is keyed by — the request text or the language."""
    import random

    from langclass.core.base.limits import Limits
    from langclass.core.ingest.parse import parse_dfa_json

    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict] = []
    sigma = ["a", "b"]
    for _ in range(200 * total):
        if len(out) >= total:
            break
        n = rng.randint(2, max_states)
        dfa = {"alphabet": sigma, "states": [str(q) for q in range(n)], "initial": "0",
               "accepting": [str(q) for q in range(n) if rng.random() < 0.5],
               "transitions": {str(q): {x: str(rng.randrange(n)) for x in sigma} for q in range(n)}}
        fingerprint = parse_dfa_json(dfa, Limits()).canonical().fingerprint()
        if fingerprint not in seen:
            seen.add(fingerprint)
            out.append({"dfa": dfa})
    if len(out) < total:
        raise SystemExit(f"could only make {len(out)} distinct languages")
    return out


def _client(client_kind: str, concurrency: int) -> Any:
    """An async HTTP client with ``concurrency`` keep-alive connections: ``aiohttp`` (default; its
    per-request cost is small enough that the server, not the client, bounds ``/healthz``) or
    ``httpx`` (about 1 ms of client CPU per request here, which caps ``/healthz`` near 1,000
    requests/s on two cores and so flatters every ratio to it)."""
    if client_kind == "httpx":
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        return httpx.AsyncClient(timeout=120, limits=limits)
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency),
                                 timeout=aiohttp.ClientTimeout(total=120))


async def _run(base: str, total: int, concurrency: int, kind: str, client_kind: str = "aiohttp",
               distinct: list[dict] | None = None) -> tuple[list[float], int, float]:
    """``kind``: ``healthz`` (GET /healthz), ``repeat`` (POST /v1/classify cycling through LANGUAGES,
    all classified once before timing) or ``distinct`` (POST /v1/classify of ``total`` different DFAs)."""
    latencies: list[float] = []
    errors = 0
    counter = iter(range(total))
    if kind == "distinct":
        bodies = distinct if distinct is not None else _distinct_dfas(total)
    else:
        bodies = [{"regex": r, "alphabet": a} for r, a in LANGUAGES]

    async def send(client: Any, i: int) -> int:
        """One request; its status code (the body is read in full)."""
        if client_kind == "httpx":
            if kind == "healthz":
                return (await client.get(f"{base}/healthz")).status_code
            return (await client.post(f"{base}/v1/classify", json=bodies[i % len(bodies)])).status_code
        if kind == "healthz":
            request = client.get(f"{base}/healthz")
        else:
            request = client.post(f"{base}/v1/classify", json=bodies[i % len(bodies)])
        async with request as r:
            await r.read()
            return r.status

    async def worker(client: Any) -> None:
        nonlocal errors
        for i in counter:
            t0 = time.perf_counter()
            status = await send(client, i)
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors += 1

    async with _client(client_kind, concurrency) as client:
        # warm-up: one request per language (imports, caches)
        for regex, alphabet in LANGUAGES:
            if client_kind == "httpx":
                (await client.post(f"{base}/v1/classify", json={"regex": regex, "alphabet": alphabet})).raise_for_status()
            else:
                async with client.post(f"{base}/v1/classify", json={"regex": regex, "alphabet": alphabet}) as r:
                    r.raise_for_status()
                    await r.read()
        # the client's own full garbage collections (20–70 ms with the bodies and the client's state to
        # walk) would stall all its requests in flight and be counted as the server's latency
        gc.collect()
        gc.freeze()
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    gc.unfreeze()
    return latencies, errors, wall


def _cpu_s(pid: int, *, reaped_children: bool = False) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc; 0 when gone); with
    ``reaped_children``, those of its children that ended and were waited for instead (recycled
    classification workers)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    first = 13 if reaped_children else 11
    return (int(fields[first]) + int(fields[first + 1])) / os.sysconf("SC_CLK_TCK")


def _workers_cpu_s(pid: int) -> float:
    """CPU seconds of the worker processes of server ``pid``: the live ones and the recycled ones."""
    return sum(_cpu_s(k) for k in _children(pid)) + _cpu_s(pid, reaped_children=True)


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _wait_until_idle(pid: int, timeout: float = 90.0) -> None:
    """Wait until the server's worker processes have finished starting (their CPU stops growing)."""
    end = time.monotonic() + timeout
    last = -1.0
    while time.monotonic() < end:
        now = sum(_cpu_s(k) for k in _children(pid))
        if abs(now - last) < 0.05:
            return
        last = now
        time.sleep(1.0)


def _pct(sorted_values: list[float], q: float) -> float:
    k = max(0, min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1))))
    return sorted_values[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=400, help="measured requests (bounded; max 20000)")
    ap.add_argument("--concurrency", type=int, default=8, help="concurrent clients")
    ap.add_argument("--isolation", choices=["process", "thread"], default="process", help="LANGCLASS_CLASSIFY_ISOLATION")
    ap.add_argument("--client", choices=["aiohttp", "httpx"], default="aiohttp",
                    help="the HTTP client of every line (httpx costs ~1 ms CPU per request and caps /healthz)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the three lines (max 9)")
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
    kinds = ("healthz", "repeat", "distinct")
    rounds = max(1, min(args.rounds, 9))
    distinct_all = _distinct_dfas(total * rounds)  # every round's languages differ from every other round's
    latencies: dict[str, list[float]] = {k: [] for k in kinds}
    errors = {k: 0 for k in kinds}
    rps_rounds: dict[str, list[float]] = {k: [] for k in kinds}
    cpu_sum: dict[str, list[float]] = {k: [0.0, 0.0] for k in kinds}
    try:
        if proc is not None:
            _wait_until_idle(proc.pid)
        for r in range(rounds):  # the lines interleaved round by round, so drifting load hits each alike
            for kind in kinds:
                if proc is not None:  # each line starts on a quiet server (a worker recycled in the line before has started)
                    _wait_until_idle(proc.pid)
                before = (_cpu_s(proc.pid), _workers_cpu_s(proc.pid)) if proc is not None else (0.0, 0.0)
                lat, err, wall = asyncio.run(_run(base, total, args.concurrency, kind, args.client,
                                                  distinct_all[r * total:(r + 1) * total]))
                latencies[kind] += lat
                errors[kind] += err
                rps_rounds[kind].append(len(lat) / wall)
                if proc is not None:  # CPU per request (warm-up requests included) in the API process and in its workers
                    n = total + len(LANGUAGES)
                    cpu_sum[kind][0] += (_cpu_s(proc.pid) - before[0]) * 1000 / n / rounds
                    cpu_sum[kind][1] += (_workers_cpu_s(proc.pid) - before[1]) * 1000 / n / rounds
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        tmp.cleanup()

    where = args.url or f"uvicorn 1 worker, classify isolation {args.isolation}"
    print(f"{where}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, {rounds} interleaved rounds of "
          f"{total} requests per line, {args.concurrency} concurrent clients, one {args.client} client")
    print(f"{'requests':<62}{'req/s':>8}{'p50 ms':>8}{'p90 ms':>8}{'p99 ms':>8}{'max ms':>8}{'p99/p50':>8}{'errors':>7}"
          f"{'CPU ms/req api':>15}{'workers':>8}")
    labels = {"healthz": "GET /healthz",
              "repeat": f"POST /v1/classify, {len(LANGUAGES)} small languages repeated (cache hits)",
              "distinct": "POST /v1/classify, distinct languages, 2-6 state DFAs (misses)"}
    for kind in kinds:
        lat = sorted(latencies[kind])
        api_cpu, worker_cpu = cpu_sum[kind] if proc is not None else (float("nan"), float("nan"))
        print(f"{labels[kind]:<62}{statistics.median(rps_rounds[kind]):>8.1f}{1000 * _pct(lat, 0.5):>8.1f}"
              f"{1000 * _pct(lat, 0.9):>8.1f}{1000 * _pct(lat, 0.99):>8.1f}{1000 * lat[-1]:>8.1f}"
              f"{_pct(lat, 0.99) / _pct(lat, 0.5):>8.1f}{errors[kind]:>7}{api_cpu:>15.2f}{worker_cpu:>8.2f}")
    for kind in ("repeat", "distinct"):
        ratios = [c / h for c, h in zip(rps_rounds[kind], rps_rounds["healthz"])]
        print(f"ratio classify / healthz throughput, {'repeated' if kind == 'repeat' else 'distinct'}: median "
              f"{statistics.median(ratios):.2f} (rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    print("goal: ratio ≥ 0.5 and p99 ≤ 4 × p50. req/s: median over the rounds; percentiles: all rounds' requests pooled")
    print("CPU ms/req: user+system CPU of the API process and of its worker processes per request of the line "
          "(where the time goes, unaffected by the machine's load)")


if __name__ == "__main__":
    main()
