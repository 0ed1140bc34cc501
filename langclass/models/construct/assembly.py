"""Assembly helpers shared by the soft and the hard construction: plans → torch weights.

The one feed-forward writer (:func:`write_feed_forward`) turns the ReLU units of a plan
(:class:`~langclass.models.construct.gates.ReluUnit`: Boolean gates over literals for soft attention,
disjoint cubes for hard attention) into a two-layer ReLU network, and :class:`SparseFeedForward`
evaluates the same units sparsely (bit for bit); :func:`dense` writes a sparse plan
row over the residual stream; :func:`freeze` casts a finished model to its dtype and freezes it.

Weights are written in float64 into modules created in torch's default dtype, then the whole model
is cast once with :func:`freeze` (so a float64 model holds the float32-rounded constants, exactly as
the construction has always produced them).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from langclass.models.construct.gates import ReluUnit, Row

__all__ = ["TORCH_DTYPES", "dense", "write_feed_forward", "SparseFeedForward", "freeze"]

TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
"""The torch dtype of every construction dtype name (:data:`~langclass.models.construct.plan.DTYPES`)."""


def dense(row: Row, d_model: int) -> torch.Tensor:
    """A sparse plan row as a float64 vector ``[d_model]``."""
    out = torch.zeros(d_model, dtype=torch.float64)
    for c, w in row:
        out[c] = w
    return out


def write_feed_forward(units: Sequence[ReluUnit], d_model: int) -> nn.Sequential | None:
    """The feed-forward layer of ``units``: ``Linear(d_model, H) → ReLU → Linear(H, d_model)`` with
    H = len(units), hidden unit u reading ``units[u].inputs`` with bias ``units[u].bias`` and adding
    ``units[u].weight`` times its activation to coordinate ``units[u].out``; no output bias.

    Shapes: input and output ``[..., d_model]``. Returns None when there are no units (the layer is
    then skipped, which equals adding 0).
    """
    if not units:
        return None
    H = len(units)
    ffn = nn.Sequential(nn.Linear(d_model, H), nn.ReLU(), nn.Linear(H, d_model))
    W1 = torch.zeros(H, d_model, dtype=torch.float64)
    b1 = torch.zeros(H, dtype=torch.float64)
    W2 = torch.zeros(d_model, H, dtype=torch.float64)
    for u, unit in enumerate(units):
        for c, w in unit.inputs:
            W1[u, c] = w
        b1[u] = unit.bias
        W2[unit.out, u] = unit.weight
    with torch.no_grad():
        ffn[0].weight.copy_(W1)
        ffn[0].bias.copy_(b1)
        ffn[2].weight.copy_(W2)
        ffn[2].bias.zero_()
    return ffn


class SparseFeedForward(nn.Module):
    """The feed-forward layer of :func:`write_feed_forward` evaluated sparsely: each hidden unit gathers
    the ≤ :data:`~langclass.models.construct.gates.MAX_FFN_INPUTS` coordinates it reads instead of a
    dense ``[H, d_model]`` product. Every term is a 0/1 input times a ±1 weight and the sums are small
    integers, so the result is bit for bit the dense layer's (the hard construction keeps the dense
    layer in ``BraspTransformer.ffns`` as the model's weights and runs this one). The buffers are not
    saved with the model (they are derived from the units).
    Shapes: ``x [batch, n, d_model]`` → the update ``[batch, n, d_model]``."""

    def __init__(self, units: Sequence[ReluUnit]) -> None:
        super().__init__()
        self.units = len(units)
        m = max([len(u.inputs) for u in units] + [1])
        idx = torch.zeros(len(units), m, dtype=torch.long)
        w = torch.zeros(len(units), m, dtype=torch.float64)
        for h, u in enumerate(units):
            for t, (c, wt) in enumerate(u.inputs):
                idx[h, t], w[h, t] = c, wt
        self.register_buffer("idx", idx, persistent=False)
        self.register_buffer("w", w, persistent=False)
        self.register_buffer("bias", torch.tensor([u.bias for u in units], dtype=torch.float64), persistent=False)
        self.register_buffer("out", torch.tensor([u.out for u in units], dtype=torch.long), persistent=False)
        self.register_buffer("out_w", torch.tensor([u.weight for u in units], dtype=torch.float64), persistent=False)

    def activations(self, x: torch.Tensor) -> torch.Tensor:
        """weight · ReLU(pre-activation) of every unit: ``[batch, n, H]``."""
        pre = (x[..., self.idx] * self.w).sum(-1) + self.bias
        return torch.relu(pre) * self.out_w

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x).index_add_(-1, self.out, self.activations(x))

    def add_to(self, x: torch.Tensor) -> None:
        """``x += forward(x)`` in place (the units read x before anything is written)."""
        x.index_add_(-1, self.out, self.activations(x))


def freeze(model: nn.Module, dtype: str) -> None:
    """Cast ``model`` to the construction dtype ``dtype`` and turn off gradients of its parameters."""
    model.to(TORCH_DTYPES[dtype])
    for p in model.parameters():
        p.requires_grad_(False)
