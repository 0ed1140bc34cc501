"""Positional encodings behind one interface, each exactly the object a theorem talks about.

Families (``make_encoding(name, **params)``):

* ``nope`` — no positional information; order comes from the attention mask only. Soft attention
  with a strict future mask and BOS recognizes exactly LTL[P] (*Disentangling the Expressivity of
  RoPE*, §2.2).
* ``sinusoidal`` — absolute sinusoidal PE added to the token embedding, pair t carrying
  (sin(i·ω_t), cos(i·ω_t)) with ω_t = β^(−2t/dim) (non-periodic for irrational ω_t).
* ``sinusoidal_periodic`` — absolute PE from finite tables indexed by i mod m_t, pair t carrying
  round(sin(2π a_t r/m_t), cos(2π a_t r/m_t)) with r = i mod m_t; periodic SiPE of *Disentangling
  the Expressivity of RoPE* Thm 3.2, and the rational sinusoidal PE of *Masked Hard-Attention
  Transformers Recognize Exactly the Star-Free Languages*, Cor. 20 (finite image).
* ``rope`` — conventional RoPE (RoFormer; *Transformer System M3.4 — Rotary Position Embedding*):
  ω_t = β^(−2t/rotary_dim) (the exponent denominator is ``rotary_dim``, never d_head), rotary_dim ≤
  d_head with the tail left untouched (partial RoPE), pair layout ``interleaved`` (pairs (2t, 2t+1))
  or ``half_split`` (pairs (t, t + R/2)), integer position ids, phase float32(ω_t)·float32(i) formed
  in the compute dtype (float32 unless the model is float64) whatever the model dtype, applied to Q
  and K only (never V). A custom schedule (``angles``) replaces the base ladder (seed-free custom
  schedules of *Disentangling the Expressivity of RoPE*, §2.3).
* ``rope_periodic`` — component-periodic RoPE realized by precomputed tables T_d(r) =
  round_F(Rot_{θ_d, r}), 0 ≤ r < m_d, θ_d = 2π a_d/m_d, indexed by i mod m_d and never by forming
  θ_d·i (*Disentangling the Expressivity of RoPE*, §2.4, Eq. 7; Thm 3.1). By default half of each
  head's pairs are unrotated (rotary_dim = 2⌊d_head/4⌋), which keeps the LTL[P] computation of NoPE.
* ``alibi`` — linear recency bias −s_h·|i − j| added to head h's scores (ALiBi; the affine sector of
  *PJ-RoPE*, §4 and App. B.3).
* ``learned`` — learned absolute positions: a trainable row per position added to the embedding,
  a table of fixed size (:mod:`langclass.models.nn.encoding_learned`).
* ``recency``, ``recency_periodic`` — ALiBi-type recency heads with a learnable slope
  s_h = s_max·sigmoid(θ_h) beside NoPE heads (slope 0), the second with periodic RoPE tables; the
  recency construction of docs/recency.md made trainable, defined in :mod:`langclass.models.nn.recency`.
* ``pj_bias``, ``pj_rotary`` — the learnable Fourier–jet–affine kernel and the exact jet feature
  transform of *PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention*, defined in
  :mod:`langclass.models.nn.pj` and registered here through :func:`register_family`.

Interface (:class:`PositionalEncoding`): ``position_ids(seq_len)`` gives the integer positions
(index + ``position_origin``; BOS sits at the origin), ``embed(x, positions)`` adds an absolute
encoding to ``x [batch, seq, d_model]``, ``rotate(q, k, positions)`` rotates ``q, k [batch, heads,
seq, d_head]``, ``score_bias(positions)`` returns an additive score bias ``[batch, heads, seq, seq]``
or None. Each encoding has a JSON ``manifest()`` (family, base or period table, rotary_dim, pair
layout, position origin, compute dtype …) and ``digest()`` = SHA-256 of its canonical JSON
(*Transformer System M3.4*, §0x01A, "rotary call manifest"); ``spec()`` gives the constructor
parameters, so ``make_encoding(**enc.spec())`` rebuilds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from langclass.core.precision.encoding_families import EncodingFamily
from langclass.core.base.errors import InputError

__all__ = [
    "SCHEMA",
    "PositionalEncoding",
    "NoPE",
    "Sinusoidal",
    "SinusoidalPeriodic",
    "RoPE",
    "PeriodicRoPE",
    "ALiBi",
    "ENCODING_FAMILIES",
    "make_encoding",
    "register_family",
    "canonical_json",
    "digest_of",
    "exact_cos_sin",
]

from langclass.models.nn.encoding_base import (  # noqa: F401 - the interface, helpers and registry, re-exported
    _CONTEXT,
    COMPUTE_DTYPES,
    ENCODING_FAMILIES,
    PAIR_LAYOUTS,
    SCHEMA,
    PositionalEncoding,
    _as_float,
    _as_int,
    _check_positions,
    _err,
    canonical_json,
    digest_of,
    exact_cos_sin,
    register_family,
    rotate_pairs,
)


class NoPE(PositionalEncoding):
    """No positional encoding (the NoPE transformers of *Disentangling the Expressivity of RoPE*, §2.2)."""

    family = "nope"
    kind = "none"


# ---------------------------------------------------------------------------------------------
# absolute encodings
# ---------------------------------------------------------------------------------------------


class Sinusoidal(PositionalEncoding):
    """Absolute sinusoidal PE (Vaswani et al.) on the first ``dim`` coordinates of the embedding.

    Coordinates 2t, 2t+1 (t < dim/2) receive sin(i·ω_t), cos(i·ω_t) with ω_t = base^(−2t/dim);
    coordinates ≥ dim receive 0. The phase is formed in the compute dtype from the integer position
    and cos/sin are evaluated in float64 and rounded to it.

    Args:
        d_model: model width.
        base: β > 0 (default 10⁴).
        dim: even number of coordinates used (default d_model rounded down to even).
        position_origin, compute_dtype: see :class:`PositionalEncoding`.
    """

    family = "sinusoidal"
    kind = "absolute"

    def __init__(self, d_model: int, base: float = 10_000.0, dim: int | None = None, position_origin: int = 0,
                 compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.d_model = _as_int(d_model, "d_model", 1)
        self.base = _as_float(base, "base", positive=True)
        dim = self.d_model - self.d_model % 2 if dim is None else _as_int(dim, "dim", 0)
        if dim % 2 or dim > self.d_model:
            raise _err(f"dim must be even and ≤ d_model={self.d_model}, got {dim}", "dim")
        self.dim = dim
        inv = self.base ** (-np.arange(0, dim, 2, dtype=np.float64) / max(dim, 1))
        self.register_buffer("inv_freq", torch.tensor(inv, dtype=COMPUTE_DTYPES[compute_dtype]), persistent=False)  # [dim/2]

    def table(self, positions: torch.Tensor) -> torch.Tensor:
        """PE rows ``[*positions.shape, d_model]`` in the compute dtype."""
        _check_positions(positions)
        cdt = COMPUTE_DTYPES[self.compute_dtype]
        with torch.autocast(device_type=positions.device.type, enabled=False):
            phase = positions.to(cdt)[..., None] * self.inv_freq.to(cdt)  # [..., dim/2]
            pe = torch.zeros(*positions.shape, self.d_model, dtype=cdt, device=positions.device)
            pe[..., 0 : self.dim : 2] = torch.sin(phase.double()).to(cdt)
            pe[..., 1 : self.dim : 2] = torch.cos(phase.double()).to(cdt)
        return pe

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + self.table(positions).to(x.dtype)

    def params(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "dim": self.dim, "base": self.base, "exponent_denominator": "dim",
                "layout": "interleaved (sin, cos) per pair", "trig": "phase formed in compute dtype; sin/cos in float64 rounded"}

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "d_model": self.d_model, "base": self.base, "dim": self.dim}


def _periodic_tables(periods: Sequence[int], steps: Sequence[int], cdt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables ``[P, max m]`` with T_d(r) = round(cos/sin(2π a_d r/m_d)) for r < m_d (0-padded)."""
    mmax = max(periods) if periods else 1
    cos = np.zeros((len(periods), mmax), dtype=np.float64)
    sin = np.zeros((len(periods), mmax), dtype=np.float64)
    for d, (m, a) in enumerate(zip(periods, steps)):
        for r in range(m):
            cos[d, r], sin[d, r] = exact_cos_sin(a * r, m)
    return torch.tensor(cos).to(cdt), torch.tensor(sin).to(cdt)


def _periods_steps(periods: Any, steps: Any, n_pairs: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(periods, (int, np.integer)) and not isinstance(periods, bool):
        periods = (int(periods),) * n_pairs
    if not isinstance(periods, (list, tuple)) or len(periods) != n_pairs:
        raise _err(f"periods must be an integer or a list of {n_pairs} integers, got {periods!r}", "periods")
    periods = tuple(_as_int(m, "periods", 1) for m in periods)
    if isinstance(steps, (int, np.integer)) and not isinstance(steps, bool):
        steps = (int(steps),) * n_pairs
    if not isinstance(steps, (list, tuple)) or len(steps) != n_pairs:
        raise _err(f"steps must be an integer or a list of {n_pairs} integers, got {steps!r}", "steps")
    steps = tuple(_as_int(a, "steps", 0) for a in steps)
    if any(m > 1_000_000 for m in periods):
        raise _err("periods above 10^6 are not supported (table size)", "periods")
    return periods, steps


class SinusoidalPeriodic(PositionalEncoding):
    """Periodic absolute sinusoidal PE from finite tables indexed by i mod m_t.

    Pair t (coordinates 2t, 2t+1) carries round(sin(2π a_t r/m_t)), round(cos(2π a_t r/m_t)) with
    r = i mod m_t, read from a precomputed table (never from a phase θ·i), so the realized map has
    period m_t exactly (*Disentangling the Expressivity of RoPE*, §3.3 / Thm 3.2; rational sinusoidal
    PE of *Masked Hard-Attention Transformers …*, Cor. 20).

    Args:
        d_model: model width.
        periods: m_t ≥ 1 per pair — an int (every pair of the first ``dim`` coordinates) or a list.
        steps: a_t per pair (int or list; default 1), angle 2π a_t/m_t.
        dim: coordinates used when ``periods`` is an int (default d_model rounded down to even);
            with a list, dim = 2·len(periods).
    """

    family = "sinusoidal_periodic"
    kind = "absolute"

    def __init__(self, d_model: int, periods: int | Sequence[int] = 2, steps: int | Sequence[int] = 1, dim: int | None = None,
                 position_origin: int = 0, compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.d_model = _as_int(d_model, "d_model", 1)
        if isinstance(periods, (list, tuple)):
            n_pairs = len(periods)
            if dim is not None and _as_int(dim, "dim", 0) != 2 * n_pairs:
                raise _err(f"dim={dim} does not match {n_pairs} periods", "dim")
        else:
            d = self.d_model - self.d_model % 2 if dim is None else _as_int(dim, "dim", 0)
            if d % 2:
                raise _err(f"dim must be even, got {d}", "dim")
            n_pairs = d // 2
        if 2 * n_pairs > self.d_model or n_pairs == 0:
            raise _err(f"{n_pairs} pairs do not fit d_model={self.d_model}", "periods")
        self.periods, self.steps = _periods_steps(periods, steps, n_pairs)
        self.dim = 2 * n_pairs
        cos, sin = _periodic_tables(self.periods, self.steps, COMPUTE_DTYPES[compute_dtype])
        self.register_buffer("cos_table", cos, persistent=False)  # [P, max m]
        self.register_buffer("sin_table", sin, persistent=False)  # [P, max m]
        self.register_buffer("period_t", torch.tensor(self.periods, dtype=torch.long), persistent=False)  # [P]

    def table(self, positions: torch.Tensor) -> torch.Tensor:
        """PE rows ``[*positions.shape, d_model]``: table lookups at i mod m_t."""
        _check_positions(positions)
        idx = positions.long()[..., None] % self.period_t  # [..., P]
        pair = torch.arange(len(self.periods), device=positions.device)
        pe = torch.zeros(*positions.shape, self.d_model, dtype=self.cos_table.dtype, device=positions.device)
        pe[..., 0 : self.dim : 2] = self.sin_table[pair, idx]
        pe[..., 1 : self.dim : 2] = self.cos_table[pair, idx]
        return pe

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + self.table(positions).to(x.dtype)

    def params(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "dim": self.dim, "periods": list(self.periods), "steps": list(self.steps),
                "table": "T_t(r) = round(sin, cos)(2*pi*a_t*r/m_t), 0 <= r < m_t, indexed by i mod m_t",
                "layout": "interleaved (sin, cos) per pair"}

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "d_model": self.d_model, "periods": list(self.periods), "steps": list(self.steps)}


# ---------------------------------------------------------------------------------------------
# rotary encodings
# ---------------------------------------------------------------------------------------------


class _Rotary(PositionalEncoding):
    """Common machinery of ``rope`` and ``rope_periodic``: subclasses provide :meth:`cos_sin`."""

    kind = "rotary"

    def __init__(self, d_head: int, rotary_dim: int, pair_layout: str, position_origin: int, compute_dtype: str) -> None:
        super().__init__(position_origin, compute_dtype)
        self.d_head = _as_int(d_head, "d_head", 1)
        self.rotary_dim = _as_int(rotary_dim, "rotary_dim", 0)
        if self.rotary_dim % 2:
            raise _err(f"rotary_dim must be even, got {self.rotary_dim}", "rotary_dim")
        if self.rotary_dim > self.d_head:
            raise _err(f"rotary_dim={self.rotary_dim} exceeds d_head={self.d_head}", "rotary_dim")
        if pair_layout not in PAIR_LAYOUTS:
            raise _err(f"pair_layout must be one of {PAIR_LAYOUTS}, got {pair_layout!r}", "pair_layout")
        self.pair_layout = pair_layout

    @property
    def n_pairs(self) -> int:
        return self.rotary_dim // 2

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must define cos_sin (the rotary subclasses RoPE and PeriodicRoPE do)")

    def apply(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate one tensor ``x [batch, heads, seq, d_head]`` (or ``[batch, seq, d_head]``) at ``positions [batch, seq]``.

        The first ``rotary_dim`` channels are rotated in the compute dtype and cast back to x's
        dtype; the tail ``x[..., rotary_dim:]`` is returned unchanged (bit for bit).
        """
        if x.shape[-1] != self.d_head:
            raise ValueError(f"expected per-head width d_head={self.d_head}, got {x.shape[-1]} (RoPE acts inside each head)")
        if self.rotary_dim == 0:
            return x
        cos, sin = self.cos_sin(positions)  # [batch, seq, R/2]
        if x.dim() == positions.dim() + 2:  # head axis between batch and seq
            cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)  # [batch, 1, seq, R/2]
        cdt = cos.dtype
        with torch.autocast(device_type=x.device.type, enabled=False):
            rot = rotate_pairs(x[..., : self.rotary_dim].to(cdt), cos, sin, self.pair_layout).to(x.dtype)
        if self.rotary_dim == self.d_head:
            return rot
        return torch.cat((rot, x[..., self.rotary_dim :]), dim=-1)

    def rotate(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.apply(q, positions), self.apply(k, positions)

    # -- reference paths (used by the conformance tests) -------------------------------------
    def pair_indices(self) -> list[tuple[int, int]]:
        """Channel indices (a_t, b_t) of rotary pair t under the pair layout."""
        R = self.rotary_dim
        if self.pair_layout == "interleaved":
            return [(2 * t, 2 * t + 1) for t in range(R // 2)]
        return [(t, t + R // 2) for t in range(R // 2)]

    def rotation_matrix(self, positions: torch.Tensor) -> torch.Tensor:
        """The realized block rotation as an explicit matrix ``[*positions.shape, d_head, d_head]`` (float64).

        Identity on the unrotated tail; ``apply(x)[..., :] == rotation_matrix @ x`` up to rounding.
        """
        cos, sin = self.cos_sin(positions)
        M = torch.zeros(*positions.shape, self.d_head, self.d_head, dtype=torch.float64, device=positions.device)
        idx = torch.arange(self.rotary_dim, self.d_head)
        M[..., idx, idx] = 1.0
        for t, (a, b) in enumerate(self.pair_indices()):
            c, s = cos[..., t].double(), sin[..., t].double()
            M[..., a, a], M[..., a, b], M[..., b, a], M[..., b, b] = c, -s, s, c
        return M

    def apply_complex(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Reference complex path: pair (a, b) ↦ (a + ib)·e^{iφ} (*Transformer System M3.4*, §0x04, §0x07)."""
        cos, sin = self.cos_sin(positions)
        if x.dim() == positions.dim() + 2:
            cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
        idx = self.pair_indices()
        a = x[..., [p[0] for p in idx]].double()
        b = x[..., [p[1] for p in idx]].double()
        z = torch.complex(a, b) * torch.complex(cos.double(), sin.double())
        out = x.double().clone()
        out[..., [p[0] for p in idx]] = z.real
        out[..., [p[1] for p in idx]] = z.imag
        return out.to(x.dtype)

    def layout_permutation(self) -> list[int]:
        """Channel permutation P (list, new[i] = old[P[i]]) taking interleaved storage of this head to
        half-split storage (identity on the tail): convert a checkpoint by permuting the rotary Q/K
        projection rows with it (*Transformer System M3.4*, §0x08, "Deriving the layout permutation")."""
        R = self.rotary_dim
        return [2 * t for t in range(R // 2)] + [2 * t + 1 for t in range(R // 2)] + list(range(R, self.d_head))

    def params(self) -> dict[str, Any]:
        return {"d_head": self.d_head, "rotary_dim": self.rotary_dim, "pair_layout": self.pair_layout,
                "unrotated_tail": self.d_head - self.rotary_dim, "applies_to": ["q", "k"], "v_rotated": False}

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "d_head": self.d_head, "rotary_dim": self.rotary_dim, "pair_layout": self.pair_layout}


class RoPE(_Rotary):
    """Conventional RoPE with base β, partial rotary_dim, and a pair layout.

    Frequencies ω_t = β^(−2t/rotary_dim), t = 0 … rotary_dim/2 − 1 (exponent denominator =
    rotary_dim, *Transformer System M3.4*, §0x01A), computed in float64 and stored in the compute
    dtype; or a custom schedule ``angles`` (radians per position; 0 = unrotated pair). Phases
    φ_t(i) = ω_t·i are formed in the compute dtype (float32 unless the model is float64) from
    integer position ids, and cos/sin are evaluated in float64 and rounded to the compute dtype —
    so the realized table equals :func:`langclass.core.precision.numerics.rotation_table` with
    ``phase="float32"``. The rotation is computed in the compute dtype and cast back to the model
    dtype, with autocast disabled. Non-periodic for irrational ω_t/2π (*Disentangling the
    Expressivity of RoPE*, Prop. 4.1).

    Args:
        d_head: per-head width.
        base: β > 0 (default 10⁴).
        rotary_dim: even, ≤ d_head (default d_head); channels ≥ rotary_dim are not rotated.
        pair_layout: ``"half_split"`` (default, GPT-NeoX) or ``"interleaved"`` (GPT-J).
        angles: optional custom schedule, a list of rotary_dim/2 angles (replaces ``base``).
        position_origin, compute_dtype: see :class:`PositionalEncoding`.

    Raises:
        InputError: odd or oversized rotary_dim, unknown layout, non-positive base, bad angles.
    """

    family = "rope"

    def __init__(self, d_head: int, base: float = 10_000.0, rotary_dim: int | None = None, pair_layout: str = "half_split",
                 angles: Sequence[float] | None = None, position_origin: int = 0, compute_dtype: str = "float32") -> None:
        super().__init__(d_head, d_head if rotary_dim is None else rotary_dim, pair_layout, position_origin, compute_dtype)
        self.base = _as_float(base, "base", positive=True)
        if angles is not None:
            if not isinstance(angles, (list, tuple)) or len(angles) != self.n_pairs:
                raise _err(f"angles must be a list of rotary_dim/2 = {self.n_pairs} numbers", "angles")
            self.angles: tuple[float, ...] | None = tuple(_as_float(a, "angles") for a in angles)
            inv = np.array(self.angles, dtype=np.float64)
        else:
            self.angles = None
            inv = self.base ** (-np.arange(0, self.rotary_dim, 2, dtype=np.float64) / max(self.rotary_dim, 1))
        self.register_buffer("inv_freq", torch.tensor(inv, dtype=COMPUTE_DTYPES[compute_dtype]), persistent=False)  # [R/2]

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin ``[*positions.shape, rotary_dim/2]`` in the compute dtype at integer ``positions``."""
        _check_positions(positions)
        cdt = COMPUTE_DTYPES[self.compute_dtype]
        with torch.autocast(device_type=positions.device.type, enabled=False):
            phase = positions.to(cdt)[..., None] * self.inv_freq.to(cdt)  # [..., R/2], formed in cdt
            ph = phase.double()
            return torch.cos(ph).to(cdt), torch.sin(ph).to(cdt)

    def params(self) -> dict[str, Any]:
        p = super().params()
        p.update({
            "rope_type": "custom_angles" if self.angles is not None else "default",
            "base": None if self.angles is not None else self.base,
            "exponent_denominator": "rotary_dim",
            "inv_freq": [float(v) for v in self.inv_freq.double().tolist()],
            "trig": "phase = position * inv_freq in compute dtype; cos/sin in float64 rounded to compute dtype",
        })
        return p

    def spec(self) -> dict[str, Any]:
        s = {**super().spec(), "base": self.base}
        if self.angles is not None:
            s["angles"] = list(self.angles)
        return s


class PeriodicRoPE(_Rotary):
    """Component-periodic RoPE realized by lookup tables (Eq. 7 of *Disentangling the Expressivity of RoPE*).

    For rotary pair d with period m_d and step a_d (θ_d = 2π a_d/m_d) the table
    T_d(r) = round_F(Rot_{θ_d, r}), 0 ≤ r < m_d, is precomputed from the ideal rotation (exact 0/±1
    at quarter turns) and the realized block at position i is T_d(i mod m_d): the product θ_d·i is
    never formed, so R̂_{i+m_d} = R̂_i bit for bit at every i (Def. 2.1). A period of 1 is an
    unrotated pair. With the default ``rotary_dim = 2⌊d_head/4⌋`` half of the pairs are unrotated
    (the unrotated subspaces that carry LTL[P], §2.3, Thm 3.1).

    Args:
        d_head: per-head width.
        periods: m_d ≥ 1 — an int for every rotary pair, or a list of rotary_dim/2 ints (default 2).
        steps: a_d (int or list, default 1).
        rotary_dim: even, ≤ d_head (default 2⌊d_head/4⌋).
        pair_layout, position_origin, compute_dtype: as for :class:`RoPE`.
    """

    family = "rope_periodic"

    def __init__(self, d_head: int, periods: int | Sequence[int] = 2, steps: int | Sequence[int] = 1, rotary_dim: int | None = None,
                 pair_layout: str = "half_split", position_origin: int = 0, compute_dtype: str = "float32") -> None:
        d_head = _as_int(d_head, "d_head", 1)
        if isinstance(periods, (list, tuple)) and rotary_dim is None:
            # a list gives one period per rotary pair: it must name at least one, and its pairs must fit the head
            if not periods:
                raise _err("periods is an empty list: give an integer or one period per rotary pair (at least one)", "periods")
            if 2 * len(periods) > d_head:
                raise _err(f"{len(periods)} periods need {len(periods)} rotary pairs, but a head of width d_head={d_head} "
                           f"has {d_head // 2}: give at most {d_head // 2} periods", "periods")
        if rotary_dim is None:
            rotary_dim = 2 * len(periods) if isinstance(periods, (list, tuple)) else 2 * (d_head // 4)
        super().__init__(d_head, rotary_dim, pair_layout, position_origin, compute_dtype)
        self.periods, self.steps = _periods_steps(periods, steps, self.n_pairs)
        cos, sin = _periodic_tables(self.periods, self.steps, COMPUTE_DTYPES[compute_dtype])
        self.register_buffer("cos_table", cos, persistent=False)  # [R/2, max m]
        self.register_buffer("sin_table", sin, persistent=False)  # [R/2, max m]
        self.register_buffer("period_t", torch.tensor(self.periods, dtype=torch.long), persistent=False)  # [R/2]

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin ``[*positions.shape, rotary_dim/2]``: T_d(i mod m_d), an integer table lookup."""
        _check_positions(positions)
        idx = positions.long()[..., None] % self.period_t  # [..., R/2], in 0..m_d−1 (also for negative i)
        pair = torch.arange(self.n_pairs, device=positions.device)
        return self.cos_table[pair, idx], self.sin_table[pair, idx]

    def params(self) -> dict[str, Any]:
        p = super().params()
        p.update({
            "rope_type": "periodic_table",
            "periods": list(self.periods),
            "steps": list(self.steps),
            "table": "T_d(r) = round(Rot(2*pi*a_d*r/m_d)), 0 <= r < m_d, indexed by i mod m_d (no theta*i)",
            "table_values": [[[float(c), float(s)] for c, s in zip(self.cos_table[d, :m].double().tolist(), self.sin_table[d, :m].double().tolist())]
                             for d, m in enumerate(self.periods)] if sum(self.periods) <= 4096 else "omitted (large)",
        })
        return p

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "periods": list(self.periods), "steps": list(self.steps)}


# ---------------------------------------------------------------------------------------------
# bias encodings
# ---------------------------------------------------------------------------------------------


class ALiBi(PositionalEncoding):
    """ALiBi: head h adds −s_h·|i − j| to its scores (Press et al.; the affine recency sector of *PJ-RoPE*, §4).

    Default slopes s_h = 2^(−8h/H), h = 1 … H. Under a future mask only j ≤ i is visible, where the
    bias is the usual −s_h·(i − j).

    Args:
        n_heads: H.
        slopes: optional list of H non-negative slopes.
    """

    family = "alibi"
    kind = "bias"

    def __init__(self, n_heads: int, slopes: Sequence[float] | None = None, position_origin: int = 0, compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.n_heads = _as_int(n_heads, "n_heads", 1)
        if slopes is None:
            slopes = [2.0 ** (-8.0 * h / self.n_heads) for h in range(1, self.n_heads + 1)]
        if not isinstance(slopes, (list, tuple)) or len(slopes) != self.n_heads:
            raise _err(f"slopes must be a list of n_heads={self.n_heads} numbers", "slopes")
        self.slopes = tuple(_as_float(s, "slopes") for s in slopes)
        if any(s < 0 for s in self.slopes):
            raise _err("slopes must be ≥ 0", "slopes")
        self.register_buffer("slope_t", torch.tensor(self.slopes, dtype=COMPUTE_DTYPES[compute_dtype]), persistent=False)  # [H]

    def score_bias(self, positions: torch.Tensor) -> torch.Tensor:
        """``[batch, heads, seq, seq]`` bias −s_h·|p_i − p_j| in the compute dtype."""
        _check_positions(positions)
        dist = (positions[..., :, None] - positions[..., None, :]).abs().to(self.slope_t.dtype)  # [batch, seq, seq]
        return -self.slope_t[:, None, None] * dist.unsqueeze(-3)

    def score_bias_block(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        """``[batch, heads, t_q, t_k]`` bias −s_h·|q_i − k_j| (same values as :meth:`score_bias`)."""
        _check_positions(q_positions)
        _check_positions(k_positions)
        dist = (q_positions[..., :, None] - k_positions[..., None, :]).abs().to(self.slope_t.dtype)
        return -self.slope_t[:, None, None] * dist.unsqueeze(-3)

    def params(self) -> dict[str, Any]:
        return {"n_heads": self.n_heads, "slopes": list(self.slopes), "bias": "-slope_h * |i - j| added to scores"}

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "n_heads": self.n_heads, "slopes": list(self.slopes)}


for _cls, _context in [(NoPE, ()), (Sinusoidal, ("d_model",)), (SinusoidalPeriodic, ("d_model",)), (RoPE, ("d_head",)),
                       (PeriodicRoPE, ("d_head",)), (ALiBi, ("n_heads",))]:
    register_family(_cls, _context)


def make_encoding(name: str, *, d_model: int | None = None, d_head: int | None = None, n_heads: int | None = None,
                  **params: Any) -> PositionalEncoding:
    """Build a positional encoding by family name.

    Args:
        name: an :class:`~langclass.core.precision.encoding_families.EncodingFamily` or its value, one of ``nope,
            sinusoidal, sinusoidal_periodic, rope, rope_periodic, alibi, pj_bias, pj_rotary`` (the last
            two from :mod:`langclass.models.nn.pj`).
        d_model, d_head, n_heads: model context; each family takes what it needs (the recognizer
            passes all three), the rest is ignored. The same key inside ``params`` (as in
            :meth:`PositionalEncoding.spec`) must agree with the context.
        **params: family parameters (see each class), e.g. ``base``, ``rotary_dim``, ``pair_layout``,
            ``periods``, ``steps``, ``angles``, ``slopes``, ``position_origin``, ``compute_dtype``.

    Returns:
        The encoding module.

    Raises:
        InputError: unknown family or parameter, missing context, invalid values
            (``field="encoding.<param>"``).

    Example:
        >>> enc = make_encoding("rope_periodic", d_head=8, periods=2)
        >>> enc.rotary_dim, enc.manifest()["periods"]
        (4, [2, 2])
    """
    if isinstance(name, EncodingFamily):
        name = name.value
    if name not in ENCODING_FAMILIES:
        raise InputError(f"unknown positional encoding {name!r}; expected one of {', '.join(ENCODING_FAMILIES)} (trained hard "
                         "attention: hard_nope, hard_mod_onehot)", field="encoding.name")
    cls = ENCODING_FAMILIES[name]
    context = {"d_model": d_model, "d_head": d_head, "n_heads": n_heads}
    kwargs: dict[str, Any] = {}
    for key in _CONTEXT[name]:
        if key in params:
            kwargs[key] = params.pop(key)
            if context[key] is not None and kwargs[key] != context[key]:
                raise InputError(f"encoding {name!r}: {key}={kwargs[key]} conflicts with the model's {key}={context[key]}",
                                 field=f"encoding.{key}")
        elif context[key] is None:
            raise InputError(f"encoding {name!r} needs {key}", field=f"encoding.{key}")
        else:
            kwargs[key] = context[key]
    import inspect

    allowed = set(inspect.signature(cls.__init__).parameters) - {"self"}
    for key in params:
        if key not in allowed:
            raise InputError(f"encoding {name!r} has no parameter {key!r} (allowed: {', '.join(sorted(allowed - set(_CONTEXT[name])))})",
                             field=f"encoding.{key}")
    try:
        return cls(**kwargs, **params)
    except TypeError as exc:  # wrong argument types that slipped through
        raise InputError(f"bad parameters for encoding {name!r}: {exc}", field="encoding") from None


# The families defined in other modules register themselves on import; importing them here (at the
# end, once every name above exists) makes them available wherever this module is used, also when
# the package ``langclass.models`` is imported lazily.
from langclass.models.nn import pj as _pj  # noqa: E402,F401  (registers pj_bias)
from langclass.models.nn import pj_rotary as _pj_rotary  # noqa: E402,F401  (registers pj_rotary)
from langclass.models.nn import encoding_marks as _marks  # noqa: E402,F401  (registers mod_onehot)
from langclass.models.nn import encoding_learned as _learned  # noqa: E402,F401  (registers learned)
from langclass.models.nn import recency as _recency  # noqa: E402,F401  (registers recency)
