"""Census benchmarks: the enumeration's own rate, classifications per second (1 and 2 local
processes, and through Ray), the peak memory of each, and the projected full-run time.

Usage::

    python bench/census.py                     # N = 5 over two letters: a sample of 24 shards
    python bench/census.py --shards 60 --ray   # more shards; also through a local Ray (2 CPUs)
    python bench/census.py --ray-address HOST:PORT   # through an existing cluster
    python bench/census.py --states 4 --alphabet 3
    python bench/census.py --states 6 --target 20000 --shards 8 --skip-2   # the N = 6 projection

Prints, each line with the load average (``/proc/loadavg``) at the time, since the machine is shared:

1. the enumeration alone: tables per second (:func:`~langclass.core.automata.enumerate.bfs_tables`
   over the sampled shards) and (table, accepting set) pairs filtered per second by
   :func:`~langclass.core.automata.enumerate.minimal_masks`;
2. the census of the sampled shards (a fixed random sample of the shards with N states, seed 0) in
   1 process, 2 processes and (``--ray``) on Ray: wall time, languages per second, monoid
   classifications per second (one per table with a minimal accepting set, less the monoid cache's
   hits), peak RSS of the driver and of the largest worker (``ru_maxrss``), and the full-run time
   projected from the shards' share of the tables of that size, the smaller sizes (a few percent
   of the tables) counted at the same cost per table (so an upper bound).

Every run first classifies the shards of 3 states untimed (imports, worker start-up); each pool
of processes is fresh, and the in-process cache is cleared first, so no run profits from another's
monoid cache.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from langclass.core.census import run as C  # noqa: E402
from langclass.core.automata.enumerate import bfs_tables, minimal_masks  # noqa: E402


def load() -> str:
    return "load " + " ".join(open("/proc/loadavg").read().split()[:3])


def rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def _sample(n: int, k: int, count: int, target: int) -> list[C.Shard]:
    every = [s for s in C.shards(n, k, target) if s.n == n]
    random.Random(0).shuffle(every)
    return every[:count]


def _total_tables(n: int, k: int) -> int:
    return sum(1 for _ in bfs_tables(n, k))


def bench_enumeration(sample: list[C.Shard], n: int, k: int) -> None:
    t0 = time.perf_counter()
    tabs = [t for s in sample for t in bfs_tables(n, k, s.prefix)]
    t1 = time.perf_counter()
    arr = np.asarray(tabs, dtype=np.int64)
    ok = np.concatenate([minimal_masks(arr[i:i + 1024], n, k) for i in range(0, len(arr), 1024)])
    t2 = time.perf_counter()
    pairs = len(tabs) << n
    print(f"enumeration: {len(tabs)} tables in {t1 - t0:.2f} s ({len(tabs) / (t1 - t0):,.0f} tables/s); "
          f"minimality of {pairs:,} (table, accepting set) pairs in {t2 - t1:.2f} s ({pairs / (t2 - t1):,.0f} pairs/s), "
          f"{int(ok.sum()):,} minimal  [{load()}]")


def bench_run(label: str, sample: list[C.Shard], runner, n: int, k: int, total_tables: int, share_of_work: float) -> None:
    from langclass.core.algebra.lattice import CLASS_KEYS

    keys = tuple(CLASS_KEYS)
    list(runner([s for s in C.shards(3, k) if s.n == 3], keys))  # warm up: imports, worker start (not timed)
    t0 = time.perf_counter()
    results = list(runner(sample, keys))
    dt = time.perf_counter() - t0
    langs = sum(r.languages for r in results)
    tables = sum(r.tables for r in results)
    full = dt * total_tables / max(tables, 1) / share_of_work
    print(f"{label:<12} {len(results)} shards, {tables:,} tables, {langs:,} languages in {dt:.1f} s: "
          f"{langs / dt:,.0f} languages/s, {tables / dt:,.0f} tables (monoid classifications, before the cache) /s; "
          f"peak RSS driver {rss_mib():.0f} MiB, workers {rss_mib(resource.RUSAGE_CHILDREN):.0f} MiB; "
          f"projected full N={n} K={k} census {full / 60:.1f} min  [{load()}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=5)
    ap.add_argument("--alphabet", type=int, default=2)
    ap.add_argument("--shards", type=int, default=24, help="shards of N states sampled (seed 0)")
    ap.add_argument("--target", type=int, default=C.SHARD_TARGET,
                    help="shards per state number (larger: smaller shards, e.g. 20000 for a quick N = 6 sample)")
    ap.add_argument("--ray", action="store_true", help="also through a fresh local Ray with 2 CPUs")
    ap.add_argument("--ray-address", default=None, help="also through the Ray cluster at this address")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--skip-2", action="store_true", help="no 2-process run")
    a = ap.parse_args()
    n, k = a.states, a.alphabet
    sample = _sample(n, k, a.shards, a.target)
    total = _total_tables(n, k)
    smaller = sum(_total_tables(m, k) for m in range(1, n))
    share = total / (total + smaller)  # tables of size N among all tables (the work is per table)
    print(f"census N={n} K={k}: {total:,} tables of {n} states ({smaller:,} smaller) in "
          f"{sum(1 for s in C.shards(n, k, a.target) if s.n == n)} shards; sample {len(sample)} shards  [{load()}]")
    bench_enumeration(sample, n, k)
    if not a.skip_local:
        C._CACHE.clear()
        bench_run("1 process", sample, C.local_runner(1), n, k, total, share)
        if not a.skip_2:
            C._CACHE.clear()
            bench_run("2 processes", sample, C.local_runner(2), n, k, total, share)
    if a.ray or a.ray_address:
        import ray

        from langclass.app.execution.census_ray import ray_runner

        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        kw = {} if a.ray_address else {"num_cpus": 2, "include_dashboard": False}
        runner, cpus = ray_runner(a.ray_address, init_kwargs=kw)
        bench_run(f"ray {cpus} CPUs", sample, runner, n, k, total, share)
        ray.shutdown()


if __name__ == "__main__":
    main()
