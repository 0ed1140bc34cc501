"""Load run against a local service: heavy classifications while probing health and a light classify.

Starts ``langclass serve`` on loopback (127.0.0.1, a free port, a throw-away SQLite file, no job
workers), then fires ``--heavy`` concurrent heavy classifications (default 64 of
``(a|b)*a(a|b){12}``) and, during them, probes ``/healthz`` and a light classify every ``--probe-ms``
— each light probe a *different* small language (a 2–4 state DFA over {a, b}; distinct canonical
fingerprints, so no cache can answer it and every probe is classified by a worker). Prints:

* probes: p50 / p99 / max latency of ``/healthz`` and of the light classify, and their statuses
  (goal: /healthz p99 < 100 ms, light classify p99 < 1 s; a 503 ``busy`` counts as a miss);
* heavy: statuses (200, 422 time-limit, 503 busy) and the slowest answer against the time limit
  (goal: every answer within limit + 2 s);
* RSS of the classification worker processes (children of the server) before and after.

Bounded: loopback only, at most 256 heavy requests, the whole run stops after ``--max-s``.

Usage::

    python bench/load.py                      # 64 heavy, LANGCLASS_TIME_LIMIT_S=30 default of the service
    python bench/load.py --heavy 16 --time-limit 5 --concurrency 2 --queue-max 8
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import _distinct_dfas  # noqa: E402  (distinct small languages, checked with this checkout's langclass)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children_rss(pid: int) -> dict[int, int]:
    """RSS (bytes) of every child process of ``pid`` (Linux /proc)."""
    out: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                out[int(entry.name)] = int((entry / "statm").read_text().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return out


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def server_timing_s(response: httpx.Response) -> float:
    """The app's own time for ``response`` (its ``Server-Timing: app;dur=<ms>`` header), in seconds."""
    for part in response.headers.get("server-timing", "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name == "app" and dur:
            return float(dur) / 1000
    return float("nan")


def probe(name: str, base: str, probe_ms: float, max_s: float, light_bodies: list[dict], go: Any, stop: Any, results: Any) -> None:
    """Probe ``/healthz`` or a light classify (each a different small language) until ``stop``;
    put ``(name, [(status, client seconds, server seconds, monotonic time sent), ...])`` on ``results``."""
    rows: list[tuple[int, float, float, float]] = []
    bodies = iter(light_bodies)
    with httpx.Client(base_url=base, timeout=30) as c:
        go.wait(max_s)
        end = time.monotonic() + max_s
        while not stop.is_set() and time.monotonic() < end:
            t0 = time.monotonic()
            try:
                r = c.get("/healthz") if name == "healthz" else c.post("/v1/classify", json=next(bodies))
                code, server_s = r.status_code, server_timing_s(r)
            except (httpx.TransportError, StopIteration):
                code, server_s = 0, float("nan")
            rows.append((code, time.monotonic() - t0, server_s, t0))
            time.sleep(probe_ms / 1000)
    results.put((name, rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heavy", type=int, default=64, help="concurrent heavy classifications (≤ 256)")
    ap.add_argument("--regex", default="(a|b)*a(a|b){12}", help="the heavy regex over {a, b}")
    ap.add_argument("--time-limit", type=float, default=30.0, help="LANGCLASS_TIME_LIMIT_S of the service")
    ap.add_argument("--concurrency", type=int, default=2, help="LANGCLASS_CLASSIFY_CONCURRENCY")
    ap.add_argument("--queue-max", type=int, default=16, help="LANGCLASS_CLASSIFY_QUEUE_MAX")
    ap.add_argument("--probe-ms", type=float, default=100.0, help="interval between probes")
    ap.add_argument("--max-s", type=float, default=300.0, help="stop everything after this many seconds")
    args = ap.parse_args()
    if not 1 <= args.heavy <= 256:
        sys.exit("--heavy must be 1..256")

    port = free_port()
    tmp = tempfile.mkdtemp(prefix="langclass-load-")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")},
           "LANGCLASS_DATABASE_URL": f"sqlite:///{tmp}/load.db", "LANGCLASS_WORKER_SLOTS": "0",
           "LANGCLASS_TIME_LIMIT_S": str(args.time_limit), "LANGCLASS_CLASSIFY_CONCURRENCY": str(args.concurrency),
           "LANGCLASS_CLASSIFY_QUEUE_MAX": str(args.queue_max), "LANGCLASS_LOG_LEVEL": "warning",
           "LANGCLASS_MAX_STATES": "1000000", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "langclass.app.cli.commands", "serve", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as c:
            end = time.monotonic() + 120
            while True:
                try:
                    if c.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > end or server.poll() is not None:
                    sys.exit("the server did not become ready: " + (server.stderr.read().decode()[-2000:] if server.stderr else ""))
                time.sleep(0.2)
            # warm the classification workers (they start in the background)
            for _ in range(args.concurrency):
                c.post("/v1/classify", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
        time.sleep(1.0)
        rss_before = children_rss(server.pid)

        deadline = time.monotonic() + args.max_s
        heavy: list[tuple[int, float, float]] = []
        lock = threading.Lock()

        ready = threading.Barrier(args.heavy + 1)
        burst = threading.Event()

        def fire() -> None:
            with httpx.Client(base_url=base, timeout=args.time_limit + 120) as c:  # made before the clock starts
                ready.wait()
                burst.wait()
                t0 = time.monotonic()
                try:
                    r = c.post("/v1/classify", json={"regex": args.regex, "alphabet": ["a", "b"]})
                    code, server_s = r.status_code, server_timing_s(r)
                except httpx.TransportError:
                    code, server_s = 0, float("nan")
                with lock:
                    heavy.append((code, time.monotonic() - t0, server_s))

        # the probes run in their own process (forked before any thread starts), so the 64 heavy
        # client threads' GIL does not show up as probe latency
        light_bodies = _distinct_dfas(2000, seed=1, max_states=4)
        ctx = multiprocessing.get_context("fork")
        go, stop = ctx.Event(), ctx.Event()
        results = ctx.Queue()
        probers = [ctx.Process(target=probe, args=(name, base, args.probe_ms, args.max_s, light_bodies, go, stop, results), daemon=True)
                   for name in ("healthz", "light")]
        for prober in probers:
            prober.start()
        threads = [threading.Thread(target=fire, daemon=True) for _ in range(args.heavy)]
        for t in threads:
            t.start()
        ready.wait()  # every heavy client made (64 TLS contexts cost seconds of client CPU)
        go.set()
        time.sleep(0.5)  # probes alone first
        t_start = time.monotonic()
        burst.set()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        wall = time.monotonic() - t_start
        stop.set()
        probes: dict[str, list[tuple[int, float, float, float]]] = {}
        for _ in probers:
            name, rows = results.get(timeout=60)
            probes[name] = rows
        for prober in probers:
            prober.join(30)
        time.sleep(1.0)
        rss_after = children_rss(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()

    print(f"load: {args.heavy} × {args.regex!r} concurrent, time limit {args.time_limit:g} s, concurrency {args.concurrency}, "
          f"queue max {args.queue_max}; wall {wall:.1f} s; CPUs {os.cpu_count()}")
    goals = {"healthz": 100.0, "light": 1000.0}
    for name in ("healthz", "light"):
        rows = probes.get(name, [])
        lat = [t * 1000 for code, t, _, _ in rows if code == 200]
        app = [t * 1000 for code, _, t, _ in rows if code == 200]
        slow = [f"{t0 - t_start:+.1f}s:{t:.1f}s" for _, t, _, t0 in rows if t > goals[name] / 1000]
        codes: dict[int, int] = {}
        for code, _, _, _ in rows:
            codes[code] = codes.get(code, 0) + 1
        ok = bool(rows) and len(lat) == len(rows) and pct(lat, 0.99) < goals[name]
        print(f"probe {name:8s}: n={len(rows):4d} statuses {dict(sorted(codes.items()))}  "
              f"p50 {pct(lat, 0.5):8.1f} ms  p99 {pct(lat, 0.99):8.1f} ms  max {max(lat, default=float('nan')):8.1f} ms "
              f"(goal p99 < {goals[name]:g} ms, all 200: {'met' if ok else 'MISSED'}); in the app p99 {pct(app, 0.99):.1f} ms")
        if slow:
            print(f"   over the goal (sent at, relative to the heavy burst: took): {' '.join(slow[:12])}")
    codes = {}
    for code, _, _ in heavy:
        codes[code] = codes.get(code, 0) + 1
    slowest = max((t for _, t, _ in heavy), default=float("nan"))
    slowest_app = max((t for _, _, t in heavy if t == t), default=float("nan"))
    print(f"heavy         : n={len(heavy)} statuses {dict(sorted(codes.items()))}  slowest answer {slowest:.2f} s "
          f"(limit + 2 s = {args.time_limit + 2:g} s: {'met' if slowest <= args.time_limit + 2 else 'MISSED'}; in the app "
          f"{slowest_app:.2f} s)  median {statistics.median([t for _, t, _ in heavy]) if heavy else float('nan'):.2f} s")
    mb = 2**20
    print(f"worker RSS    : before {sorted(v // mb for v in rss_before.values())} MiB, after {sorted(v // mb for v in rss_after.values())} MiB "
          f"({len(rss_before)} → {len(rss_after)} processes)")


if __name__ == "__main__":
    main()
