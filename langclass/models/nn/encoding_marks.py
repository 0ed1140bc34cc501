"""The finite-image position marks i mod m as an absolute positional encoding (``mod_onehot``).

θ(i) = e_{i mod m}: the one-hot vector of the residue of the position, written into the first m
coordinates of the residual stream. Its image is finite (m vectors), so by Thm 19 of *Masked
Hard-Attention Transformers Recognize Exactly the Star-Free Languages* masked hard-attention
transformers with it recognize exactly LTL[MOD_m^0, …, MOD_m^{m−1}] (the predicate "the r-th
coordinate is 1" is MOD_m^r), i.e. the languages of FO[<,MOD_m]; with the rational sinusoidal
encoding (``sinusoidal_periodic``) the same marks are read out by a ReLU layer (ibid. Cor 20, §7.5),
which is exact only up to rounding of sin/cos, while these marks are exactly 0/1.
"""

from __future__ import annotations

from typing import Any

import torch

from langclass.models.nn.encoding_base import PositionalEncoding, _as_int, _check_positions, _err, register_family

__all__ = ["ModOneHot"]


class ModOneHot(PositionalEncoding):
    """One-hot marks of i mod m (module docstring).

    Args:
        d_model: model width (≥ ``period``).
        period: m ≥ 1.
        position_origin: the integer position of sequence index 0 (1 for models without BOS whose
            first letter is position 1).

    Shapes: :meth:`table` ``positions [...]`` → ``[..., d_model]``; :meth:`embed` adds it to
    ``x [batch, seq, d_model]``.
    """

    family = "mod_onehot"
    kind = "absolute"

    def __init__(self, d_model: int, period: int = 2, position_origin: int = 0, compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.d_model = _as_int(d_model, "d_model", 1)
        self.period = _as_int(period, "period", 1)
        if self.period > self.d_model:
            raise _err(f"period {self.period} does not fit d_model={self.d_model}", "period")

    def table(self, positions: torch.Tensor) -> torch.Tensor:
        """PE rows ``[*positions.shape, d_model]``: 1 at coordinate i mod m, 0 elsewhere."""
        _check_positions(positions)
        r = positions.long() % self.period
        return torch.nn.functional.one_hot(r, self.d_model).to(torch.float32)

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + self.table(positions).to(x.dtype)

    def params(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "period": self.period,
                "table": "e_(i mod m): coordinate r is 1 iff i ≡ r (mod m), r < m"}

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "d_model": self.d_model, "period": self.period}


register_family(ModOneHot, ("d_model",))
