"""Exact PJ-rotary: the feature action of the jet generator iωI + ηN on queries and keys.

Source: *PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention* (§5 Table 1,
Prop. 1, App. A.3). Blocks of m complex channels get q'_b = e^{iω_b i} exp(ε i Nᵀ) q_b and
k'_b = e^{iω_b j} exp(−ε j N) k_b with ε = η/L, so that ⟨q'_i, k'_j⟩ = Re Σ_b e^{iω_b d}
Σ_{c≤r<m} (εd)^{r−c}/(r−c)! q_{b,r} conj(k_{b,c}) depends on d = i − j only (bilinear in content,
hence ≠ PJ-bias). m = 1 (or η = 0) is RoPE bit for bit. The transform and the QKᵀ product run in
float32/float64 even under autocast (``scores_in_fp32``). Registered as ``pj_rotary`` with
:func:`langclass.models.nn.encoding_base.register_family`; the scalar kernel ``pj_bias`` is in
:mod:`langclass.models.nn.pj`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from langclass.models.nn.encoding_base import COMPUTE_DTYPES, PositionalEncoding, _as_float, _as_int, _check_positions, _err, exact_cos_sin, register_family, rotate_pairs
from langclass.models.nn.pj import MAX_INIT, MAX_LAGS, MAX_ORDER, _roots

__all__ = ["PJRotary"]


class PJRotary(PositionalEncoding):
    """Exact PJ-rotary: the feature action of the jet generator iωI + ηN (see module doc).

    Layout: the first ``rotary_dim`` channels of a head form B = rotary_dim/(2m) blocks of m complex
    channels, z_{b,r} = x[2(mb + r)] + i·x[2(mb + r) + 1]; the tail is untouched. Frequencies ω_b =
    base^(−b/B) (the released code's ladder; for m = 1 this is RoPE's base^(−2t/rotary_dim)) or,
    with ``roots``, ω_b = 2πa_b/q_b evaluated by table on position mod q_b. No damping γ: with γ > 0
    the key would carry e^{+γj}, growing exponentially with absolute position.

    Args:
        d_head: per-head width.
        order: m ≥ 1, the jet block size (m = 1 is RoPE; the released code uses 2).
        eta: η ≥ 0 (default 1); the nilpotent step is ε = η/train_length.
        train_length: L (default 42).
        base: frequency base (default 10⁴).
        rotary_dim: channels used, a multiple of 2m (default: the largest multiple ≤ d_head).
        roots: optional list of B pairs [a, q] (exact periodic phases).
        position_origin, compute_dtype: see :class:`PositionalEncoding`.

    Raises:
        InputError: invalid values.
    """

    family = "pj_rotary"
    kind = "rotary"
    scores_in_fp32 = True

    def __init__(self, d_head: int, order: int = 2, eta: float = 1.0, train_length: int = 42, base: float = 10_000.0,
                 rotary_dim: int | None = None, roots: Sequence[Any] | None = None, position_origin: int = 0,
                 compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.d_head = _as_int(d_head, "d_head", 1)
        self.order = _as_int(order, "order", 1)
        if self.order > MAX_ORDER:
            raise _err(f"order must be ≤ {MAX_ORDER}", "order")
        self.eta = _as_float(eta, "eta")
        if not 0 <= self.eta <= MAX_INIT:
            raise _err(f"eta must lie in [0, {MAX_INIT:g}]", "eta")
        self.train_length = _as_int(train_length, "train_length", 1)
        if self.train_length > MAX_LAGS:
            raise _err(f"train_length must be ≤ {MAX_LAGS}", "train_length")
        self.base = _as_float(base, "base", positive=True)
        block = 2 * self.order
        self.rotary_dim = (self.d_head // block) * block if rotary_dim is None else _as_int(rotary_dim, "rotary_dim", 0)
        if self.rotary_dim % block or self.rotary_dim > self.d_head:
            raise _err(f"rotary_dim must be a multiple of 2·order = {block} and ≤ d_head = {self.d_head}, got {self.rotary_dim}", "rotary_dim")
        B = self.n_blocks = self.rotary_dim // block
        if roots is not None:
            if not isinstance(roots, (list, tuple)) or len(roots) != B:
                raise _err(f"roots must list one [a, q] per block ({B})", "roots")
            self.roots: tuple[tuple[int, int], ...] | None = _roots([list(roots)], 1, B)[0] if B else ()
        else:
            self.roots = None
        cdt = COMPUTE_DTYPES[compute_dtype]
        inv = self.base ** (-np.arange(B, dtype=np.float64) / max(B, 1))
        self.register_buffer("inv_freq", torch.tensor(np.repeat(inv, self.order), dtype=cdt), persistent=False)  # [R/2]
        if self.roots is not None:
            qs = [q for _, q in self.roots]
            qmax = max(qs) if qs else 1
            cos = np.zeros((B, qmax))
            sin = np.zeros((B, qmax))
            for b, (a, q) in enumerate(self.roots):
                for r in range(q):
                    cos[b, r], sin[b, r] = exact_cos_sin(a * r, q)
            self.register_buffer("root_cos", torch.tensor(np.repeat(cos, self.order, axis=0)).to(cdt), persistent=False)  # [R/2, q_max]
            self.register_buffer("root_sin", torch.tensor(np.repeat(sin, self.order, axis=0)).to(cdt), persistent=False)
            self.register_buffer("root_q", torch.tensor(np.repeat(qs, self.order), dtype=torch.long), persistent=False)  # [R/2]

    @property
    def epsilon(self) -> float:
        """ε = η/L."""
        return self.eta / self.train_length

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin ``[*positions.shape, rotary_dim/2]`` in the compute dtype (RoPE's recipe: phase
        formed in the compute dtype, trig in float64; or the root tables)."""
        _check_positions(positions)
        cdt = COMPUTE_DTYPES[self.compute_dtype]
        if self.roots is not None:
            idx = positions.long()[..., None] % self.root_q
            pair = torch.arange(self.rotary_dim // 2, device=positions.device)
            return self.root_cos[pair, idx], self.root_sin[pair, idx]
        with torch.autocast(device_type=positions.device.type, enabled=False):
            ph = (positions.to(cdt)[..., None] * self.inv_freq.to(cdt)).double()
            return torch.cos(ph).to(cdt), torch.sin(ph).to(cdt)

    def jet_matrix(self, positions: torch.Tensor, side: str) -> torch.Tensor:
        """exp(ε p Nᵀ) (``side="q"``, upper) or exp(−ε p N) (``side="k"``, lower) ``[*positions.shape, m, m]``."""
        cdt = COMPUTE_DTYPES[self.compute_dtype]
        m = self.order
        t = positions.to(cdt) * self.epsilon  # [...]
        M = torch.zeros(*positions.shape, m, m, dtype=cdt, device=positions.device)
        for r in range(m):
            for c in range(m):
                k = c - r if side == "q" else r - c
                if k < 0:
                    continue
                M[..., r, c] = (t if side == "q" else -t).pow(k) / math.factorial(k) if k else 1.0
        return M

    def apply(self, x: torch.Tensor, positions: torch.Tensor, side: str) -> torch.Tensor:
        """Transform ``x [batch, heads, seq, d_head]`` (or ``[batch, seq, d_head]``) as a query
        (``side="q"``) or key (``side="k"``) at integer ``positions [batch, seq]``.

        Computed in the compute dtype with autocast off; returned in the compute dtype when x is
        float16/bfloat16 (those cannot carry the cancellation), else in x's dtype.
        """
        if x.shape[-1] != self.d_head:
            raise ValueError(f"expected per-head width d_head={self.d_head}, got {x.shape[-1]}")
        if self.rotary_dim == 0:
            return x
        cdt = COMPUTE_DTYPES[self.compute_dtype]
        out_dtype = cdt if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        cos, sin = self.cos_sin(positions)  # [batch, seq, R/2]
        head_axis = x.dim() == positions.dim() + 2
        if head_axis:
            cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
        with torch.autocast(device_type=x.device.type, enabled=False):
            y = x[..., : self.rotary_dim].to(cdt)
            if self.order > 1 and self.eta != 0.0:
                M = self.jet_matrix(positions, side)  # [batch, seq, m, m]
                if head_axis:
                    M = M.unsqueeze(-4)  # [batch, 1, seq, m, m]
                shape = y.shape
                blocks = y.reshape(*shape[:-1], self.n_blocks, self.order, 2)  # [..., seq, B, m, 2]
                blocks = torch.matmul(M.unsqueeze(-3), blocks)  # M [..., seq, 1, m, m] @ [..., seq, B, m, 2]
                y = blocks.reshape(shape)
            rot = rotate_pairs(y, cos, sin, "interleaved").to(out_dtype)
        if self.rotary_dim == self.d_head:
            return rot
        return torch.cat((rot, x[..., self.rotary_dim :].to(out_dtype)), dim=-1)

    def rotate(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.apply(q, positions, "q"), self.apply(k, positions, "k")

    def params(self) -> dict[str, Any]:
        return {
            "d_head": self.d_head, "order": self.order, "eta": self.eta, "train_length": self.train_length, "epsilon": self.epsilon,
            "base": self.base, "rotary_dim": self.rotary_dim, "n_blocks": self.n_blocks,
            "roots": None if self.roots is None else [list(p) for p in self.roots],
            "layout": "blocks of m complex channels (2(m b + r), 2(m b + r) + 1); q' = e^{i w i} exp(eps i N^T) q, k' = e^{i w j} exp(-eps j N) k",
            "scores": "rotation and QK^T in float32/float64 even under autocast",
            "source": "PJ-RoPE: A Fourier-Jet-Affine Position Space for Relative Attention, Section 5 (exact PJ-rotary), App. A.3",
        }

    def spec(self) -> dict[str, Any]:
        s = {**super().spec(), "d_head": self.d_head, "order": self.order, "eta": self.eta, "train_length": self.train_length,
             "base": self.base, "rotary_dim": self.rotary_dim}
        if self.roots is not None:
            s["roots"] = [list(p) for p in self.roots]
        return s


register_family(PJRotary, ("d_head",))
