"""Certified lengths of the C-RASP construction's comparisons in floating point.

The construction (:mod:`langclass.models.construct.counting_plan`) decides each comparison by the
sign of one uniform-attention channel ``z(i) = ŵ·S`` with ``S = Σ_{j≤i} v(j) = D(i) − ½`` (D an
integer, so ``|S| ≥ ½``) and equal weights ``ŵ`` on the ``n = i + 1`` visible positions; a layer
normalization of ``(z, −z)`` keeps only the sign. In exact arithmetic this is right at every
length (*Counting Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers*,
the compilation theorem); in a floating-point format with unit roundoff ``u = 2^−p`` the computed channel is

    ẑ = fl(Σ_j fl(ŵ·v(j)))     (any summation order),

and the standard error bound of a floating-point sum of products (Higham, *Accuracy and Stability of
Numerical Algorithms*, §3.1 / Eq. 3.5: |error| ≤ γ_n Σ|terms|, γ_n = nu/(1 − nu)) gives

    |ẑ − ŵS| ≤ γ_n · ŵ · Σ_j |v(j)| ≤ γ_n · ŵ · (|v_BOS| + (n − 1)·V),

with ``V`` the bound on |v(j)| at a letter position. The sign of ẑ is that of S whenever this is
< ŵ·|S|, so — ŵ cancels, and a relative error of ŵ itself (all weights of a row are equal, since all
scores are 0) never changes a sign — the channel is certified at n when

    γ_n · (|v_BOS| + (n − 1)·V) < ½.                                            (★)

(★) is monotone in n; the certified word length is the largest N with (★) at n = N + 1 for every
channel. Three further conditions are checked: the value projection is exact (every partial sum of
Σ c_t·P_t + (k − ½)·bos is a multiple of ½ below 2^(p−1)), the rounded z is a normal number
(|z| ≥ 1/(2n) ≥ the smallest normal, also for z² in the normalization) and n·u < 1. The layer
normalization and the ReLU cleanup that follow are exact on signs (a positive rsqrt factor;
``ReLU(2y) − ReLU(2y − 1)`` with Sterbenz-exact subtraction), so they add no condition.

Rounding models (``accumulate``): ``"dtype"`` — every product and sum of the channel in the model's
format (the worst case for bfloat16); ``"float32"`` — values and weights stored in the format but
the weighted sum accumulated in float32 and rounded once at the end (a relative error, which keeps
the sign), as the float32-accumulating matrix kernels of CPUs and GPUs do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from .floats import float_format

__all__ = ["certified_counting_length", "channel_certified_n", "counting_precision_report", "ACCUMULATE"]

ACCUMULATE = ("dtype", "float32")
_CAP = 1 << 40


def _holds(n: int, u: Fraction, bos: Fraction, v: int) -> bool:
    """(★) at n visible positions."""
    if n * u >= 1:
        return False
    gamma = n * u / (1 - n * u)
    return gamma * (abs(bos) + (n - 1) * v) < Fraction(1, 2)


def channel_certified_n(bos_value: Fraction | float, v_letter: int, v_sum: int, dtype: str,
                        accumulate: str = "dtype", cap: int = _CAP) -> int:
    """The largest n (visible positions, BOS included) at which the channel's sign is certified
    (module docstring; 0 when not even n = 1 is, e.g. a value projection that is not exact).

    Args:
        bos_value: k − ½, the channel's value at BOS. v_letter: bound on |v(j)| at a letter.
        v_sum: Σ|c_t| (bounds every partial sum of the value projection together with |bos_value|).
        dtype: the model's format; accumulate: ``"dtype"`` or ``"float32"``; cap: search bound.

    Raises:
        ValueError: unknown ``accumulate``.
    """
    if accumulate not in ACCUMULATE:
        raise ValueError(f"accumulate must be one of {ACCUMULATE}")
    fmt = float_format(dtype)
    bos = Fraction(bos_value)
    # the value projection is exact: partial sums are multiples of 1/2 below 2^(p-1)
    if 2 * (v_sum + abs(bos)) > 2 ** fmt.precision:
        return 0
    acc = fmt if accumulate == "dtype" else float_format("float32")
    if accumulate == "float32" and fmt.precision > acc.precision:
        acc = fmt
    u = Fraction(1, 2 ** acc.precision)
    # |z| ≥ 1/(2n) and z² ≥ 1/(4n²) must stay normal in the model's format
    normal = Fraction(fmt.min_normal)
    if not _holds(1, u, bos, v_letter):
        return 0
    lo, hi = 1, 2
    while hi <= cap and _holds(hi, u, bos, v_letter) and Fraction(1, 4 * hi * hi) >= normal:
        lo, hi = hi, hi * 2
    if hi > cap:
        return cap
    while hi - lo > 1:  # _holds(lo) and not _holds(hi)
        mid = (lo + hi) // 2
        if _holds(mid, u, bos, v_letter) and Fraction(1, 4 * mid * mid) >= normal:
            lo = mid
        else:
            hi = mid
    return lo


def certified_counting_length(channels: Iterable[Mapping[str, Any]], dtype: str, accumulate: str = "dtype") -> int | None:
    """The longest word length N certified for every channel (N = n − 1: BOS is a visible position;
    at least 0, as the empty word reads no channel); None when there is no channel (a program
    without comparisons of counts is exact at every length).

    Args:
        channels: dicts with ``bos_value``, ``v_letter``, ``v_sum``
            (:meth:`~langclass.models.construct.counting_plan.CountingPlan.channel_bounds`).
    """
    ns = [channel_certified_n(c["bos_value"], c["v_letter"], c["v_sum"], dtype, accumulate) for c in channels]
    if not ns:
        return None
    return max(min(ns) - 1, 0)  # the empty word reads no channel (its answer is the BOS bit)


def counting_precision_report(channels: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Certified word lengths for float32, bfloat16 (both rounding models) and float16, the worst
    channel's figures and the rounding model, JSON-ready."""
    chans = list(channels)
    out: dict[str, Any] = {
        "float32": certified_counting_length(chans, "float32"),
        "bfloat16": certified_counting_length(chans, "bfloat16"),
        "bfloat16_float32_accumulation": certified_counting_length(chans, "bfloat16", "float32"),
        "float16": certified_counting_length(chans, "float16"),
        "float16_float32_accumulation": certified_counting_length(chans, "float16", "float32"),
        "float64": certified_counting_length(chans, "float64"),
    }
    if chans:
        worst = max(chans, key=lambda c: (c["v_letter"], abs(Fraction(c["bos_value"]))))
        out["worst_channel"] = {"op": worst["op"], "part": worst["part"], "v_letter": worst["v_letter"],
                                "bos_value": float(worst["bos_value"])}
    out["condition"] = ("γ_n·(|v_BOS| + (n−1)·V) < 1/2 with n = N + 1 visible positions, γ_n = nu/(1−nu) "
                        "(sum of products in any order); the value projection exact; |z| normal")
    return out
