"""Certified ranges of fixed-offset RoPE heads in finite precision (numpy only, no torch).

``certified_length(k, g, C, dtype, max_length)`` is the certified range N_max^(k)(g, C, F) of a
fixed-offset head (*Disentangling the Expressivity of RoPE*, Eq. 9–10, §4.2 and App. D): the
largest L such that, on the *realized* (rounded) scores Ŝ_{i,j} of the head with score
C·cos(g(i−k−j)), the target j = i−k leads every other visible key 0 ≤ j < i by at least f_large
for every query k+1 ≤ i ≤ L+1. The float formats, the rounding model and ``f_large`` itself live in
:mod:`langclass.core.precision.floats` (re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from langclass.core.base.errors import InputError, LimitExceeded
from .floats import (  # re-exported: the formats the certified ranges are computed in
    DTYPES,
    FloatFormat,
    _round_bfloat16,
    carrier_dtype,
    f_large,
    float_format,
    next_up,
    round_to,
)

__all__ = [
    "DTYPES",
    "FloatFormat",
    "float_format",
    "carrier_dtype",
    "round_to",
    "next_up",
    "f_large",
    "delta_L",
    "ideal_certified_length",
    "rotation_table",
    "realized_offset_scores",
    "certified_length",
    "MAX_CERTIFIED_WORK",
]

MAX_CERTIFIED_WORK = 200_000_000
"""Cap on the number of (i, j) score pairs :func:`certified_length` may evaluate (≈ max_length²/2)."""


def _check_offset_args(k: int, g: float, C: float, max_length: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"offset k must be an integer ≥ 1, got {k!r}", field="k")
    if not isinstance(g, (int, float, np.floating)) or not math.isfinite(float(g)):
        raise InputError(f"angle g must be a finite real number, got {g!r}", field="g")
    if not isinstance(C, (int, float, np.floating)) or not math.isfinite(float(C)) or float(C) <= 0:
        raise InputError(f"scale C must be a finite positive number, got {C!r}", field="C")
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) or max_length < 0:
        raise InputError(f"max_length must be an integer ≥ 0, got {max_length!r}", field="max_length")


def delta_L(g: float, L: int) -> float:
    """δ_L(g) = 1 − max_{1≤n≤L} cos(g n), evaluated in float64 (ideal arithmetic up to float64).

    Source: *Disentangling the Expressivity of RoPE*, §4.2: under exact evaluation of Eq. 9 the
    target leads every other key by at least C·δ_L(g), so C·δ_L(g) ≥ f_large certifies
    N_max^(k) ≥ L. Returns ``inf`` for L = 0 (no competing offset).
    """
    if L <= 0:
        return math.inf
    n = np.arange(1, L + 1, dtype=np.float64)
    return float(1.0 - np.max(np.cos(float(g) * n)))


def ideal_certified_length(g: float, C: float, dtype: str, max_length: int) -> int:
    """The largest L ≤ ``max_length`` with C·δ_L(g) ≥ f_large(dtype) (the exact-arithmetic bound of §4.2).

    This ignores the rounding of the scores themselves; :func:`certified_length` evaluates Eq. 10 on
    the realized scores. Returns 0 when even L = 1 fails.
    """
    _check_offset_args(1, g, C, max_length)
    if max_length == 0:
        return 0
    fl = f_large(dtype)
    n = np.arange(1, max_length + 1, dtype=np.float64)
    gaps = float(C) * (1.0 - np.maximum.accumulate(np.cos(float(g) * n)))  # C·δ_L for L = 1..max
    bad = np.nonzero(gaps < fl)[0]
    return int(max_length if bad.size == 0 else bad[0])


PhaseMode = Literal["ideal", "float32"]


def rotation_table(g: float, positions: np.ndarray, dtype: str, phase: PhaseMode = "ideal") -> tuple[np.ndarray, np.ndarray]:
    """Realized cos/sin entries round_F(cos(g n)), round_F(sin(g n)) of Rot_{g,n} for integer positions n.

    Args:
        g: angle in radians per position.
        positions: integer array ``[N]`` of positions n ≥ 0.
        dtype: the format F the entries are stored in.
        phase: ``"ideal"`` — the phase g·n is formed in float64 and cos/sin are rounded to F once
            ("output-rounded ideal-phase evaluation", *Disentangling the Expressivity of RoPE*,
            Prop. 4.1); ``"float32"`` — the phase is formed as float32(float32(g)·n), as the
            conventional ``rope`` encoding of this project does, then cos/sin are rounded to F.

    Returns:
        ``(cos, sin)``, each ``[N]`` in the carrier dtype of F.
    """
    n = np.asarray(positions, dtype=np.int64)
    if phase == "ideal":
        ph = float(g) * n.astype(np.float64)
    elif phase == "float32":
        ph = (np.float32(g) * n.astype(np.float32)).astype(np.float64)
    else:
        raise InputError(f"unknown phase mode {phase!r}; expected 'ideal' or 'float32'", field="phase")
    return round_to(np.cos(ph), dtype), round_to(np.sin(ph), dtype)


def _fl(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round to F and return float64 (exact) for further exact-then-round operations."""
    return round_to(x, dtype).astype(np.float64)


def _query_vector(k: int, g: float, C: float, cos_i: np.ndarray, sin_i: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Realized rotated query R̂_i b_q for b_q = round_F(C(cos kg, −sin kg)); each product and sum rounded."""
    bq0 = float(_fl(np.float64(C) * math.cos(k * float(g)), dtype))
    bq1 = float(_fl(-np.float64(C) * math.sin(k * float(g)), dtype))
    c = cos_i.astype(np.float64)
    s = sin_i.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an infinite bias gives inf/NaN entries, as F would
        q0 = _fl(_fl(c * bq0, dtype) - _fl(s * bq1, dtype), dtype)
        q1 = _fl(_fl(s * bq0, dtype) + _fl(c * bq1, dtype), dtype)
    return q0, q1


def realized_offset_scores(k: int, g: float, C: float, dtype: str, length: int, phase: PhaseMode = "ideal") -> np.ndarray:
    """Realized scores Ŝ^{g,C,k,F}_{i,j} of the fixed-offset head of App. D, for 0 ≤ j < i ≤ length + 1.

    The head (proof of Cor. 4.1 in *Disentangling the Expressivity of RoPE*) uses one rotary pair
    with query bias C(cos kg, −sin kg) and key bias (1, 0); Q = K = 0 elsewhere. Realized
    arithmetic in F: the biases are stored in F; the rotation entries come from
    :func:`rotation_table`; the rotated query is (round(round(c·b0) − round(s·b1)),
    round(round(s·b0) + round(c·b1))); the rotated key is (ĉ_j, ŝ_j) exactly; the score is
    round(round(q0·ĉ_j) + round(q1·ŝ_j)) (no fused multiply-add). In exact arithmetic this is
    C·cos(g(i−k−j)) (Eq. 9). With ``phase="float32"`` the rotation entries are bit-identical to the
    project's ``rope`` encoding (``RoPE(angles=[g])``); a BLAS matmul may fuse the final
    multiply-add, so the torch model's scores can differ from these by an ulp or two of C (the
    tests check that the certified range agrees on such a head).

    Args:
        k, g, C: offset (≥ 1), angle in radians, scale (> 0).
        dtype: the format F.
        length: the string length L; positions run 0 (BOS) … L + 1 (EOS).
        phase: see :func:`rotation_table`.

    Returns:
        float64 array ``[L+2, L+2]`` with Ŝ_{i,j} for j < i and NaN on and above the diagonal.

    Raises:
        InputError: bad arguments.
    """
    _check_offset_args(k, g, C, length)
    n = length + 2
    cos_t, sin_t = rotation_table(g, np.arange(n), dtype, phase)
    q0, q1 = _query_vector(k, g, C, cos_t, sin_t, dtype)
    kc = cos_t.astype(np.float64)
    ks = sin_t.astype(np.float64)
    S = _fl(_fl(q0[:, None] * kc[None, :], dtype) + _fl(q1[:, None] * ks[None, :], dtype), dtype)
    S[np.triu_indices(n)] = np.nan
    return S


def certified_length(k: int, g: float, C: float, dtype: str, max_length: int, *, phase: PhaseMode = "ideal") -> int:
    """N_max^(k)(g, C, F) of *Disentangling the Expressivity of RoPE*, Eq. 10, on realized scores, capped at ``max_length``.

    N_max^(k) = sup{L : Ŝ_{i,i−k} − Ŝ_{i,j} ≥ f_large for all k+1 ≤ i ≤ L+1, 0 ≤ j < i, j ≠ i−k}
    with Ŝ from :func:`realized_offset_scores` (the App. D head). The condition is a ∀ over a set
    that grows with L, so N_max is (first failing query position) − 2; lengths L < k are vacuously
    certified, so the result is ≥ k − 1 when max_length allows. Differences of two realized scores
    are formed exactly for float32/bfloat16/float16 (in float64) and in float64 for float64.

    Up to the returned L, stable softmax puts weight exactly 1 on j = i − k at every query
    k+1 ≤ i ≤ L+1 (Cor. 4.1 (i)); at L + 1 (when below ``max_length``) some key comes within
    f_large of the target.

    Args:
        k: the offset (≥ 1).
        g: the rotation angle in radians per position (irrational g/2π in the theory).
        C: the score scale (> 0).
        dtype: ``"float64" | "float32" | "bfloat16" | "float16"``.
        max_length: the largest L examined; the result is min(N_max, max_length).
        phase: ``"ideal"`` (default) or ``"float32"``, see :func:`rotation_table`.

    Returns:
        The certified range as an int in [min(k−1, max_length), max_length].

    Raises:
        InputError: k < 1, non-finite g, C ≤ 0, negative max_length, unknown dtype or phase.
        LimitExceeded: ``limit="certified_length_work"`` when about max_length²/2 score pairs exceed
            :data:`MAX_CERTIFIED_WORK`.

    Example:
        >>> certified_length(1, 1.0, 1e4, "float32", 200) < 200
        True
    """
    _check_offset_args(k, g, C, max_length)
    fmt = float_format(dtype)
    fl = f_large(fmt.name)
    n = max_length + 2
    work = n * (n - 1) // 2
    if work > MAX_CERTIFIED_WORK:
        raise LimitExceeded("certified_length_work", MAX_CERTIFIED_WORK,
                            f"certified_length with max_length={max_length} needs {work} score pairs "
                            f"(> {MAX_CERTIFIED_WORK}); lower max_length")
    if max_length < k:
        return int(max_length)
    table = _offset_table(float(g), n, fmt.name, phase)
    first_bad = _first_failing_query(k, g, C, fmt, fl, table)
    return int(max_length) if first_bad is None else max(first_bad - 2, k - 1)


# ----------------------------------------------------------------------------- the N_max scan
# Scores are formed in a "work" numpy type whose own IEEE arithmetic reproduces the rounding model of
# realized_offset_scores (each product and the sum rounded once to F) exactly:
#   float64  — float64 arithmetic is F itself;
#   float32  — float32 arithmetic is correctly rounded; the reference rounds the exact float64
#              product (exact: 48 ≤ 53 bits) and the float64 sum of two float32 values, and rounding
#              a sum first to 53 and then to 24 bits equals rounding it once to 24 (double rounding is
#              innocuous for + when 53 ≥ 2·24 + 1: Figueroa, "When is double rounding innocuous?", 1995);
#   float16  — float32 arithmetic: the product of two float16 values is exact in float32 (22 ≤ 24
#              bits, exponents far inside float32's range) and is then cast to float16 once; the sum is
#              rounded to float32 and then to float16, innocuous because 24 ≥ 2·11 + 1;
#   bfloat16 — float32 arithmetic followed by round-to-nearest-even on the upper 16 bits, valid while
#              every product stays a normal float32 (checked; otherwise float64 + round_to).
# tests/test_numerics.py checks the scan against the literal Eq. 10 on realized_offset_scores.
_BLOCK_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class _OffsetTable:
    """Keys of the App. D head for positions 0..n−1, shared by all offsets k (read-only arrays).

    ``kc``/``ks``: realized key entries (float64); ``angle_sorted``: their polar angles, sorted and
    repeated at −2π, 0, +2π so a window of width < 2π around any angle in [−π, π] is one slice;
    ``order``: the key index of each entry of ``angle_sorted``; ``norm_max``: the largest key norm.
    """

    cos_t: np.ndarray
    sin_t: np.ndarray
    kc: np.ndarray
    ks: np.ndarray
    angle_sorted: np.ndarray
    order: np.ndarray
    norm_max: float


@lru_cache(maxsize=32)
def _offset_table(g: float, n: int, dtype: str, phase: PhaseMode) -> _OffsetTable:
    cos_t, sin_t = rotation_table(g, np.arange(n), dtype, phase)
    kc, ks = cos_t.astype(np.float64), sin_t.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ang = np.arctan2(ks, kc)
    order = np.argsort(ang, kind="stable")
    sorted_ang = ang[order]
    angle_sorted = np.concatenate([sorted_ang - 2 * math.pi, sorted_ang, sorted_ang + 2 * math.pi])
    order3 = np.concatenate([order, order, order])
    norm_max = float(np.max(np.hypot(kc, ks))) if n else 0.0
    for arr in (cos_t, sin_t, kc, ks, angle_sorted, order3):
        arr.flags.writeable = False
    return _OffsetTable(cos_t, sin_t, kc, ks, angle_sorted, order3, norm_max)


class _Arithmetic:
    """Realized scores round(round(q0·kc) + round(q1·ks)) in F, for broadcastable operands in the work type."""

    def __init__(self, name: str, q0: np.ndarray, q1: np.ndarray, kc: np.ndarray, ks: np.ndarray) -> None:
        if name == "float64":
            self.work, self.cast = np.float64, None
        elif name == "float32":
            self.work, self.cast = np.float32, None
        elif name == "float16":
            self.work, self.cast = np.float32, _to_float16_in_float32
        elif _bf16_products_stay_normal(q0, q1, kc, ks):
            self.work, self.cast = np.float32, _to_bfloat16_in_float32
        else:
            self.work, self.cast = np.float64, _round_bf16_exact
        self.diff = np.longdouble if name == "float64" else np.float64  # differences as the reference forms them

    def scores(self, q0: np.ndarray, q1: np.ndarray, kc: np.ndarray, ks: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            a = q0 * kc
            b = q1 * ks
            if self.cast is None:
                return a + b
            return self.cast(self.cast(a) + self.cast(b))


def _first_failing_query(k: int, g: float, C: float, fmt: FloatFormat, fl: float, table: _OffsetTable) -> int | None:
    """The least query position i ≥ k + 1 at which Eq. 10 fails (None when none does up to n − 1).

    For every row the smallest gap Ŝ_{i,i−k} − Ŝ_{i,j} over the competitors is the gap to the
    largest competitor (subtraction is monotone under rounding), so one row maximum replaces the row
    of differences. The sparse scan scores only the keys that an error bound cannot rule out; when
    it does not apply the dense scan scores rows in blocks and stops at the first failing block.
    """
    q0, q1 = _query_vector(k, g, C, table.cos_t, table.sin_t, fmt.name)
    ar = _Arithmetic(fmt.name, q0, q1, table.kc, table.ks)
    sparse = _sparse_scan(k, fmt, fl, q0, q1, table, ar)
    if sparse is not None:
        return sparse[0]
    return _dense_scan(k, fl, q0, q1, table, ar)


def _sparse_scan(k: int, fmt: FloatFormat, fl: float, q0: np.ndarray, q1: np.ndarray, table: _OffsetTable,
                 ar: _Arithmetic) -> tuple[int | None] | None:
    """Eq. 10 over all rows, scoring only candidate keys; ``None`` when the filter does not apply.

    Bound: with u = 2^−p and η half the smallest subnormal of F, each realized score satisfies
    |Ŝ_{i,j} − T_{i,j}| ≤ E_i = (2u + u²)(|q0_i| + |q1_i|)·max_j max(|ĉ_j|, |ŝ_j|) + 4η, where
    T_{i,j} = q_i · key_j = |q_i||key_j| cos(α_i − κ_j) is the exact dot product of the realized
    rotated query and key (α, κ their polar angles). A competitor j can only break Eq. 10 when
    Ŝ_{i,j} > Ŝ_{i,i−k} − f_large, hence when T_{i,j} > thr_i = Ŝ_{i,i−k} − f_large − E_i, which
    (for thr_i > 0) needs cos(α_i − κ_j) > ρ_i = thr_i / (|q_i| max_j |key_j|). Those keys lie in an
    angular window found by binary search in the sorted key angles; E_i is doubled and the window
    widened by 1e−9 rad to absorb the float64 evaluation of the bound itself.
    """
    n = table.kc.shape[0]
    rows = np.arange(k + 1, n)
    if rows.size == 0:
        return (None,)
    qa, qb = q0[rows], q1[rows]
    if not (np.isfinite(q0).all() and np.isfinite(q1).all() and np.isfinite(table.kc).all() and np.isfinite(table.ks).all()):
        return None
    qabs = np.abs(qa) + np.abs(qb)
    k_inf = max(float(np.max(np.abs(table.kc))), float(np.max(np.abs(table.ks))))
    if float(np.max(np.abs(q0) + np.abs(q1))) * k_inf * 4 >= fmt.max_finite:
        return None  # products or sums could overflow: leave inf/NaN handling to the dense scan
    u = 2.0 ** -fmt.precision
    err = 2.0 * ((2 * u + u * u) * qabs * k_inf + 4 * (fmt.min_subnormal / 2))
    w = ar.work
    target = ar.scores(qa.astype(w), qb.astype(w), table.kc[rows - k].astype(w), table.ks[rows - k].astype(w))
    t64 = target.astype(np.float64)
    thr = t64 - fl - err - 1e-9 * np.abs(t64)
    qn = np.hypot(qa, qb)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = thr / (qn * table.norm_max * (1 + 1e-12))
    if not np.all(rho > 0.9):
        return None  # the window would hold a large share of the keys
    half = np.arccos(np.minimum(rho * (1 - 1e-12), 1.0)) + 1e-9
    limit = max(8 * n, 1 << 15)
    if n * float(np.sum(half)) / math.pi > 2 * limit:  # about the window's share of the keys, before searching
        return None
    alpha = np.arctan2(qb, qa)
    lo = np.searchsorted(table.angle_sorted, alpha - half, side="left")
    hi = np.searchsorted(table.angle_sorted, alpha + half, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total > limit:
        return None
    ri = np.repeat(rows, counts)
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    j = table.order[np.arange(total) + starts]
    keep = (j < ri) & (j != ri - k)
    ri, j = ri[keep], j[keep]
    best = np.full(n, -np.inf, dtype=w)
    if ri.size:
        s = ar.scores(q0[ri].astype(w), q1[ri].astype(w), table.kc[j].astype(w), table.ks[j].astype(w))
        np.maximum.at(best, ri, s)
    ok = (target.astype(ar.diff) - best[rows].astype(ar.diff)) >= ar.diff(fl)
    bad = np.flatnonzero(~ok)
    return (int(rows[bad[0]]) if bad.size else None,)


def _dense_scan(k: int, fl: float, q0: np.ndarray, q1: np.ndarray, table: _OffsetTable, ar: _Arithmetic) -> int | None:
    """Eq. 10 row block by row block (about 2^16 pairs each, only keys j < i), stopping at the first
    failing block: about (N_max + 2)²/2 pairs. NaN scores make their row fail, as in the
    elementwise form."""
    n = table.kc.shape[0]
    w = ar.work
    q0w, q1w, kcw, ksw = (a.astype(w) for a in (q0, q1, table.kc, table.ks))
    fl_d = ar.diff(fl)
    start = k + 1
    budget = 1 << 12
    while start < n:
        # B rows × (start + B − 1) keys ≈ `budget` pairs; small first blocks keep early failures cheap
        rows_in_block = int((math.isqrt(start * start + 4 * budget) - start) // 2)
        budget = min(_BLOCK_ELEMENTS, 2 * budget)
        rows_in_block = max(1, min(n - start, rows_in_block))
        stop = start + rows_in_block
        cols = stop - 1  # keys 0 .. stop − 2 are visible to some row of the block
        S = ar.scores(q0w[start:stop, None], q1w[start:stop, None], kcw[None, :cols], ksw[None, :cols])  # [rows, cols]
        r = np.arange(rows_in_block)
        tcol = r + start - k
        target = S[r, tcol].astype(ar.diff)
        S[r, tcol] = -np.inf
        if rows_in_block > 1:  # keys j ≥ i of the block's own rows are not visible
            np.putmask(S[:, start:cols], r[None, : rows_in_block - 1] >= r[:, None], -np.inf)
        best = S.max(axis=1).astype(ar.diff)
        with np.errstate(invalid="ignore"):
            ok = (target - best) >= fl_d
        if not ok.all():
            return int(start + int(np.argmin(ok)))
        start = stop
    return None


def _to_float16_in_float32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to float16 once (IEEE cast) and carry them in float32 again."""
    with np.errstate(over="ignore"):
        return x.astype(np.float16).astype(np.float32)


def _to_bfloat16_in_float32(x: np.ndarray) -> np.ndarray:
    """Round finite float32 values to bfloat16 (nearest, ties to even, on the upper 16 bits), in place."""
    bits = x.view(np.uint32)
    lsb = bits >> np.uint32(16)
    lsb &= np.uint32(1)
    lsb += np.uint32(0x7FFF)
    bits += lsb
    bits &= np.uint32(0xFFFF0000)
    return x


def _round_bf16_exact(x: np.ndarray) -> np.ndarray:
    return _round_bfloat16(np.asarray(x, dtype=np.float64)).astype(np.float64)


def _bf16_products_stay_normal(q0: np.ndarray, q1: np.ndarray, kc: np.ndarray, ks: np.ndarray) -> bool:
    """True when every product of a query entry and a key entry is 0 or a finite normal float32
    whose sums cannot overflow, so that float32 arithmetic + one rounding to bfloat16 is exact."""
    q = np.abs(np.concatenate([q0, q1]))
    kk = np.abs(np.concatenate([kc, ks]))
    if not (np.isfinite(q).all() and np.isfinite(kk).all()):
        return False
    qn, kn = q[q > 0], kk[kk > 0]
    if qn.size == 0 or kn.size == 0:
        return True
    return float(qn.min()) * float(kn.min()) >= 2.0 ** -100 and float(qn.max()) * float(kn.max()) < 2.0 ** 120
