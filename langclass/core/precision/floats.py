"""Floating-point formats and rounding, numpy only (no torch): the precision regimes F that the
expressivity theorems depend on, and f_large.

A fixed-precision transformer computes in a finite set F of floats (float64, float32, bfloat16 or
float16). ``f_large(dtype)`` is the smallest positive element x of F such that exp(−x) rounds to 0
in F (*Disentangling the Expressivity of RoPE*, §2.2, "Finite precision"): stable softmax (Eq. 2)
gives a key whose score trails the row maximum by at least ``f_large`` weight exactly 0, and the
unique maximum weight exactly 1.

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
from functools import lru_cache

import numpy as np

from langclass.core.base.errors import InputError

__all__ = ["DTYPES", "FloatFormat", "float_format", "carrier_dtype", "round_to", "next_up", "f_large"]

DTYPES: tuple[str, ...] = ("float64", "float32", "bfloat16", "float16")
"""The precision regimes F that the project models, by PyTorch name."""


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
    if fmt.name in ("float32", "float16"):
        # numpy's float64 → float32/float16 casts round once to nearest-even with subnormals and
        # overflow to ±inf (tests compare them with _round_generic on every float16 midpoint)
        with np.errstate(over="ignore"):
            return a.astype(_CARRIERS[fmt.name])
    return _round_bfloat16(a)


_BF16_DROP = np.uint64(45)  # 53 − 8 significand bits dropped
_BF16_HALF = np.uint64((1 << 44) - 1)
_BF16_MASK = np.uint64(~((1 << 45) - 1) & 0xFFFFFFFFFFFFFFFF)


def _round_bfloat16(a: np.ndarray) -> np.ndarray:
    """float64 → bfloat16 (carried in float32): nearest-even on the float64 bits where the result
    is a normal bfloat16 or zero, :func:`_round_generic` for subnormal, non-finite and overflowing values."""
    fmt = _FORMATS["bfloat16"]
    mag = np.abs(a)
    normal = (mag >= fmt.min_normal) & (mag <= fmt.max_finite)
    bits = a.view(np.uint64)
    lsb = (bits >> _BF16_DROP) & np.uint64(1)
    r = ((bits + _BF16_HALF + lsb) & _BF16_MASK).view(np.float64)
    out = np.where(normal | (a == 0), r, 0.0)
    over = normal & (np.abs(r) > fmt.max_finite)
    if over.any():
        out[over] = np.copysign(np.inf, a[over])
    rest = ~(normal | (a == 0))
    if rest.any():
        out[rest] = _round_generic(a[rest], fmt)
    return out.astype(np.float32)


def _round_generic(a: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Round float64 values to ``fmt`` with frexp/ldexp arithmetic (any format; float64 result)."""
    a = np.asarray(a, dtype=np.float64)
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
    return out


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
    return _f_large(float_format(dtype).name)


@lru_cache(maxsize=None)
def _f_large(name: str) -> float:
    fmt = _FORMATS[name]
    threshold = _ln2_times(fmt.precision - fmt.emin)
    x = float(round_to(float(threshold), fmt.name))
    while decimal.Decimal(x) <= threshold:
        x = next_up(x, fmt.name)
    # the previous value of F must lie at or below the threshold (minimality)
    return x
