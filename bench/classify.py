"""Classification benchmarks and the large LTL[P,MOD] cross-check.

Usage::

    python bench/classify.py                 # polynomial tests (10^3..10^5 states) + T7
    python bench/classify.py --verify 25000  # SCC test vs brute-force A_k vs stable semigroup on random DFAs
    python bench/classify.py --skip-t7       # only the polynomial tests
    python bench/classify.py --local-only    # only the small-monoid family (a|b)*b(a|b){n}, n = 4..9
    python bench/classify.py --memory        # peak RSS per step: 10^5-state DFA, T7 (--t8: also T8)
    python bench/classify.py --skip-poly --skip-local --t8   # T7 and T8 against libsemigroups
    python bench/classify.py --small 400     # CPU per classification of distinct small languages
    python bench/classify.py --cycles        # one-cycle DFAs of length 1,000 and 10,000 (also in the default run)

Prints:

1. wall time of the polynomial automaton tests (LTL[P], LTL[P,MOD], stutter-invariance, group) on
   minimal DFAs of 10^3, 10^4, 10^5 states, per family, with the time per state (linear growth
   shows as a flat µs/state column);
2. the full transformation monoid T7 (823,543 elements, a 7-state DFA over 3 letters: a
   transposition, a 7-cycle and a rank-6 map): our closure, our full classification, and
   libsemigroups' own Froidure–Pin enumeration, interleaved rounds, with the ratios of the medians;
   with ``--t8`` also T8 (16,777,216 elements): the same steps, each in a forked child whose address
   space is capped at 8 GiB, with peak RSS and the ratios (or the error a step hit);
3. the family ``(a|b)*b(a|b){n}`` (n+1-th letter from the end is b; 2^(n+1) states, monoid of
   2^(n+2) - 1 elements, 2^(n+1) idempotents, all maximal, in one D-class) for n = 4..9 and
   ``(a|b|c)*a(a|b|c){6}``: analyze() per stage, then each local step on its own (multiplication
   table, maximal idempotents, LTL[P,Y], locally testable, LTT, extra facts, ltl_p_y_delay), ms;
4. with ``--memory`` (alone): each step run in a forked child with its time and peak RSS — a
   10^5-state random DFA (minimization, automaton tests), T7 (closure, full classification), and
   with ``--t8`` also T8 (16,777,216 elements);
5. one-cycle DFAs (a^n)* for n = 1,000 and 10,000 (``--cycles`` alone): wall and CPU seconds of the
   full classification, undecided classes (none expected), the periods;
6. with ``--verify N``: on N distinct minimal DFAs (seeds alternate between uniform random DFAs
   with ≤ 6 states and structured ones — cycles and single states chained forward, some cycles with
   a chord — with ≤ 7 states; ≤ 3 letters), the number of
   agreements between the linear-time SCC test (least k), the brute-force k-automata A_k for every
   k ≤ lcm(1..n) (Def. A.7/A.8 of "Disentangling the Expressivity of RoPE"), and R-triviality of the
   stable semigroup (Thm 3.3).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from langclass.core.classification.analysis import analyze  # noqa: E402
from langclass.core.automata.automaton import DFA  # noqa: E402
from langclass.core.algebra.classes import AUTOMATON_KEYS, DECIDERS, Context, monoid_extras  # noqa: E402
from langclass.core.base.limits import Limits  # noqa: E402
from langclass.core.algebra.monoid import transition_monoid  # noqa: E402


# ----------------------------------------------------------------------------- families of large minimal DFAs


def random_family(n: int, rng: np.random.Generator) -> DFA:
    """A random complete DFA over {a, b} (almost always minimal and reachable after canonical())."""
    t = rng.integers(0, n, size=(n, 2))
    t[np.arange(n - 1), 0] = np.arange(1, n)  # a spanning path keeps every state reachable
    acc = rng.random(n) < 0.5
    return DFA(("a", "b"), t, 0, acc)


def chain_family(n: int, rng: np.random.Generator) -> DFA:
    """A partially ordered DFA: a goes one step up, b jumps forward at random (LTL[P] member)."""
    q = np.arange(n)
    a = np.minimum(q + 1, n - 1)
    b = np.minimum(q + 1 + rng.integers(0, 5, size=n), n - 1)
    acc = rng.random(n) < 0.5
    return DFA(("a", "b"), np.stack([a, b], axis=1), 0, acc)


def cycles_family(n: int, rng: np.random.Generator) -> DFA:
    """Simple cycles of lengths 2..7 chained by b (LTL[P,MOD] member with k = lcm of the lengths)."""
    lens = []
    total = 0
    while total < n:
        L = int(rng.integers(2, 8))
        lens.append(L)
        total += L
    t = np.zeros((total + 1, 2), dtype=np.int64)
    start = 0
    for L in lens:
        for i in range(L):
            t[start + i, 0] = start + (i + 1) % L
            t[start + i, 1] = start + L  # next cycle, or the sink after the last one
        start += L
    t[total] = total  # sink
    acc = rng.random(total + 1) < 0.5
    return DFA(("a", "b"), t, 0, acc)


def bench_polynomial(sizes=(1_000, 10_000, 100_000)) -> None:
    rng = np.random.default_rng(0)
    print("polynomial automaton tests (LTL[P], LTL[P,MOD], stutter-invariant, group) on minimal DFAs")
    print(f"{'family':<8}{'states':>9}{'test s':>10}{'µs/state':>10}  answers")
    for name, fam in (("random", random_family), ("chain", chain_family), ("cycles", cycles_family)):
        for n in sizes:
            d = fam(n, rng).canonical()
            t0 = time.perf_counter()
            ctx = Context(d)
            res = {k: DECIDERS[k](ctx) for k in AUTOMATON_KEYS}
            dt = time.perf_counter() - t0
            ans = ", ".join(f"{k}={'y' if r.member else 'n'}" for k, r in res.items())
            k = res["ltl_p_mod"].period
            print(f"{name:<8}{d.num_states:>9}{dt:>10.3f}{1e6 * dt / d.num_states:>10.2f}  {ans}" + (f" (k={k})" if k else ""))


# ----------------------------------------------------------------------------- T7


def t7_dfa(n: int = 7) -> DFA:
    perm = [1, 0] + list(range(2, n))
    cyc = [(q + 1) % n for q in range(n)]
    rank = [0, 0] + list(range(2, n))
    return DFA.from_table("abc", [[perm[q], cyc[q], rank[q]] for q in range(n)], 0, [0, 3])


def _timed(fn):
    """(result, wall seconds, CPU seconds of this process) — CPU time is the figure to compare on a
    loaded machine (every timed step here is single-threaded)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _ls_gens(d: DFA):
    import libsemigroups_pybind11 as ls

    ls.ReportGuard(False)
    n = d.num_states
    return ls, [ls.Transf([int(d.transitions[q, a]) for q in range(n)]) for a in range(d.num_letters)]


def bench_t7(repeat: int = 3) -> None:
    """T7 side by side with libsemigroups, ``repeat`` times interleaved (ours, theirs, ours, …) so
    both see the same load; the ratio is taken on the medians (and shown per round)."""
    d = t7_dfa()
    limits = Limits(max_monoid_size=1_000_000, time_limit_s=None)
    analyze(t7_dfa(4), limits)  # imports (group identification, scipy graphs) before anything is timed
    try:
        ls, gens = _ls_gens(d)
    except ImportError:
        ls = None
    rounds = []
    for _ in range(repeat):
        M, t_closure, c_closure = _timed(lambda: transition_monoid(d, limits))
        del M
        r, t_full, c_full = _timed(lambda: analyze(d, limits))
        ls_t = _timed(lambda: ls.FroidurePin(gens).size()) if ls is not None else (None, float("nan"), float("nan"))
        rounds.append((t_closure, c_closure, t_full, c_full, ls_t[1], ls_t[2], r))
    med = lambda i: float(np.median([x[i] for x in rounds]))  # noqa: E731
    r = rounds[-1][6]
    print()
    print(f"T7: |M| = {r.monoid_summary['size']}, idempotents = {r.monoid_summary['idempotents']}, "
          f"D-classes = {r.monoid_summary['d_classes']}, s = {r.monoid_summary['stability_index']}; "
          f"{repeat} interleaved rounds, medians (load: {_load()})")
    print(f"{'':<55}{'wall s':>9}{'CPU s':>9}")
    print(f"  {'our closure (elements, words, right Cayley graph)':<53}{med(0):9.3f}{med(1):9.3f}")
    print(f"  {'our build + full classification (analyze)':<53}{med(2):9.3f}{med(3):9.3f}")
    print("  stages of the last round (wall ms):", r.timings_ms)
    if ls is None:
        print("  libsemigroups_pybind11 not installed: no comparison")
        return

    def full_ls():
        S2 = ls.FroidurePin(gens)
        S2.size()
        S2.right_cayley_graph()
        S2.left_cayley_graph()
        return S2.number_of_idempotents()

    ni, t_ls2, c_ls2 = _timed(full_ls)
    print(f"  {'libsemigroups FroidurePin enumeration':<53}{med(4):9.3f}{med(5):9.3f}")
    print(f"  {f'libsemigroups + both Cayley graphs + idempotents ({ni})':<53}{t_ls2:9.3f}{c_ls2:9.3f}")
    print("  per round, full classification / libsemigroups (CPU): "
          + ", ".join(f"{x[3] / x[5]:.2f}" for x in rounds))
    print(f"  ratio closure / libsemigroups enumeration:             wall {med(0) / med(4):6.2f}   CPU {med(1) / med(5):6.2f}")
    print(f"  ratio full classification / libsemigroups enumeration: wall {med(2) / med(4):6.2f}   CPU {med(3) / med(5):6.2f}")


T8_MEMORY_BYTES = 8 << 30
"""T8 runs in children whose address space is capped at 8 GiB (RLIMIT_AS): the memory goal as a limit that holds."""


def bench_t8() -> None:
    """T8 (16,777,216 elements): closure, full classification and libsemigroups' enumeration, each in
    a forked child under an 8 GiB address-space limit; time, CPU, peak RSS and the ratios."""
    d = t7_dfa(8)
    limits = Limits(max_monoid_size=20_000_000, max_monoid_entries=20_000_000 * 8, time_limit_s=None)
    print()
    print(f"T8: each step in a forked child, address space capped at {T8_MEMORY_BYTES >> 30} GiB (load: {_load()})")
    print(f"{'':<55}{'wall s':>9}{'CPU s':>9}{'peak MiB':>10}  result")
    rows = {}

    def show(name, key, fn):
        out, sec, cpu, _, peak = in_child(fn, as_limit=T8_MEMORY_BYTES, cpu=True)
        rows[key] = (sec, cpu, out)
        print(f"  {name:<53}{sec:9.2f}{cpu:9.2f}{peak:10.0f}  {out}", flush=True)

    show("our closure (elements, words, right Cayley graph)", "closure",
         lambda: f"|M| = {transition_monoid(d, limits).size}")

    def full():
        r = analyze(d, limits)
        ms = r.monoid_summary
        if "error" in ms:
            return f"monoid: {ms['error']}"
        undecided = [k for k, c in r.classes.items() if c.member is None]
        return (f"|M| = {ms['size']}, idempotents = {ms['idempotents']}, D-classes = {ms['d_classes']}, "
                f"s = {ms['stability_index']}, undecided: {undecided or 'none'}")

    show("our build + full classification (analyze)", "full", full)
    try:
        ls, gens = _ls_gens(d)
    except ImportError:
        print("  libsemigroups_pybind11 not installed: no comparison")
        return
    show("libsemigroups FroidurePin enumeration", "ls", lambda: f"|S| = {ls.FroidurePin(gens).size()}")
    ok = all(not str(rows[k][2]).startswith("error") for k in rows)
    if ok:
        for key, label in (("closure", "closure"), ("full", "full classification")):
            print(f"  ratio {label} / libsemigroups enumeration: wall {rows[key][0] / rows['ls'][0]:6.2f}   "
                  f"CPU {rows[key][1] / rows['ls'][1]:6.2f}")
    else:
        print("  a step failed (see its result): no ratio")


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            one, five, fifteen = f.read().split()[:3]
        return f"{one} {five} {fifteen} on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


# ----------------------------------------------------------------------------- peak memory per step


def _rss_mib(field: str) -> float:
    """VmRSS / VmHWM (peak) of this process from /proc/self/status, in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def in_child(fn, as_limit: int | None = None, cpu: bool = False):
    """Run ``fn()`` in a forked child; returns (its printable result, seconds, RSS at the start of the
    step, peak RSS of the step) — the child's own high-water mark, so each step is measured alone.
    With ``cpu``: (result, seconds, CPU seconds, RSS at start, peak). ``as_limit``: cap the child's
    address space (bytes); a step over it reports its MemoryError."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            if as_limit:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))
            start = _rss_mib("VmRSS")
            t0, c0 = time.perf_counter(), time.process_time()
            out = fn()
            msg = repr((str(out), time.perf_counter() - t0, time.process_time() - c0, start, _rss_mib("VmHWM")))
        except BaseException as exc:  # report and leave
            msg = repr((f"error: {exc!r}"[:300], float("nan"), float("nan"), float("nan"), _rss_mib("VmHWM")))
        os.write(w, msg.encode())
        os.close(w)
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    import ast

    if not data:  # killed (e.g. by the OOM killer)
        res = (f"error: the child died (status {status})", float("nan"), float("nan"), float("nan"), float("nan"))
    else:
        res = ast.literal_eval(data.decode())
    return res if cpu else (res[0], res[1], res[3], res[4])


def bench_memory(t8: bool = False) -> None:
    """Peak RSS per step: a 10^5-state DFA (minimization, automaton tests), T7 and optionally T8
    (closure, full classification), each step in its own forked child."""
    rng = np.random.default_rng(0)
    big = random_family(100_000, rng)
    dfas = [("T7", t7_dfa(7), 1_000_000)]
    if t8:
        dfas.append(("T8", t7_dfa(8), 20_000_000))
    print(f"load: {_load()}")
    print()
    print("peak memory per step (each step in a forked child; RSS at its start = the parent's, peak = its high-water mark)")
    print(f"{'step':<48}{'seconds':>9}{'RSS start MiB':>15}{'peak MiB':>10}{'step +MiB':>11}  result")

    def show(name, res):
        out, sec, start, peak = res
        print(f"{name:<48}{sec:>9.2f}{start:>15.0f}{peak:>10.0f}{peak - start:>11.0f}  {out}")

    show("10^5-state random DFA: canonical (minimize)", in_child(lambda: big.canonical().num_states))
    d = big.canonical()

    def automaton_tests():
        ctx = Context(d)
        return {k: DECIDERS[k](ctx).member for k in AUTOMATON_KEYS}

    show("10^5-state DFA: automaton tests", in_child(automaton_tests))
    for name, dfa, cap in dfas:
        limits = Limits(max_monoid_size=cap, max_monoid_entries=cap * dfa.num_states, time_limit_s=None)
        show(f"{name}: closure (transition monoid)", in_child(lambda: transition_monoid(dfa, limits).size))
        show(f"{name}: build + full classification (analyze)", in_child(lambda: analyze(dfa, limits).monoid_summary["size"]))


# ----------------------------------------------------------------------------- small monoids, many idempotents


def bench_local(ns=range(4, 10)) -> None:
    from langclass.core.algebra.classes import ltl_p_y_delay
    from langclass.core.ingest.parse import parse_regex

    cases = [(f"(a|b)*b(a|b){{{n}}}", "ab") for n in ns] + [("(a|b|c)*a(a|b|c){6}", "abc")]
    print()
    print("small monoids with many idempotents: analyze() stages and the local steps alone (ms)")
    print(f"{'regex':<22}{'states':>7}{'|M|':>7}{'|E|':>6}{'maxi':>6}{'reps':>5}{'analyze':>9}"
          f"{'monoid':>8}{'algebra':>9}{'encode':>8} | {'table':>7}{'maxi':>7}{'LTL[P,Y]':>9}{'LT':>7}{'LTT':>7}"
          f"{'extras':>8}{'delay':>7}")
    for rx, sigma in cases:
        d = parse_regex(rx, list(sigma))
        limits = Limits(time_limit_s=None)
        t0 = time.perf_counter()
        r = analyze(d, limits)
        total = time.perf_counter() - t0
        tm = r.timings_ms
        M = transition_monoid(d, limits)
        ctx = Context(d, M, limits)
        steps = {}

        def timed(name, fn):
            t = time.perf_counter()
            out = fn()
            steps[name] = 1e3 * (time.perf_counter() - t)
            return out

        timed("table", lambda: ctx.mult_table)
        timed("maxi", lambda: ctx.maximal_idempotent_reps)
        for key in ("ltl_p_y", "locally_testable", "locally_threshold_testable"):
            timed(key, lambda: DECIDERS[key](ctx))
        timed("extras", lambda: monoid_extras(ctx))
        k = timed("delay", lambda: ltl_p_y_delay(d))
        E = int((M.idempotent & M.in_semigroup).sum())
        print(f"{rx:<22}{d.num_states:>7}{M.size:>7}{E:>6}{len(ctx.maximal_idempotents):>6}"
              f"{len(ctx.maximal_idempotent_reps):>5}{1e3 * total:>9.1f}{tm['monoid']:>8.1f}{tm['algebraic_tests']:>9.1f}"
              f"{tm['encodings']:>8.1f} | {steps['table']:>7.1f}{steps['maxi']:>7.1f}{steps['ltl_p_y']:>9.1f}"
              f"{steps['locally_testable']:>7.1f}{steps['locally_threshold_testable']:>7.1f}{steps['extras']:>8.1f}"
              f"{steps['delay']:>7.1f}  (delay k={k})")


# ----------------------------------------------------------------------------- three-way LTL[P,MOD] check


def _lcm_upto(n: int) -> int:
    out = 1
    for i in range(2, n + 1):
        out = out * i // math.gcd(out, i)
    return out


def _brute_ak_least_k(d: DFA, M) -> int | None:
    """Least k ≤ lcm(1..n) with A_k partially ordered over all states: edges q → x[q] for x ∈ η(Σ^k)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = d.num_states
    K = _lcm_upto(n)
    cur = np.unique(M.right[0])
    for k in range(1, K + 1):
        if k > 1:
            mask = np.zeros(M.size, dtype=bool)
            mask[M.right[cur].ravel()] = True
            cur = np.flatnonzero(mask)
        X = M.elements[cur].astype(np.int64)
        src = np.tile(np.arange(n), X.shape[0])
        g = csr_matrix((np.ones(src.size, dtype=np.int8), (src, X.ravel())), shape=(n, n))
        ncomp, _ = connected_components(g, directed=True, connection="strong")
        if ncomp == n:
            return k
    return None


def _structured_dfa(rng: random.Random) -> DFA:
    """Blocks that are single states or cycles, chained forward, sometimes with one chord inside a
    cycle (which breaks "simple cycle"): many LTL[P,MOD] members and near-misses."""
    n = rng.randint(2, 7)
    k = rng.randint(1, 3)
    blocks, q = [], 0
    while q < n:
        L = min(rng.choice([1, 1, 2, 3, 4]), n - q)
        blocks.append(list(range(q, q + L)))
        q += L
    block_of = {s: i for i, b in enumerate(blocks) for s in b}
    table = []
    for s in range(n):
        b = blocks[block_of[s]]
        nxt_in = b[(b.index(s) + 1) % len(b)]
        row = []
        for a in range(k):
            later = [t for t in range(n) if block_of[t] > block_of[s]]
            if a == 0 or not later or rng.random() < 0.5:
                row.append(nxt_in if len(b) > 1 else (s if not later or rng.random() < 0.5 else rng.choice(later)))
            else:
                row.append(rng.choice(later))
        table.append(row)
    if rng.random() < 0.3:  # a chord inside some cycle
        cyc = [b for b in blocks if len(b) > 2]
        if cyc:
            b = rng.choice(cyc)
            s = rng.choice(b)
            table[s][rng.randrange(k)] = rng.choice(b)
    return DFA.from_table("abc"[:k], table, 0, [t for t in range(n) if rng.random() < 0.5]).canonical()


def _verify_one(seed: int):
    rng = random.Random(seed)
    if seed % 2:
        d = _structured_dfa(rng)
    else:
        n = rng.randint(1, 6)
        k = rng.randint(1, 3)
        d = DFA.from_table("abc"[:k], [[rng.randrange(n) for _ in range(k)] for _ in range(n)], 0,
                           [q for q in range(n) if rng.random() < 0.5]).canonical()
    ctx = Context(d)
    scc = DECIDERS["ltl_p_mod"](ctx)
    M = transition_monoid(d)
    ctx.monoid = M
    brute = _brute_ak_least_k(d, M)
    alg = monoid_extras(ctx)["stable_semigroup_r_trivial"]
    return d.fingerprint(), scc.period, brute, alg, scc.member


def bench_verify(count: int) -> None:
    t0 = time.perf_counter()
    seen: dict[str, tuple] = {}
    disagreements = []
    seed = 0
    with mp.Pool(max(1, min(2, os.cpu_count() or 1))) as pool:
        while len(seen) < count:
            batch = range(seed, seed + 2 * (count - len(seen)) + 100)
            seed = batch.stop
            for fp, k_scc, k_brute, alg, member in pool.imap_unordered(_verify_one, batch, chunksize=64):
                if fp in seen or len(seen) >= count:
                    continue
                seen[fp] = (k_scc, k_brute, alg)
                if not (k_scc == k_brute and alg == member):
                    disagreements.append((fp, k_scc, k_brute, alg))
    members = sum(1 for v in seen.values() if v[0] is not None)
    print()
    print(f"LTL[P,MOD] three-way check on {len(seen)} distinct minimal DFAs (half uniform ≤ 6 states, half structured "
          f"cycle/DAG ≤ 7 states; ≤ 3 letters): "
          f"{len(seen) - len(disagreements)} agree (least k identical, stable semigroup R-trivial ⇔ member), "
          f"{len(disagreements)} disagree; {members} members; {time.perf_counter() - t0:.1f} s")
    for x in disagreements[:10]:
        print("  DISAGREE", x)


def bench_small(count: int = 400) -> None:
    """CPU per classification of ``count`` distinct small languages (the 2–6 state DFAs bench/api.py
    sends): ``analyze`` alone and the whole worker step ``service.classify_json`` (parse, analyze,
    validate and serialize the response), mean and percentiles in CPU ms (process time, so the
    machine's load matters less than for wall time)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from api import _distinct_dfas  # noqa: E402  (the same languages as the API bench)

    from langclass.app.usecases.service import classify_json, warm_worker
    from langclass.core.ingest.parse import parse_dfa_json

    bodies = _distinct_dfas(count)
    warm_worker()
    dfas = [parse_dfa_json(b["dfa"], Limits()) for b in bodies]
    rows = []
    for name, step in (("analyze", lambda i: analyze(dfas[i])),
                       ("worker step (classify_json)", lambda i: classify_json(dfa=bodies[i]["dfa"], limits=Limits(), version="bench"))):
        times = []
        for i in range(len(bodies)):
            t0 = time.process_time()
            step(i)
            times.append((time.process_time() - t0) * 1e3)
        times.sort()
        pct = lambda q: times[min(len(times) - 1, round(q * (len(times) - 1)))]  # noqa: E731
        rows.append((name, sum(times) / len(times), pct(0.5), pct(0.9), pct(0.99), times[-1]))
    # the goal also asks every class decided (counted after the timing, so no cache of it helps the timed runs)
    undecided = sum(r.member is None for d in dfas for r in analyze(d).classes.values())
    print(f"{count} distinct small languages (2-6 state DFAs over {{a, b}}), CPU ms per classification; load {_load()}")
    print(f"{'step':<30}{'mean':>8}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}")
    for name, *vals in rows:
        print(f"{name:<30}" + "".join(f"{v:>8.2f}" for v in vals))
    print(f"undecided classes over the {count} languages: {undecided}")


def cycle_dfa(n: int) -> DFA:
    """One cycle of length n over {a}, accepting the lengths ≡ 0 (mod n): the group Z_n, every
    period n (the divisors of n are the candidates)."""
    return DFA.from_table("a", [[(q + 1) % n] for q in range(n)], 0, [0])


def bench_cycles(ns=(1_000, 10_000)) -> None:
    """Full classification of one-cycle DFAs (goal: every class decided, n = 1,000 under 1 s and
    n = 10,000 under 5 s within the default limits): wall and CPU seconds, undecided classes, periods."""
    analyze(cycle_dfa(6))  # imports before anything is timed
    print(f"one-cycle DFAs (a^n)*, default limits; load {_load()}")
    print(f"{'n':>7}{'wall s':>9}{'CPU s':>8}  undecided  periods (LTL[P,MOD], LTL[P,Y,MOD])  stages ms")
    for n in ns:
        d = cycle_dfa(n)
        r, wall, cpu = _timed(lambda: analyze(d))
        undecided = [k for k, c in r.classes.items() if c.member is None]
        stages = {k: round(v) for k, v in r.timings_ms.items() if k != "total" and v >= 1}
        print(f"{n:>7}{wall:>9.2f}{cpu:>8.2f}  {','.join(undecided) or 'none':<9}  "
              f"{r.classes['ltl_p_mod'].period}, {r.classes['ltl_p_y_mod'].period}  {stages}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verify", type=int, default=0, help="number of random DFAs for the LTL[P,MOD] cross-check")
    ap.add_argument("--skip-t7", action="store_true")
    ap.add_argument("--skip-poly", action="store_true")
    ap.add_argument("--skip-local", action="store_true", help="skip the (a|b)*b(a|b){n} family")
    ap.add_argument("--local-only", action="store_true", help="only the (a|b)*b(a|b){n} family")
    ap.add_argument("--memory", action="store_true", help="peak RSS per step (10^5-state DFA, T7)")
    ap.add_argument("--t8", action="store_true", help="also T8 (16,777,216 elements; with --memory: its peak RSS per step)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds of T7 against libsemigroups")
    ap.add_argument("--small", type=int, default=0, metavar="N",
                    help="only: CPU per classification of N distinct small languages (bench/api.py's)")
    ap.add_argument("--cycles", action="store_true", help="only: one-cycle DFAs of length 1,000 and 10,000")
    args = ap.parse_args(argv)
    if args.cycles:
        bench_cycles()
        return
    if args.small:
        bench_small(args.small)
        return
    if args.memory:
        bench_memory(args.t8)
        return
    if args.local_only:
        bench_local()
        return
    if not args.skip_poly:
        bench_polynomial()
    if not args.skip_t7:
        bench_t7(args.repeat)
    if args.t8:
        bench_t8()
    if not args.skip_local:
        bench_local()
    bench_cycles()
    if args.verify:
        bench_verify(args.verify)


if __name__ == "__main__":
    main()
