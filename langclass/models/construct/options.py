"""The options of a construct spec: the accepted keys and the typed readers of their values.

:func:`langclass.models.construct.verify.run_construction` reads every option through these; an unknown key or
a value out of range is an :class:`~langclass.core.base.errors.InputError` naming ``options.<key>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from langclass.core.base.errors import InputError

_OPTION_KEYS = {"y_mode", "dtype", "attention", "all_words_up_to", "random_words", "random_max_length", "seed", "g", "C_y",
                "C_p", "target_length", "mod_safety", "beyond_n_max", "n_max_cap", "threads", "mask", "by_class",
                "max_parameters", "route", "setting", "crasp_program"}

MAX_VERIFY_WORDS = 3_000_000
"""Most words the exhaustive phase may check (Σ_{L ≤ n} |Σ|^L)."""

MAX_RANDOM_LENGTH = 100_000
"""Longest random word a verification may use."""

SETTINGS = ("fixed", "strict", "causal")
"""Construction settings: ``fixed`` — the fixed-precision constructions (soft attention with a strict
mask, hard attention), also named ``strict`` as in training; ``causal`` — the C-RASP construction,
soft attention with a non-strict causal mask and NoPE read at the last position
(:mod:`langclass.models.construct.verify_causal`)."""


def _options(spec: Mapping) -> dict[str, Any]:
    opts = dict(spec.get("options") or {})
    for key in _OPTION_KEYS:
        if key in spec:
            opts[key] = spec[key]
    unknown = set(opts) - _OPTION_KEYS
    if unknown:
        raise InputError(f"unknown construction option(s) {sorted(unknown)}; expected some of {sorted(_OPTION_KEYS)}",
                         field="options")
    return opts


def _int_opt(opts: Mapping, key: str, default: int | None, lo: int, hi: int) -> int | None:
    v = opts.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise InputError(f"option {key} must be an integer in [{lo}, {hi}], got {v!r}", field=f"options.{key}")
    return v


def _lengths(lo: int, hi: int, count: int) -> list[int]:
    """Up to ``count`` distinct lengths from lo to hi (inclusive), geometrically spaced, always including hi."""
    if hi < lo or count <= 0:
        return []
    if count == 1:
        return [hi]
    xs = np.unique(np.round(np.geomspace(max(lo, 1), hi, count)).astype(int))
    return [int(x) for x in xs if lo <= x <= hi]


def _float_opt(opts: Mapping, key: str, default: float | None) -> float | None:
    v = opts.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise InputError(f"option {key} must be a finite number, got {v!r}", field=f"options.{key}")
    return float(v)


def default_all_words_length(k: int, budget: int = 300_000) -> int:
    """The exhaustive length n: 64 for |Σ| = 1, 12 for |Σ| = 2, else the largest n ≤ 12 with
    Σ_{L≤n} |Σ|^L ≤ budget."""
    if k == 1:
        return 64
    if k == 2:
        return 12
    n, total = 0, 1
    while n < 12 and total + k ** (n + 1) <= budget:
        n += 1
        total += k ** n
    return n


def _count_words(k: int, n: int) -> int:
    """Σ_{L ≤ n} k^L: the words of length at most n over k letters."""
    return sum(k ** L for L in range(n + 1))


def is_causal(spec: Any) -> bool:
    """Whether a construct spec asks for the ``causal`` setting (``setting`` top-level or in ``options``).

    Raises:
        InputError: an unknown setting, or ``crasp_program`` outside the causal setting.
    """
    if not isinstance(spec, Mapping):
        return False
    if isinstance(spec.get("language"), Mapping):
        spec = {**spec["language"], **spec}
    opts = _options(spec)
    setting = opts.get("setting", "fixed")
    if setting is None:
        setting = "fixed"
    if setting not in SETTINGS:
        raise InputError(f"setting must be one of {list(SETTINGS)}, got {setting!r}", field="options.setting")
    if setting != "causal" and "crasp_program" in opts:
        raise InputError("crasp_program is compiled in the causal setting only; add setting='causal'",
                         field="options.crasp_program")
    return setting == "causal"
