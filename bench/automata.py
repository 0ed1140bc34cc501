"""Benchmark the ingest path: regex → canonical minimal DFA, and minimization of random DFAs.

Prints, for ``(a|b)*a(a|b){n}`` with n = 10…16 (the minimal DFA has 2^(n+1) states), the wall time
of parse + Thompson NFA + subset construction + Hopcroft + canonical numbering; and the time of
``DFA.canonical()`` on random complete DFAs with 10^3…10^5 states over 2 letters.

Usage: ``python bench/automata.py [--max-n 16] [--repeats 1] [--seed 0]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-n", type=int, default=10)
    ap.add_argument("--max-n", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=1, help="best of this many runs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    limits = Limits(max_states=2**20, time_limit_s=None)

    parse_regex("(a|b)*a(a|b){3}", ["a", "b"], limits)  # warm-up (imports, numpy first calls)
    print("regex → minimal complete DFA: (a|b)*a(a|b){n} over {a,b}")
    print(f"{'n':>3} {'states':>8} {'seconds':>9} {'states/s':>10}")
    for n in range(args.min_n, args.max_n + 1):
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            d = parse_regex(f"(a|b)*a(a|b){{{n}}}", ["a", "b"], limits)
            best = min(best, time.perf_counter() - t0)
        assert d.num_states == 2 ** (n + 1), d.num_states
        print(f"{n:>3} {d.num_states:>8} {best:>9.3f} {d.num_states / best:>10.0f}")

    print()
    print("minimization (DFA.canonical: BFS trim + Moore rounds, then Hopcroft if needed + renumbering) of random complete DFAs, |Σ| = 2")
    print(f"{'states':>8} {'minimal':>8} {'seconds':>9}")
    rng = np.random.default_rng(args.seed)
    for n in (10**3, 10**4, 10**5):
        table = rng.integers(0, n, size=(n, 2))
        acc = rng.random(n) < 0.5
        best = float("inf")
        for _ in range(args.repeats):
            d = DFA(("a", "b"), table, 0, acc)  # fresh object: canonical() is cached on the instance
            t0 = time.perf_counter()
            c = d.canonical()
            best = min(best, time.perf_counter() - t0)
        print(f"{n:>8} {c.num_states:>8} {best:>9.3f}")


if __name__ == "__main__":
    main()
