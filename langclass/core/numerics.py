"""Finite-precision facts the expressivity theorems depend on (numpy only, no torch).

A fixed-precision transformer computes in a finite set F of floats (float64, float32, bfloat16 or
float16). Two quantities of *Disentangling the Expressivity of RoPE* are computed here exactly:

* ``f_large(dtype)`` — the smallest positive element x of F such that exp(−x) rounds to 0 in F
  (§2.2, "Finite precision"). Stable softmax (Eq. 2) therefore gives a key whose score trails the
  row maximum by at least ``f_large`` weight exactly 0, and the unique maximum weight exactly 1.
* ``certified_length(k, g, C, dtype, max_length)`` — the certified range N_max^(k)(g, C, F) of a
  fixed-offset head (Eq. 9–10, §4.2 and App. D): the largest L such that, on the *realized*
  (rounded) scores Ŝ_{i,j} of the head with score C·cos(g(i−k−j)), the target j = i−k leads every
  other visible key 0 ≤ j < i by at least f_large for every query k+1 ≤ i ≤ L+1.

Rounding model. ``round_to(x, dtype)`` is IEEE 754 round-to-nearest-even with gradual underflow
(subnormals) and overflow to ±inf, applied *once* to the exact value of ``x`` (float64 input). For
bfloat16 (8 significant bits, float32's exponent range) this equals rounding the float32 bit pattern
to its upper 16 bits with round-to-nearest-even, which is what PyTorch does for float32 → bfloat16.
numpy has no bfloat16, so bfloat16 values are carried in float32 arrays (every bfloat16 value is a
float32 value); float16 values are carried in numpy float16.

Everything here assumes gradual underflow (no flush-to-zero): that is the IEEE default on CPUs and
in PyTorch's CUDA kernels. Under flush-to-zero f_large would be smaller.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .errors import InputError, LimitExceeded

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

DTYPES: tuple[str, ...] = ("float64", "float32", "bfloat16", "float16")
"""The precision regimes F that the project models, by PyTorch name."""

MAX_CERTIFIED_WORK = 200_000_000
"""Cap on the number of (i, j) score pairs :func:`certified_length` may evaluate (≈ max_length²/2)."""


@dataclass(frozen=True)
class FloatFormat:
    """A binary IEEE-style format.

    Attributes:
        name: ``"float64" | "float32" | "bfloat16" | "float16"``.
        precision: significant bits p, the implicit leading bit included (53, 24, 8, 11).
        emin: exponent of the smallest normal number (−1022, −126, −126, −14).
        emax: exponent of the largest finite number (1023, 127, 127, 15).
    """

    name: str
    precision: int
    emin: int
    emax: int

    @property
    def max_finite(self) -> float:
        """(2 − 2^(1−p)) · 2^emax."""
        return math.ldexp(2.0 - math.ldexp(1.0, 1 - self.precision), self.emax)

    @property
    def min_subnormal(self) -> float:
        """2^(emin − p + 1), the smallest positive value."""
        return math.ldexp(1.0, self.emin - self.precision + 1)

    @property
    def min_normal(self) -> float:
        """2^emin."""
        return math.ldexp(1.0, self.emin)

    @property
    def eps(self) -> float:
        """Machine epsilon 2^(1−p) (spacing of the values in [1, 2))."""
        return math.ldexp(1.0, 1 - self.precision)

    def to_dict(self) -> dict:
        return {"name": self.name, "precision": self.precision, "emin": self.emin, "emax": self.emax}


_FORMATS: dict[str, FloatFormat] = {
    "float64": FloatFormat("float64", 53, -1022, 1023),
    "float32": FloatFormat("float32", 24, -126, 127),
    "bfloat16": FloatFormat("bfloat16", 8, -126, 127),
    "float16": FloatFormat("float16", 11, -14, 15),
}

_ALIASES = {"fp64": "float64", "double": "float64", "fp32": "float32", "float": "float32",
            "bf16": "bfloat16", "fp16": "float16", "half": "float16"}

_CARRIERS = {"float64": np.float64, "float32": np.float32, "bfloat16": np.float32, "float16": np.float16}


def float_format(dtype: str) -> FloatFormat:
    """The :class:`FloatFormat` of a dtype name (``"float32"``, also ``"fp32"``, ``"bf16"`` …).

    Raises:
        InputError: unknown dtype name (``field="dtype"``).
    """
    if not isinstance(dtype, str):
        dtype = str(dtype).removeprefix("torch.")
    key = _ALIASES.get(dtype.lower(), dtype.lower())
    try:
        return _FORMATS[key]
    except KeyError:
        raise InputError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}", field="dtype") from None


def carrier_dtype(dtype: str) -> type:
    """The numpy dtype that carries values of ``dtype`` (bfloat16 → float32)."""
    return _CARRIERS[float_format(dtype).name]


def round_to(x, dtype: str) -> np.ndarray:
    """Round ``x`` to the nearest value of the format ``dtype`` (ties to even), once.

    Args:
        x: array-like of real numbers (converted to float64 first; float32/float16 inputs convert
            exactly). NaN and ±inf pass through.
        dtype: ``"float64" | "float32" | "bfloat16" | "float16"``.

    Returns:
        An array of the same shape in the carrier dtype (:func:`carrier_dtype`): float64, float32,
        float32 holding bfloat16 values, float16. Values beyond the largest finite number round to
        ±inf as IEEE 754 prescribes; tiny values round to subnormals or (signed) zero.

    Raises:
        InputError: unknown dtype.

    Example:
        >>> float(round_to(1 + 2**-8, "bfloat16"))   # tie → even
        1.0
        >>> float(round_to(1 + 3 * 2**-9, "bfloat16"))
        1.0078125
    """
    fmt = float_format(dtype)
    a = np.asarray(x, dtype=np.float64)
    if fmt.name == "float64":
        return a.copy()
    out = a.copy()
    finite = np.isfinite(a) & (a != 0)
    if np.any(finite):
        v = a[finite]
        _, e2 = np.frexp(v)  # v = m · 2^e2 with 0.5 ≤ |m| < 1, so floor(log2|v|) = e2 − 1
        exponent = np.maximum(e2 - 1, fmt.emin)
        quantum_exp = exponent - fmt.precision + 1
        with np.errstate(over="ignore"):
            r = np.ldexp(np.round(np.ldexp(v, -quantum_exp)), quantum_exp)  # exact scaling; np.round: ties to even
        r[np.abs(r) > fmt.max_finite] = np.inf * np.sign(r[np.abs(r) > fmt.max_finite])
        # keep the sign of values that round to zero (IEEE signed zero)
        zero = r == 0
        r[zero] = np.copysign(0.0, v[zero])
        out[finite] = r
    return out.astype(_CARRIERS[fmt.name])


def next_up(x: float, dtype: str) -> float:
    """The smallest value of ``dtype`` strictly greater than the ``dtype`` value ``x`` (x finite, x ≥ 0)."""
    fmt = float_format(dtype)
    x = float(x)
    if x < 0 or not math.isfinite(x):
        raise InputError("next_up expects a finite non-negative value", field="x")
    if x == 0:
        return fmt.min_subnormal
    _, e2 = math.frexp(x)
    exponent = max(e2 - 1, fmt.emin)
    return x + math.ldexp(1.0, exponent - fmt.precision + 1)


def _ln2_times(n: int) -> decimal.Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return decimal.Decimal(2).ln() * n


def f_large(dtype: str) -> float:
    """The smallest positive x in F with exp(−x) rounding to 0 in F.

    With round-to-nearest-even and gradual underflow, exp(−x) rounds to 0 exactly when it lies below
    half the smallest subnormal 2^(emin−p+1), i.e. when x > (p − emin)·ln 2. ``f_large`` is the
    first value of F above that threshold (the threshold itself is irrational, so it is never a tie):

    ========  =============================  ===================
    dtype     threshold                      f_large
    ========  =============================  ===================
    float64   1075 ln 2 ≈ 745.1332191        745.1332191019412
    float32   150 ln 2 ≈ 103.9720771         103.97208 (float32)
    bfloat16  134 ln 2 ≈ 92.8817222          93.0
    float16   25 ln 2 ≈ 17.3286795           17.34375
    ========  =============================  ===================

    Source: *Disentangling the Expressivity of RoPE*, §2.2 ("Finite precision"): a score margin of
    at least f_large makes stable softmax (Eq. 2) an exact hard selection.

    Args:
        dtype: ``"float64" | "float32" | "bfloat16" | "float16"`` (aliases ``fp32``, ``bf16`` …).

    Returns:
        f_large as a Python float (a value of ``dtype``).

    Raises:
        InputError: unknown dtype.
    """
    fmt = float_format(dtype)
    threshold = _ln2_times(fmt.precision - fmt.emin)
    x = float(round_to(float(threshold), fmt.name))
    while decimal.Decimal(x) <= threshold:
        x = next_up(x, fmt.name)
    # the previous value of F must lie at or below the threshold (minimality)
    return x


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
    fl = f_large(dtype)
    n = max_length + 2
    work = n * (n - 1) // 2
    if work > MAX_CERTIFIED_WORK:
        raise LimitExceeded("certified_length_work", MAX_CERTIFIED_WORK,
                            f"certified_length with max_length={max_length} needs {work} score pairs "
                            f"(> {MAX_CERTIFIED_WORK}); lower max_length")
    if max_length < k:
        return int(max_length)
    cos_t, sin_t = rotation_table(g, np.arange(n), dtype, phase)
    q0, q1 = _query_vector(k, g, C, cos_t, sin_t, dtype)
    kc = cos_t.astype(np.float64)
    ks = sin_t.astype(np.float64)
    diff_type = np.longdouble if float_format(dtype).name == "float64" else np.float64
    # rows in blocks to bound memory: i in [k+1, L+1]
    block = max(1, 4_000_000 // n)
    for start in range(k + 1, n, block):
        rows = np.arange(start, min(n, start + block))
        Srow = _fl(_fl(q0[rows, None] * kc[None, :], dtype) + _fl(q1[rows, None] * ks[None, :], dtype), dtype)
        target = Srow[np.arange(rows.size), rows - k].astype(diff_type)
        gap = target[:, None] - Srow.astype(diff_type)
        j = np.arange(n)[None, :]
        competing = (j < rows[:, None]) & (j != (rows - k)[:, None])
        ok = np.where(competing, gap >= fl, True).all(axis=1)
        if not ok.all():
            first_bad = int(rows[np.argmin(ok)])
            return max(first_bad - 2, k - 1)
    return int(max_length)
