"""The interface every positional encoding implements, its helpers, and the registry of families.

:class:`PositionalEncoding` (see :mod:`langclass.models.nn.encodings` for the families and the
interface), the exact-table helpers (:func:`exact_cos_sin`, :func:`rotate_pairs`), manifests
(:func:`canonical_json`, :func:`digest_of`) and :data:`ENCODING_FAMILIES`, which
:mod:`langclass.models.nn.encodings` fills with the built-in families and other modules (e.g.
:mod:`langclass.models.nn.pj`) extend through :func:`register_family` — so a family module imports
this base, never the catalogue that imports it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from langclass.core.precision.encoding_families import EncodingFamily
from langclass.core.base.errors import InputError

__all__ = [
    "SCHEMA",
    "PAIR_LAYOUTS",
    "COMPUTE_DTYPES",
    "PositionalEncoding",
    "ENCODING_FAMILIES",
    "register_family",
    "canonical_json",
    "digest_of",
    "exact_cos_sin",
    "rotate_pairs",
]

SCHEMA = "langclass.encoding/1"
PAIR_LAYOUTS = ("interleaved", "half_split")
COMPUTE_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def canonical_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8, no NaN/inf."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def digest_of(manifest: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of ``canonical_json(manifest)``."""
    return hashlib.sha256(canonical_json(manifest).encode("utf-8")).hexdigest()


def exact_cos_sin(steps: int, period: int) -> tuple[float, float]:
    """cos and sin of 2π·steps/period, correctly rounded to float64 (exact 0/±1 at quarter turns).

    Used to fill the tables of Eq. 7 with round_F of the *ideal* rotation (so e.g. sin π is 0, not
    1.2e−16).
    """
    t = steps % period
    if (4 * t) % period == 0:
        quarter = (4 * t) // period
        return [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][quarter]
    import mpmath

    with mpmath.workdps(40):
        ang = 2 * mpmath.pi * t / period
        return float(mpmath.cos(ang)), float(mpmath.sin(ang))


def _err(msg: str, key: str) -> InputError:
    return InputError(msg, field=f"encoding.{key}")


def _as_int(value: Any, key: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _err(f"{key} must be an integer, got {value!r}", key)
    if minimum is not None and value < minimum:
        raise _err(f"{key} must be ≥ {minimum}, got {value}", key)
    return int(value)


def _as_float(value: Any, key: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(float(value)):
        raise _err(f"{key} must be a finite number, got {value!r}", key)
    if positive and float(value) <= 0:
        raise _err(f"{key} must be > 0, got {value}", key)
    return float(value)


def _check_positions(positions: torch.Tensor) -> None:
    if not isinstance(positions, torch.Tensor) or positions.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError("position ids must be an integer tensor (never floats): "
                        f"got {getattr(positions, 'dtype', type(positions))}")


class PositionalEncoding(nn.Module):
    """Base class: the identity encoding with the common interface (see module docstring).

    Attributes:
        family: the family name used by :func:`make_encoding`.
        position_origin: the integer position of BOS (sequence index 0).
        compute_dtype: ``"float32"`` or ``"float64"`` — dtype of phases/tables.
    """

    family: ClassVar[str] = "base"
    kind: ClassVar[str] = "none"  # none | absolute | rotary | bias | rotary_bias (recency heads with periodic RoPE)

    def __init__(self, position_origin: int = 0, compute_dtype: str = "float32") -> None:
        super().__init__()
        self.position_origin = _as_int(position_origin, "position_origin", 0)
        if compute_dtype not in COMPUTE_DTYPES:
            raise _err(f"compute_dtype must be one of {sorted(COMPUTE_DTYPES)}, got {compute_dtype!r}", "compute_dtype")
        self.compute_dtype = compute_dtype

    def _apply(self, fn, recurse=True):  # noqa: D401 - nn.Module hook
        """Move buffers and parameters with ``.to(device)`` but never change their dtype:
        ``model.to(torch.bfloat16)`` or ``model.half()`` leave the tables, frequencies and learnable
        kernel parameters in the compute dtype (phases stay float32).

        Why an ``_apply`` override and not a public mechanism: torch has no public hook that exempts a
        module's tensors from a dtype cast while still moving them between devices, and the cast cannot
        be refused per tensor without also changing what ``Tensor.to``/``.double()`` do inside
        ``forward`` (pj.py computes kernels in float64 from float32 parameters). torch's own
        ``nn.RNNBase`` overrides ``_apply`` for the same reason (re-flattening its weights after a
        move). The contract is pinned by tests/test_pj.py and tests/test_encodings.py (device moves,
        ``.to(torch.bfloat16)`` keeps the compute dtype)."""
        for key, buf in self._buffers.items():
            if buf is not None:
                moved = fn(buf)
                self._buffers[key] = buf.to(moved.device) if moved.dtype != buf.dtype else moved
        for param in self._parameters.values():  # learnable encodings (pj_bias): move, keep the compute dtype
            if param is not None:
                moved = fn(param.data)
                param.data = param.data.to(moved.device) if moved.dtype != param.dtype else moved
                if param.grad is not None:
                    param.grad = param.grad.to(param.data.device)
        for child in self.children():
            child._apply(fn)
        return self

    # -- positions -------------------------------------------------------------------------
    def position_ids(self, seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Integer positions ``int64 [1, seq_len]``: index + position_origin (BOS at the origin)."""
        return (torch.arange(seq_len, device=device, dtype=torch.long) + self.position_origin).unsqueeze(0)

    # -- hooks -----------------------------------------------------------------------------
    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Add an absolute encoding to ``x [batch, seq, d_model]``; identity here."""
        return x

    def rotate(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate ``q, k [batch, heads, seq, d_head]`` by position; identity here. V is never passed."""
        return q, k

    def score_bias(self, positions: torch.Tensor) -> torch.Tensor | None:
        """Additive score bias ``[batch, heads, seq, seq]`` (float32) or None."""
        return None

    def for_layer(self, layer: int) -> "PositionalEncoding":
        """The encoding attention layer ``layer`` uses: this module itself (one encoding shared by
        every layer) unless a family keeps one set of parameters per layer (``pj_bias`` with
        ``layers`` > 1)."""
        return self

    def score_bias_block(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor | None:
        """The score bias between ``t_q`` query positions and ``t_k`` key positions,
        ``[batch, heads, t_q, t_k]``, for incremental evaluation (the queries are the last ``t_q``
        keys). This default slices :meth:`score_bias` of the key positions (O(t_k²) memory); bias
        families override it with an O(t_q·t_k) formula.

        Args:
            q_positions: ``int64 [batch or 1, t_q]``; k_positions: ``int64 [batch or 1, t_k]``.
        """
        if type(self).score_bias is PositionalEncoding.score_bias:
            return None
        full = self.score_bias(k_positions)
        return None if full is None else full[..., full.shape[-2] - q_positions.shape[-1]:, :]

    # -- identity --------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """Family-specific manifest fields (JSON-ready)."""
        return {}

    def spec(self) -> dict[str, Any]:
        """Constructor parameters as a JSON-ready dict with ``name``: ``make_encoding(**spec)`` rebuilds."""
        return {"name": self.family, "position_origin": self.position_origin, "compute_dtype": self.compute_dtype}

    def manifest(self) -> dict[str, Any]:
        """The immutable call manifest (family, tables, rotary_dim, layout, origin, dtype …)."""
        return {
            "schema": SCHEMA,
            "family": self.family,
            "kind": self.kind,
            "position": {"origin": self.position_origin, "ids": "int64 sequence index + origin; BOS at origin; right padding"},
            "compute_dtype": self.compute_dtype,
            **self.params(),
        }

    def digest(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`manifest`."""
        return digest_of(self.manifest())

    def extra_repr(self) -> str:
        return f"family={self.family}, digest={self.digest()[:12]}"


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pair_layout: str) -> torch.Tensor:
    """Rotate the R rotary channels of ``x [..., R]`` by ``cos, sin [..., R/2]`` (broadcastable).

    Pair t is (2t, 2t+1) for ``interleaved`` and (t, t + R/2) for ``half_split``; each pair (a, b)
    becomes (a·cos − b·sin, a·sin + b·cos), i.e. Rot_φ (a, b)ᵀ (the rotate-half form of *Transformer
    System M3.4*, §0x08). Computed in x's dtype.
    """
    R = x.shape[-1]
    if pair_layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x[..., : R // 2], x[..., R // 2 :]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


ENCODING_FAMILIES: dict[str, type[PositionalEncoding]] = {}
"""Family name (an :class:`~langclass.core.precision.encoding_families.EncodingFamily` value) → class; filled
through :func:`register_family` by :mod:`langclass.models.nn.encodings` (built-in families) and by the
modules that define further families."""

_CONTEXT: dict[str, tuple[str, ...]] = {}
"""Family name → the model sizes its constructor takes (``d_model``, ``d_head``, ``n_heads``)."""


def register_family(cls: type[PositionalEncoding], context: tuple[str, ...]) -> None:
    """Add an encoding family defined in another module (e.g. :mod:`langclass.models.nn.pj`) to
    :data:`ENCODING_FAMILIES`; ``context`` names the model sizes it takes (``d_model``, ``d_head``,
    ``n_heads``). The package ``langclass.models`` imports those modules, so the registry is complete
    whenever ``langclass.models.nn.encodings`` is importable.

    Raises:
        ValueError: ``cls.family`` is not an :class:`~langclass.core.precision.encoding_families.EncodingFamily`
            (core names encodings through that enum, so a family outside it could never be chosen).
    """
    try:
        family = EncodingFamily(cls.family).value
    except ValueError:
        raise ValueError(f"encoding family {cls.family!r} of {cls.__name__} is not an EncodingFamily; "
                         "add it to langclass.core.precision.encoding_families first") from None
    ENCODING_FAMILIES[family] = cls
    _CONTEXT[family] = tuple(context)
