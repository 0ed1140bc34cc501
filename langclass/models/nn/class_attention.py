"""First-layer soft attention computed from counts of key classes instead of T × T scores.

In the first layer of a recognizer without absolute encodings, the query and the key at position i
are functions of the token ``t_i`` and of the rotation applied at i only. When the encoding has
finitely many distinct rotations — NoPE has one; periodic RoPE (Eq. 7 of *Disentangling the
Expressivity of RoPE*) repeats its table rows bit for bit with period ``lcm(m_d)`` — every position
falls into a *class* ``c_i``, and the key at j is one of the ``U = V · P`` vectors of its *key class*
``u_j = t_j · P + c_j`` (V tokens, P position classes). The score ``s(i, j)`` then depends only on
``(u_i, u_j)``, and the value ``v_j`` only on ``t_j``, so soft attention with the strict mask
(query i sees keys j < i) is exactly

    Σ_{j<i} e^{s(u_i, u_j)} v_j / Σ_{j<i} e^{s(u_i, u_j)}
        = Σ_u N_i(u) e^{S[u_i, u]} v(u) / Σ_u N_i(u) e^{S[u_i, u]}

with ``N_i(u) = |{j < i : u_j = u}|`` (an exclusive prefix count; a class not seen yet has weight 0),
computed with the largest score among the classes present subtracted (it cancels in the ratio) and the
numerator and denominator of every head as one matrix product per run (the values with a column of
ones appended, placed block-diagonally over the heads). The work per query is ``O(H · U · d_head)``
(``O(H² · U · d_head)`` as that product does it) instead of ``O(H · T · d_head)``, and no ``T × T``
tensor is formed, in the forward or the backward. The result equals the scores-and-softmax
form up to floating-point reassociation (the multiplicity enters as a factor N rather than as N equal
terms); :mod:`langclass.models.nn.grouped` uses it for the runs whose encoding qualifies and the fused
kernel for the others, and ``tests/test_class_attention.py`` checks both against each other.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["MAX_POSITION_CLASSES", "position_classes", "class_count_attention"]

MAX_POSITION_CLASSES = 8
"""Most distinct position classes (rotations) for which a run takes the class-count path; an
encoding with more (conventional RoPE has one per position) takes the T × T path."""


def position_classes(rotations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Classes of positions with bit-for-bit equal rotation rows.

    Args:
        rotations: ``[T, W]`` one row per position (e.g. the concatenated cos and sin tables of a run).

    Returns:
        ``(classes int64 [T], representatives int64 [P])``: the class of each position (0 … P − 1, in
        order of first occurrence) and the first position of each class.
    """
    T = rotations.shape[0]
    _, inverse = torch.unique(rotations, dim=0, return_inverse=True)  # classes in sorted-row order
    first = torch.full((int(inverse.max()) + 1 if T else 0,), T, dtype=torch.long, device=rotations.device)
    first.scatter_reduce_(0, inverse, torch.arange(T, device=rotations.device), reduce="amin")
    order = torch.argsort(first)  # classes renumbered by first occurrence
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=rotations.device)
    return rank[inverse], first[order]


def class_count_attention(
    scores: torch.Tensor,
    values: torch.Tensor,
    classes: torch.Tensor,
    query_factor: torch.Tensor | None = None,
) -> torch.Tensor:
    """Soft attention with the strict mask from key-class counts (see the module doc).

    Args:
        scores: ``float [R, H, U, U]`` — ``scores[r, h, u, w]`` the (already scaled) score of a query
            of class u against a key of class w in run r, head h.
        values: ``float [R, U, H, d]`` — the value of a key of class u.
        classes: ``int64 [R, B, T]`` — the key class ``u_j`` of every position of every string.
        query_factor: optional ``float [T]`` multiplying query i's scores (the log-length scaling).

    Returns:
        ``[R, B, T, H, d]`` in the dtype of ``scores`` (computed in at least float32) — the attention output at every position. Position 0, which sees no
        key under the strict mask, attends to itself (the caller zeroes that row, as the T × T path does).
    """
    R, H, U, _ = scores.shape
    B, T = classes.shape[1], classes.shape[2]
    dtype = scores.dtype
    compute = torch.promote_types(dtype, torch.float32)  # counts exact to 2^24 (bfloat16 would round them above 256)
    scores, values = scores.to(compute), values.to(compute)
    onehot = F.one_hot(classes, U).to(compute)  # [R, B, T, U]
    seen = onehot.cumsum(dim=2) - onehot  # keys j < i of each class
    seen[:, :, 0] = onehot[:, :, 0]  # position 0: itself (its output is discarded)
    seen = seen[:, :, :, None, :]  # [R, B, T, 1, U]
    run = torch.arange(R, device=classes.device)[:, None, None]
    s = scores.permute(0, 2, 1, 3)[run, classes]  # [R, B, T, H, U]: each query's row of scores
    if query_factor is not None:
        s = s * query_factor[:T, None, None]
    s = s.masked_fill(seen == 0, float("-inf"))  # classes not seen yet: weight 0 (also when their score is large)
    top = s.detach().amax(dim=-1, keepdim=True)  # the shift cancels in the ratio; finite: a class is always present
    weights = torch.exp(s - top) * seen  # N_i(u)·e^{s − max}, [R, B, T, H, U]
    # numerator and denominator of every head in one product per run: [R, B·T, H·U] @ [R, H·U, H·(d + 1)], the
    # values with a column of ones placed block-diagonally (one well-shaped matmul instead of R·H tiny ones)
    d = values.shape[-1]
    ext = torch.cat((values, values.new_ones(R, U, H, 1)), dim=-1).permute(0, 2, 1, 3)  # [R, H, U, d + 1]
    eye = torch.eye(H, dtype=compute, device=values.device)
    block = (ext[:, :, :, None, :] * eye[None, :, None, :, None]).reshape(R, H * U, H * (d + 1))
    out = torch.matmul(weights.view(R, B * T, H * U), block).view(R, B, T, H, d + 1)
    return (out[..., :-1] / out[..., -1:]).to(dtype)
