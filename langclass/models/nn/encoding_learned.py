"""Learned absolute positional embeddings (family ``learned``): one trainable row per position.

Row i of a ``[max_positions, d_model]`` table is added to the token embedding at sequence index i
(+ ``position_origin``), as in GPT-2-style decoders. The table has a fixed size: positions at or
beyond ``max_positions`` have no row and are refused (:class:`~langclass.core.base.errors.LimitExceeded`
``max_positions``). The experiments size the table to the longest train or test string + 2
(:mod:`langclass.models.experiments.experiment`), so every tested position has a row — but rows of
positions longer than every training string receive no gradient and stay at their initialisation
(normal, std ``init_std``): a test at such lengths measures what an untrained position row does,
which is the honest reading of "learned absolute positions beyond the trained range".
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from langclass.core.base.errors import LimitExceeded
from langclass.models.nn.encoding_base import (COMPUTE_DTYPES, PositionalEncoding, _as_float, _as_int, _check_positions, _err,
                                               register_family)

__all__ = ["LearnedAbsolute", "MAX_LEARNED_POSITIONS"]

MAX_LEARNED_POSITIONS = 1_000_000
"""Largest ``max_positions`` of a learned table (its rows × d_model floats are allocated at once)."""


class LearnedAbsolute(PositionalEncoding):
    """Learned absolute PE: ``x[:, i] += table[i + position_origin]`` (table ``[max_positions, d_model]``,
    trainable, in the compute dtype, initialised N(0, init_std²) from the global torch seed).

    Args:
        d_model: model width.
        max_positions: rows of the table (positions 0 … max_positions − 1; default 512).
        init_std: standard deviation of the initial rows (default 0.02).
        position_origin, compute_dtype: see :class:`PositionalEncoding`.

    Raises:
        InputError: invalid parameters (``field="encoding.<param>"``); a ``max_positions`` above
            :data:`MAX_LEARNED_POSITIONS`.
        LimitExceeded: (in :meth:`embed`) a position without a row (limit ``max_positions``).
    """

    family = "learned"
    kind = "absolute"

    def __init__(self, d_model: int, max_positions: int = 512, init_std: float = 0.02, position_origin: int = 0,
                 compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.d_model = _as_int(d_model, "d_model", 1)
        self.max_positions = _as_int(max_positions, "max_positions", 1)
        if self.max_positions > MAX_LEARNED_POSITIONS:
            raise _err(f"max_positions must be ≤ {MAX_LEARNED_POSITIONS}, got {self.max_positions}", "max_positions")
        self.init_std = _as_float(init_std, "init_std")

        table = torch.empty(self.max_positions, self.d_model, dtype=COMPUTE_DTYPES[compute_dtype])
        nn.init.normal_(table, std=self.init_std)
        self.table = nn.Parameter(table)  # [max_positions, d_model]

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """``x [batch, seq, d_model]`` plus the rows of ``positions [1 or batch, seq]``."""
        _check_positions(positions)
        top = int(positions.max()) if positions.numel() else -1
        if top >= self.max_positions:
            raise LimitExceeded("max_positions", self.max_positions,
                                f"position {top} has no row in the learned table of {self.max_positions} positions; "
                                "build the encoding with a larger max_positions", field="encoding.max_positions")
        return x + self.table[positions].to(x.dtype)

    def params(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "max_positions": self.max_positions, "init_std": self.init_std,
                "table": "trainable rows, one per position; untrained rows keep their initialisation"}

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "d_model": self.d_model, "max_positions": self.max_positions, "init_std": self.init_std}


register_family(LearnedAbsolute, ("d_model",))
