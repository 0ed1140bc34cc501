"""Trainable recency heads: an ALiBi-type score bias −s_h·(i − j) with a learnable, bounded slope per head.

The recency construction (docs/recency.md) shows that a head with zero content score and the bias
−s·(i − j), s ≥ f_large(F), puts weight exactly 1 on j = i − 1 at every length, so soft attention
with such heads beside NoPE heads (slope 0) recognizes every LTL[P,Y] language at all lengths, and
with periodic RoPE for the MOD atoms every LTL[P,Y,MOD] language (*Disentangling the Expressivity of
RoPE*, Thm 3.1 / Lemma 3.2, with the recency proof). This family makes that slope a parameter a
training run can learn:

    s_h = s_max · sigmoid(θ_h)   for the first ``heads`` heads,   s_h = 0 (a NoPE head) for the rest.

**Why a sigmoid with a cap.** The bound is part of the model, not of the optimizer: whatever step
AdamW takes, 0 ≤ s_h ≤ s_max holds (no clamping, no projection, and the gradient never dies at a
clamp). ``s_max`` defaults to twice the construction slope, 2·2^⌈log₂ f_large(F)⌉ (256 for float32
and bfloat16 scores, 2048 for float64), so the slope the proof needs, s ≥ f_large, is reached at a
finite θ (θ ≥ logit(f_large/s_max) ≈ −0.37 in float32), θ = 0 is exactly the construction's power of
two, and for θ ≳ 17 the float32 sigmoid rounds to 1, so s = s_max exactly (a power of two, the
exactness argument of docs/recency.md step 1–3 verbatim). Near small slopes s_max·sigmoid(θ) ≈
s_max·e^θ, a log-parametrization: AdamW's steps change the slope multiplicatively, which suits a
quantity that must travel from ALiBi's usual ~1 to ~10². A softplus with a cap would leave the
slope unbounded below the cap only through a clamp; the sigmoid needs none.

``slope_init`` (default 8: the weight on i − 1 is already 1 − 3·10⁻⁴, the gradient through the
softmax is not yet saturated) sets θ_h = logit(slope_init/s_max) for every recency head.

With ``periods`` the family also rotates every head's first ``rotary_dim`` channels by the periodic
RoPE tables of :class:`~langclass.models.nn.encodings.PeriodicRoPE` (indexed by i mod m, never θ·i),
the LTL[P,Y,MOD] model (periodic RoPE for MOD, recency heads for Y) in one family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from langclass.core.precision.encoding_families import EncodingFamily
from langclass.core.precision.floats import f_large
from langclass.models.nn.encoding_base import (ENCODING_FAMILIES, COMPUTE_DTYPES, PositionalEncoding, _as_float, _as_int,
                                               _check_positions, _err, register_family)

__all__ = ["Recency", "RecencyPeriodic", "default_slope_max", "SCORE_DTYPE_OF"]

SCORE_DTYPE_OF = {"float32": "float32", "float64": "float64"}
"""The dtype whose f_large sizes the default cap, per compute dtype (bfloat16 models add the bias in
float32 scores; f_large(bfloat16) = 93 < f_large(float32), so the float32 cap covers both)."""


def default_slope_max(compute_dtype: str = "float32") -> float:
    """2 · (the power of two ≥ f_large(compute dtype)): 256.0 for float32, 2048.0 for float64.

    Source: *Disentangling the Expressivity of RoPE*, §2.2 (f_large: a margin ≥ f_large makes stable
    softmax an exact selection) and the recency construction of docs/recency.md.
    """
    return 2.0 * 2.0 ** math.ceil(math.log2(f_large(SCORE_DTYPE_OF[compute_dtype])))


class Recency(PositionalEncoding):
    """Learnable recency heads (module docstring), optionally with periodic RoPE.

    Args:
        n_heads: H.
        d_head: per-head width (used only with ``periods``).
        heads: how many heads (the first ones) carry a learnable slope; the other H − heads have
            slope exactly 0 (NoPE heads). Default ⌈H/2⌉.
        slope_max: the cap s_max > 0 (default :func:`default_slope_max` of the compute dtype).
        slope_init: initial slope, 0 < slope_init < slope_max (default min(8, s_max/2)).
        periods, steps, rotary_dim, pair_layout: periodic RoPE on every head (as ``rope_periodic``);
            None (default) = no rotation.
        position_origin, compute_dtype: see :class:`PositionalEncoding`.

    Shapes: :meth:`score_bias` ``positions [batch, seq]`` → ``[batch, H, seq, seq]`` (compute dtype);
    :meth:`rotate` ``q, k [batch, H, seq, d_head]`` → same.

    Raises:
        InputError: ``heads`` outside 0..H, a cap ≤ 0, an initial slope outside (0, cap), bad
            periodic parameters (``field="encoding.<name>"``).
    """

    family = "recency"
    kind = "bias"

    def __init__(self, n_heads: int, d_head: int, heads: int | None = None, slope_max: float | None = None,
                 slope_init: float | None = None, periods: int | Sequence[int] | None = None, steps: int | Sequence[int] = 1,
                 rotary_dim: int | None = None, pair_layout: str = "half_split", position_origin: int = 0,
                 compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.n_heads = _as_int(n_heads, "n_heads", 1)
        self.d_head = _as_int(d_head, "d_head", 1)
        self.heads = (self.n_heads + 1) // 2 if heads is None else _as_int(heads, "heads", 0)
        if self.heads > self.n_heads:
            raise _err(f"heads={self.heads} exceeds n_heads={self.n_heads}", "heads")
        self.slope_max = default_slope_max(compute_dtype) if slope_max is None else _as_float(slope_max, "slope_max", positive=True)
        init = min(8.0, self.slope_max / 2) if slope_init is None else _as_float(slope_init, "slope_init", positive=True)
        if not init < self.slope_max:
            raise _err(f"slope_init={init} must be below slope_max={self.slope_max}", "slope_init")
        self.slope_init = init
        cdt = COMPUTE_DTYPES[compute_dtype]
        theta = math.log(init / (self.slope_max - init))  # logit(init / s_max)
        self.theta = nn.Parameter(torch.full((self.heads,), theta, dtype=cdt))  # [heads]
        self.rope: PositionalEncoding | None = None
        if periods is not None:  # periodic RoPE through the registry (encodings.py registers it and imports this module)
            periodic_rope = ENCODING_FAMILIES[EncodingFamily.ROPE_PERIODIC.value]
            self.kind = "rotary_bias"  # type: ignore[misc]  # both hooks act: rotate() and score_bias()
            self.rope = periodic_rope(self.d_head, periods=periods, steps=steps, rotary_dim=rotary_dim, pair_layout=pair_layout,
                                     position_origin=position_origin, compute_dtype=compute_dtype)
        elif rotary_dim is not None:
            raise _err("rotary_dim is a periodic-RoPE parameter: give periods too", "rotary_dim")

    # -- the slopes --------------------------------------------------------------------------
    def slopes(self) -> torch.Tensor:
        """The slopes ``[H]`` in the compute dtype: s_max·sigmoid(θ_h) for the recency heads, 0 after."""
        s = self.slope_max * torch.sigmoid(self.theta)
        if self.heads == self.n_heads:
            return s
        return torch.cat((s, torch.zeros(self.n_heads - self.heads, dtype=s.dtype, device=s.device)))

    def _bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        _check_positions(q_positions)
        _check_positions(k_positions)
        s = self.slopes()
        dist = (q_positions[..., :, None] - k_positions[..., None, :]).abs().to(s.dtype)  # [batch, t_q, t_k]
        return -s[:, None, None] * dist.unsqueeze(-3)  # [batch, H, t_q, t_k]

    def score_bias(self, positions: torch.Tensor) -> torch.Tensor:
        """``[batch, H, seq, seq]`` bias −s_h·|p_i − p_j| (differentiable in θ)."""
        return self._bias(positions, positions)

    def score_bias_block(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        """``[batch, H, t_q, t_k]`` bias −s_h·|q_i − k_j| (the values of :meth:`score_bias`)."""
        return self._bias(q_positions, k_positions)

    def rotate(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Periodic RoPE on q, k ``[batch, H, seq, d_head]`` when ``periods`` was given; identity otherwise."""
        if self.rope is None:
            return q, k
        return self.rope.rotate(q, k, positions)

    # -- identity ----------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"n_heads": self.n_heads, "heads": self.heads, "slope_max": self.slope_max, "slope_init": self.slope_init,
                             "bias": "-slope_h * |i - j|; slope_h = slope_max * sigmoid(theta_h) (learned) for h < heads, 0 after"}
        if self.rope is not None:
            p["rope_periodic"] = {k: v for k, v in self.rope.params().items() if k != "table_values"}
        return p

    def spec(self) -> dict[str, Any]:
        out = {**super().spec(), "n_heads": self.n_heads, "d_head": self.d_head, "heads": self.heads, "slope_max": self.slope_max,
               "slope_init": self.slope_init}
        if self.rope is not None:
            out.update(periods=list(self.rope.periods), steps=list(self.rope.steps), rotary_dim=self.rope.rotary_dim,
                       pair_layout=self.rope.pair_layout)
        return out


class RecencyPeriodic(Recency):
    """:class:`Recency` with periodic RoPE always on (``periods`` default 2): the LTL[P,Y,MOD] model
    (periodic RoPE for the MOD atoms, recency heads for Y) under its own name, so tables and sweep
    cells tell it from plain recency heads. Parameters as :class:`Recency`."""

    family = "recency_periodic"

    def __init__(self, n_heads: int, d_head: int, heads: int | None = None, slope_max: float | None = None,
                 slope_init: float | None = None, periods: int | Sequence[int] = 2, steps: int | Sequence[int] = 1,
                 rotary_dim: int | None = None, pair_layout: str = "half_split", position_origin: int = 0,
                 compute_dtype: str = "float32") -> None:
        if periods is None:
            raise _err("recency_periodic needs periods (use recency for no rotation)", "periods")
        super().__init__(n_heads, d_head, heads, slope_max, slope_init, periods, steps, rotary_dim, pair_layout,
                         position_origin, compute_dtype)


register_family(Recency, ("n_heads", "d_head"))
register_family(RecencyPeriodic, ("n_heads", "d_head"))
