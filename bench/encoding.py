"""The encoding step: N_max for offsets 1..k (conventional RoPE, Eq. 10 of *Disentangling the
Expressivity of RoPE*) at max_length 1000, as the classifier computes it for an LTL[P,Y] language.

Usage::

    python bench/encoding.py                # default parameters (g = 1, C = 1e7, float32)
    python bench/encoding.py --reps 50      # more repetitions for the warm minimum

Prints, for k = 1, 3, 5, 8:

* ``cold``: the first ``conventional_rope_length(k, ...)`` in a fresh Python process, after
  importing ``langclass.core.precision.numerics`` and ``langclass.core.precision.encoding_choice`` (numpy included;
  that import time is printed on its own as ``import``);
* ``warm``: the same call in a warm process with every cache cleared (min and median of ``--reps``);
* ``previous``: the implementation this one replaced (every row of the realized score matrix,
  frexp/ldexp rounding, elementwise differences), run in the same process, and the ratio to it;

then ``analyze()`` of ``(a|b)*a(a|b)(a|b)`` (an LTL[P,Y] language) with its encoding stage, every
dtype at k = 1..5, and the peak RSS of the process. The machine's load moves the absolute figures;
the same-run ratio is the comparable number.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from langclass.core.precision import numerics  # noqa: E402
from langclass.core.precision.encoding_choice import _certified_length_at_offset, conventional_rope_length  # noqa: E402

G, C, DTYPE, MAX_LENGTH = 1.0, 1e7, "float32", 1000


def _clear() -> None:
    conventional_rope_length.cache_clear()
    _certified_length_at_offset.cache_clear()
    numerics._offset_table.cache_clear()


def previous_certified_length(k: int, g: float, C: float, dtype: str, max_length: int) -> int:
    """The replaced implementation, verbatim in its arithmetic (reference for the ratio only)."""
    fmt = numerics.float_format(dtype)

    def fl_(x):
        return numerics._round_generic(np.asarray(x, dtype=np.float64), fmt)

    fl = numerics.f_large(dtype)
    n = max_length + 2
    if max_length < k:
        return max_length
    ph = float(g) * np.arange(n, dtype=np.float64)
    cos_t, sin_t = fl_(np.cos(ph)), fl_(np.sin(ph))
    bq0 = float(fl_(C * math.cos(k * g)))
    bq1 = float(fl_(-C * math.sin(k * g)))
    q0 = fl_(fl_(cos_t * bq0) - fl_(sin_t * bq1))
    q1 = fl_(fl_(sin_t * bq0) + fl_(cos_t * bq1))
    diff_type = np.longdouble if fmt.name == "float64" else np.float64
    block = max(1, 4_000_000 // n)
    for start in range(k + 1, n, block):
        rows = np.arange(start, min(n, start + block))
        S = fl_(fl_(q0[rows, None] * cos_t[None, :]) + fl_(q1[rows, None] * sin_t[None, :]))
        target = S[np.arange(rows.size), rows - k].astype(diff_type)
        gap = target[:, None] - S.astype(diff_type)
        j = np.arange(n)[None, :]
        competing = (j < rows[:, None]) & (j != (rows - k)[:, None])
        ok = np.where(competing, gap >= fl, True).all(axis=1)
        if not ok.all():
            return max(int(rows[np.argmin(ok)]) - 2, k - 1)
    return max_length


def _cold(k: int) -> tuple[float, float]:
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); t0 = time.perf_counter();"
        "import langclass.core.precision.numerics; from langclass.core.precision.encoding_choice import conventional_rope_length;"
        "t1 = time.perf_counter();"
        f"conventional_rope_length({k}, {G}, {C}, {DTYPE!r}, {MAX_LENGTH}); t2 = time.perf_counter();"
        "print(t1 - t0, t2 - t1)"
    )
    out = subprocess.run([sys.executable, "-c", code, ROOT], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def _warm(fn, reps: int) -> tuple[float, float]:
    ts = []
    for _ in range(reps):
        _clear()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20, help="repetitions of each warm measurement")
    args = ap.parse_args(argv)
    print(f"N_max for offsets 1..k, g = {G}, C = {C:g}, {DTYPE}, max_length = {MAX_LENGTH} (ms)")
    print(f"{'k':>3}{'N_max':>7}{'import':>9}{'cold':>8}{'warm min':>10}{'warm med':>10}{'previous':>10}{'ratio':>8}")
    for k in (1, 3, 5, 8):
        _clear()
        res = conventional_rope_length(k, G, C, DTYPE, MAX_LENGTH)
        t_imp, t_cold = _cold(k)
        w_min, w_med = _warm(lambda k=k: conventional_rope_length(k, G, C, DTYPE, MAX_LENGTH), args.reps)
        prev = ""
        ratio = ""
        if k <= 3:  # the previous implementation needs ~0.1-0.5 s per offset
            t0 = time.perf_counter()
            vals = [previous_certified_length(j, G, C, DTYPE, MAX_LENGTH) for j in range(1, k + 1)]
            t_prev = time.perf_counter() - t0
            assert vals == [res["n_max_per_offset"][j] for j in range(1, k + 1)], (vals, res)
            prev, ratio = f"{1e3 * t_prev:10.1f}", f"{t_prev / w_min:7.0f}x"
        print(f"{k:>3}{res['n_max']:>7}{1e3 * t_imp:9.1f}{1e3 * t_cold:8.1f}{1e3 * w_min:10.2f}{1e3 * w_med:10.2f}{prev:>10}{ratio:>8}")

    print("\nevery dtype, offsets 1..5, max_length 1000 (warm, ms)")
    for dtype, c in (("float64", 1e7), ("float32", 1e7), ("bfloat16", 1e7), ("float16", 6e4)):
        w_min, w_med = _warm(lambda d=dtype, c=c: conventional_rope_length(5, G, c, d, MAX_LENGTH), args.reps)
        r = conventional_rope_length(5, G, c, dtype, MAX_LENGTH)
        print(f"  {dtype:<9} C = {c:<6g} N_max = {r['n_max']:<5} min {1e3 * w_min:7.2f}  median {1e3 * w_med:7.2f}")

    from langclass.core.classification.analysis import analyze
    from langclass.core.ingest.regex import regex_to_dfa

    d = regex_to_dfa("(a|b)*a(a|b)(a|b)", ["a", "b"])
    _clear()
    t0 = time.perf_counter()
    r = analyze(d)
    t_all = time.perf_counter() - t0
    soft = r.encodings["soft"]
    print(f"\nanalyze((a|b)*a(a|b)(a|b)): {1e3 * t_all:.1f} ms in all, soft encoding {soft['encoding']} "
          f"(k = {soft['parameters'].get('k')}, N_max = {soft['parameters'].get('n_max')}); stages (ms): {r.timings_ms}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
