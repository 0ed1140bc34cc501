"""Load run against a local service: heavy requests kept in flight beside light traffic.

Starts ``langclass serve`` on loopback (127.0.0.1, a free port, no job workers) on a backend —
``--backend sqlite`` (a throw-away file) or ``postgres`` (a throw-away database on the server at
``--pg``, default ``postgresql+psycopg://postgres@127.0.0.1:5432``) or ``both`` (one run each) —
then keeps ``--heavy`` (default 64) heavy requests **in flight** for ``--duration`` seconds: each
heavy client sends its next request as soon as the previous one is answered (not one burst), cycling
through the kinds of issue 24:

* ``regex``: small-looking heavy regexes without a counter, ``(a|b)*w(a|b)(a|b)…(a|b)`` (2^13
  states for 12 factors; ``w`` varies, so no two in flight are the same language);
* ``list-dfa``: DFAs in the canonical list form (no ``states``), 2,048–4,096 random states;
* ``big-body``: ~1 MB bodies — 499,000 integers, or 330,000 empty objects — refused by
  ``max_json_elements`` without stalling the event loop.

Meanwhile two probe processes send ``/healthz`` and a light classify every ``--probe-ms`` — each
light probe a *different* small language (a 2–4 state DFA over {a, b}, alternately in the named
and the canonical list form, or a short regex; distinct, so no cache can answer it). Prints per
backend:

* probes: p50 / p99 / max latency of ``/healthz`` and of the light classify, and their statuses
  (goal: /healthz p99 < 100 ms, light p99 < 1 s, all 200; a 503 ``busy`` counts as a miss);
* heavy: per kind, statuses and the slowest answer against ``--time-limit`` + 2 s (goal: every
  answer within it), by the client's clock and by the app's own ``Server-Timing``;
* RSS of the classification worker processes (children of the server) before and after.

Bounded: loopback only, at most 256 heavy clients, the whole run stops after ``--duration`` plus
the time limit and a minute.

Usage::

    python bench/load.py --backend both --duration 60 --time-limit 10
    python bench/load.py --heavy 16 --time-limit 5 --duration 20 --backend sqlite
"""

from __future__ import annotations

import argparse
import json
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


def heavy_regexes(count: int) -> list[str]:
    """``count`` different small-looking heavy regexes over {a, b}: ``(a|b)*w`` then 10–12 factors
    ``(a|b)`` written out (no counter), ``w`` a word of length 1–4 (distinct languages)."""
    import itertools

    words = [''.join(p) for n in range(1, 5) for p in itertools.product("ab", repeat=n)]
    out = []
    for k, w in itertools.islice(itertools.product((12, 11, 10), words), count):
        out.append("(a|b)*" + w + "(a|b)" * k)
    return out


def list_form_dfas(count: int, seed: int = 7) -> list[dict]:
    """``count`` random DFAs over {a, b} in the canonical list form (no ``states``), 2,048–4,096 states."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(2048, 4096)
        out.append({"dfa": {"alphabet": ["a", "b"], "initial": 0, "accepting": [q for q in range(n) if rng.random() < 0.5],
                            "transitions": [[rng.randrange(n), rng.randrange(n)] for _ in range(n)]}})
    return out


BIG_BODIES = [
    json.dumps({"dfa": {"alphabet": ["a"], "transitions": [[0] * 499_000]}}, separators=(",", ":")).encode(),
    json.dumps({"dfa": {"alphabet": ["a"], "transitions": [{}] * 330_000}}, separators=(",", ":")).encode(),
]


def light_bodies(total: int) -> list[dict]:
    """``total`` distinct small classify bodies: 2–4 state DFAs, every other one in the canonical
    list form (its states renumbered 0..n-1), and a few short regexes."""
    out: list[dict] = []
    for i, body in enumerate(_distinct_dfas(total, seed=1, max_states=4)):
        dfa = body["dfa"]
        if i % 2:
            names = dfa["states"]
            out.append({"dfa": {"alphabet": dfa["alphabet"], "initial": names.index(dfa["initial"]),
                                "accepting": [names.index(q) for q in dfa["accepting"]],
                                "transitions": [[names.index(dfa["transitions"][q][x]) for x in dfa["alphabet"]] for q in names]}})
        else:
            out.append(body)
    return out


def make_postgres_database(admin_url: str) -> tuple[str, Any]:
    """A fresh database on the PostgreSQL server of ``admin_url``; returns its URL and a dropper."""
    import psycopg

    name = f"langclass_load_{os.getpid()}"
    plain = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain.rstrip("/") + "/postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")

    def drop() -> None:
        with psycopg.connect(plain.rstrip("/") + "/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return admin_url.rstrip("/") + "/" + name, drop


def run_backend(backend: str, args: argparse.Namespace) -> None:
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="langclass-load-")
    drop = None
    if backend == "postgres":
        url, drop = make_postgres_database(args.pg)
    else:
        url = f"sqlite:///{tmp}/load.db"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")},
           "LANGCLASS_DATABASE_URL": url, "LANGCLASS_WORKER_SLOTS": "0",
           "LANGCLASS_TIME_LIMIT_S": str(args.time_limit), "LANGCLASS_CLASSIFY_CONCURRENCY": str(args.concurrency),
           "LANGCLASS_CLASSIFY_QUEUE_MAX": str(args.queue_max), "LANGCLASS_LOG_LEVEL": "warning",
           "LANGCLASS_MAX_STATES": "1000000", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "langclass.app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    heavy: list[tuple[str, int, float, float]] = []
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
            for _ in range(args.concurrency + 1):  # warm the workers of both lanes
                c.post("/v1/classify", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
        time.sleep(1.0)
        rss_before = children_rss(server.pid)

        regexes = heavy_regexes(64)
        dfas = list_form_dfas(16)
        kinds = ["regex", "regex", "list-dfa", "big-body"]
        lock = threading.Lock()
        ready = threading.Barrier(args.heavy + 1)
        start = threading.Event()
        t_end = [0.0]

        def client(i: int) -> None:
            with httpx.Client(base_url=base, timeout=args.time_limit + 60) as c:
                ready.wait()
                start.wait()
                j = i
                while time.monotonic() < t_end[0]:
                    kind = kinds[j % len(kinds)]
                    j += 1
                    t0 = time.monotonic()
                    try:
                        if kind == "regex":
                            r = c.post("/v1/classify", json={"regex": regexes[(i + j) % len(regexes)], "alphabet": ["a", "b"]})
                        elif kind == "list-dfa":
                            r = c.post("/v1/classify", json=dfas[(i + j) % len(dfas)])
                        else:
                            r = c.post("/v1/classify", content=BIG_BODIES[(i + j) % 2], headers={"Content-Type": "application/json"})
                        code, server_s = r.status_code, server_timing_s(r)
                    except httpx.TransportError:
                        code, server_s = 0, float("nan")
                    with lock:
                        heavy.append((kind, code, time.monotonic() - t0, server_s))
                    if code == 503:
                        time.sleep(0.2)  # busy: a client backs off a little, then keeps its request in flight

        ctx = multiprocessing.get_context("fork")
        go, stop = ctx.Event(), ctx.Event()
        results = ctx.Queue()
        light = light_bodies(3000)
        probe_s = args.duration + args.time_limit + 5
        probers = [ctx.Process(target=probe, args=(name, base, args.probe_ms, probe_s, light, go, stop, results), daemon=True)
                   for name in ("healthz", "light")]
        for prober in probers:
            prober.start()
        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.heavy)]
        for t in threads:
            t.start()
        ready.wait()
        go.set()
        time.sleep(0.5)  # probes alone first
        t_start = time.monotonic()
        t_end[0] = t_start + args.duration
        start.set()
        for t in threads:
            t.join(max(0.0, t_end[0] + args.time_limit + 60 - time.monotonic()))
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
        if drop is not None:
            try:
                drop()
            except Exception as exc:  # noqa: BLE001 - report, do not hide the figures
                print(f"(could not drop the load database: {exc})")

    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"[{backend}] {args.heavy} heavy clients kept in flight for {args.duration:g} s (kinds {'/'.join(kinds)}), "
          f"time limit {args.time_limit:g} s, concurrency {args.concurrency}, queue max {args.queue_max}; wall {wall:.1f} s; "
          f"CPUs {os.cpu_count()}, load average at the end {load:.1f}")
    goals = {"healthz": 100.0, "light": 1000.0}
    for name in ("healthz", "light"):
        rows = probes.get(name, [])
        lat = [t * 1000 for code, t, _, _ in rows if code == 200]
        app = [t * 1000 for code, _, t, _ in rows if code == 200]
        codes: dict[int, int] = {}
        for code, _, _, _ in rows:
            codes[code] = codes.get(code, 0) + 1
        ok = bool(rows) and len(lat) == len(rows) and pct(lat, 0.99) < goals[name]
        print(f"[{backend}] probe {name:8s}: n={len(rows):4d} statuses {dict(sorted(codes.items()))}  "
              f"p50 {pct(lat, 0.5):8.1f} ms  p99 {pct(lat, 0.99):8.1f} ms  max {max(lat, default=float('nan')):8.1f} ms "
              f"(goal p99 < {goals[name]:g} ms, all 200: {'met' if ok else 'MISSED'}); in the app p99 {pct(app, 0.99):.1f} ms")
    bound = args.time_limit + 2
    for kind in ("regex", "list-dfa", "big-body", "all"):
        rows = [r for r in heavy if kind == "all" or r[0] == kind]
        codes = {}
        for _, code, _, _ in rows:
            codes[code] = codes.get(code, 0) + 1
        slowest = max((t for _, _, t, _ in rows), default=float("nan"))
        slowest_app = max((t for _, _, _, t in rows if t == t), default=float("nan"))
        over = sum(1 for _, _, t, _ in rows if t > bound)
        print(f"[{backend}] heavy {kind:9s}: n={len(rows):5d} statuses {dict(sorted(codes.items()))}  slowest {slowest:6.2f} s "
              f"(in the app {slowest_app:6.2f} s; limit + 2 s = {bound:g} s: {'met' if over == 0 and rows else f'{over} over'})  "
              f"median {statistics.median([t for _, _, t, _ in rows]) if rows else float('nan'):.2f} s")
    mb = 2**20
    print(f"[{backend}] worker RSS: before {sorted(v // mb for v in rss_before.values())} MiB, after "
          f"{sorted(v // mb for v in rss_after.values())} MiB ({len(rss_before)} → {len(rss_after)} processes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432", help="PostgreSQL server (a database is made there)")
    ap.add_argument("--heavy", type=int, default=64, help="heavy requests kept in flight (≤ 256)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds the heavy clients keep sending")
    ap.add_argument("--time-limit", type=float, default=30.0, help="LANGCLASS_TIME_LIMIT_S of the service")
    ap.add_argument("--concurrency", type=int, default=2, help="LANGCLASS_CLASSIFY_CONCURRENCY")
    ap.add_argument("--queue-max", type=int, default=16, help="LANGCLASS_CLASSIFY_QUEUE_MAX")
    ap.add_argument("--probe-ms", type=float, default=100.0, help="interval between probes")
    args = ap.parse_args()
    if not 1 <= args.heavy <= 256:
        sys.exit("--heavy must be 1..256")
    for backend in (("sqlite", "postgres") if args.backend == "both" else (args.backend,)):
        run_backend(backend, args)


if __name__ == "__main__":
    main()
