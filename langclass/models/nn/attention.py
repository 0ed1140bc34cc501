"""Multi-head attention with stable soft attention or unique hard attention, and exact masks.

Semantics (each is tested):

* **Visibility.** Query i sees key j iff the mask allows it — ``strict``: j < i, ``nonstrict``:
  j ≤ i, ``none``: every j — and key j is not padding. Indices are sequence indices (right padding,
  so they are the semantic positions).
* **Soft attention** is the stable softmax of *Disentangling the Expressivity of RoPE*, Eq. 2:
  α_ij = exp(S_ij − max_k S_ik) / Σ_l exp(S_il − max_k S_ik) over the visible keys, computed in the
  score dtype (float32 under autocast). A visible key whose score trails the row maximum by at least
  ``f_large(dtype)`` gets weight exactly 0, and a unique maximum with such a margin gets exactly 1.
* **Unique hard attention** (*Masked Hard-Attention Transformers Recognize Exactly the Star-Free
  Languages*, §6.1): among the visible keys with the maximal score B_i, take j_i = min B_i
  (``leftmost``) or max B_i (``rightmost``); the head returns the value at j_i.
* **A row with no visible key** (e.g. BOS under a strict mask) gets all-zero weights, so each head
  returns the zero vector there (§6.1: "if B_i = ∅, output c_i = 0"); the attention sub-layer then
  outputs only ``out_proj.bias``.
* **Padding never changes a result**: padded keys are invisible; padded query rows are computed
  but never read.

Exact-weight hooks: ``q_proj, k_proj, v_proj`` are ``nn.Linear(d_model, n_heads·d_head)`` whose
weight rows ``h·d_head … (h+1)·d_head − 1`` belong to head h (``weight [n_heads·d_head, d_model]``);
``out_proj`` is ``nn.Linear(n_heads·d_head, d_model)``. Scores are
``score_scale · (q_h · k_h) + bias`` with ``score_scale = 1/√d_head`` unless set (constructions use 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from langclass.models.nn.encodings import NoPE, PositionalEncoding

__all__ = ["MASKS", "ATTENTIONS", "TIES", "IMPLS", "LENGTH_SCALES", "length_factor", "visibility", "stable_softmax", "hard_attention_weights", "straight_through_hard", "grid_scores", "MultiHeadAttention",
           "AttentionTrace", "KVCache"]

MASKS = ("strict", "nonstrict", "none")
IMPLS = ("exact", "sdpa")
ATTENTIONS = ("soft", "hard")
TIES = ("leftmost", "rightmost")
LENGTH_SCALES = ("none", "log")


def visibility(seq_len: int, mask: str, valid: torch.Tensor | None = None, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean visibility ``[batch or 1, 1, seq, seq]``: entry [b, 0, i, j] is True iff query i may see key j.

    Args:
        seq_len: sequence length T.
        mask: ``"strict"`` (j < i), ``"nonstrict"`` (j ≤ i) or ``"none"``.
        valid: optional ``bool [batch, seq]``, False on padding (padding keys become invisible).

    Raises:
        ValueError: unknown mask name.
    """
    i = torch.arange(seq_len, device=device)[:, None]
    j = torch.arange(seq_len, device=device)[None, :]
    if mask == "strict":
        vis = j < i
    elif mask == "nonstrict":
        vis = j <= i
    elif mask == "none":
        vis = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    else:
        raise ValueError(f"unknown mask {mask!r}; expected one of {MASKS}")
    vis = vis[None, None]  # [1, 1, T, T]
    if valid is not None:
        vis = vis & valid[:, None, None, :].to(vis.device)  # [B, 1, T, T]
    return vis


def length_factor(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Log-length score factor ``ln(n_i)`` per query row, ``n_i`` = the keys query i sees (at least 1).

    The "log n scaling" of attention logits of *Overcoming a Theoretical Limitation of
    Self-Attention* (§ on length generalization: multiplying the logits by log n keeps one key's
    weight from diluting as 1/n), with n the number of visible keys, so under a causal mask each
    query uses its own prefix length. Rows seeing one key (or none) get factor 0, which leaves
    their weights unchanged (one key: weight 1; none: zeroed anyway).

    Args:
        visible: bool ``[..., T_q, T_k]`` visibility (:func:`visibility`).
        dtype: the scores' dtype.

    Returns:
        ``[..., T_q, 1]`` factors in ``dtype``.
    """
    n = visible.sum(dim=-1, keepdim=True).clamp_(min=1)
    return torch.log(n.to(torch.float32)).to(dtype)


def stable_softmax(scores: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """Stable softmax over the last axis restricted to visible entries (Eq. 2 of *Disentangling the Expressivity of RoPE*).

    Invisible entries are set to −inf and ``torch.softmax`` computes exp(S − row max) / Σ in one
    fused pass (it subtracts the row maximum, as Eq. 2 does); rows with no visible key are given
    finite dummy scores and then zeroed, so they yield all-zero weights and no NaN (nor NaN
    gradients).

    Args:
        scores: ``[..., T_q, T_k]`` real scores (any float dtype; computed in that dtype).
        visible: bool, broadcastable to ``scores``.

    Returns:
        Weights of ``scores``' shape and dtype: 0 on invisible keys, an all-zero row where no key
        is visible; a visible key trailing the row maximum by ≥ ``f_large(dtype)`` gets exactly 0.
    """
    has_key = visible.any(dim=-1, keepdim=True)
    masked = scores.masked_fill(~(visible | ~has_key), float("-inf"))  # empty rows keep their (finite) scores
    w = torch.softmax(masked, dim=-1)
    # multiplying by 1 leaves a row bit for bit; no data-dependent branch, so torch.func.vmap can
    # batch it (langclass.models.training.train_batched), and a strict mask always has an empty row (BOS)
    return w * has_key.to(w.dtype)


def hard_attention_weights(scores: torch.Tensor, visible: torch.Tensor, tie: str = "rightmost") -> torch.Tensor:
    """One-hot weights of unique hard attention (*Masked Hard-Attention Transformers …*, §6.1).

    Among visible keys with the maximal score, choose the leftmost (smallest index) or the rightmost
    (largest index). Scores are compared exactly (ties are exact float equality).

    Args:
        scores: ``[..., T_q, T_k]``.
        visible: bool, broadcastable to ``scores``.
        tie: ``"leftmost"`` or ``"rightmost"``.

    Returns:
        0/1 weights in ``scores``' dtype; all-zero rows where no key is visible.

    Raises:
        ValueError: unknown tie rule.
    """
    if tie not in TIES:
        raise ValueError(f"unknown tie-breaking rule {tie!r}; expected one of {TIES}")
    visible = torch.broadcast_to(visible, scores.shape)
    neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    masked = torch.where(visible, scores, neg_inf)
    row_max = masked.amax(dim=-1, keepdim=True)
    best = (masked == row_max) & visible  # B_i
    T = scores.shape[-1]
    idx = torch.arange(T, device=scores.device)
    if tie == "leftmost":
        choice = torch.where(best, idx, T).amin(dim=-1, keepdim=True)
    else:
        choice = torch.where(best, idx, -1).amax(dim=-1, keepdim=True)
    has_key = visible.any(dim=-1, keepdim=True)
    onehot = (idx == choice) & has_key
    return onehot.to(scores.dtype)


def grid_scores(scores: torch.Tensor, grid: float | None) -> torch.Tensor:
    """``scores`` rounded to the nearest multiple of 1/``grid`` (round half to even), or ``scores``
    itself when ``grid`` is None: the fixed-resolution scores a trained hard-attention model compares
    (docs/training.md: ties among keys become reachable by training)."""
    if grid is None:
        return scores
    return torch.round(scores * grid) / grid


def straight_through_hard(scores: torch.Tensor, visible: torch.Tensor, tie: str = "rightmost",
                          grid: float | None = None) -> torch.Tensor:
    """Unique hard attention whose forward value is exactly :func:`hard_attention_weights` and whose
    gradient, where one is needed, is the softmax's (the straight-through estimator).

    Forward: ``hard + (soft − soft.detach())``; ``soft − soft.detach()`` is x − x = +0 exactly in IEEE
    arithmetic, so the returned weights equal the one-hot weights bit for bit (the model that is
    evaluated is the exact hard-attention model of *Masked Hard-Attention Transformers Recognize
    Exactly the Star-Free Languages*, §6.1). Backward: ∂w/∂scores = ∂softmax(scores)/∂scores (the
    masked stable softmax, :func:`stable_softmax`), a dense non-zero gradient where argmax has none
    (Bengio, Léonard & Courville 2013, *Estimating or Propagating Gradients Through Stochastic
    Neurons*). Without autograd (no grad mode, or scores that need no gradient) only the hard weights
    are computed.

    With ``grid`` the hard choice is made on :func:`grid_scores` (scores rounded to multiples of
    1/grid), so keys whose scores differ by less than the resolution tie and the tie rule decides —
    the fixed-precision comparison of the theorems, where exact ties (all keys of a NoPE head tied
    gives the previous position, Y) are a set of positive measure that training can reach; the
    softmax of the unrounded scores still gives the gradient.

    Args:
        scores: ``[..., T_q, T_k]``; visible: bool, broadcastable; tie: ``"leftmost"`` or ``"rightmost"``;
        grid: None (exact scores) or the resolution's inverse (> 0).

    Returns:
        weights ``[..., T_q, T_k]`` in ``scores``' dtype, one-hot per row with a visible key, 0 elsewhere.
    """
    hard = hard_attention_weights(grid_scores(scores.detach(), grid) if grid is not None else scores, visible, tie)
    if not (torch.is_grad_enabled() and scores.requires_grad):
        return hard
    soft = stable_softmax(scores, visible)
    return hard + (soft - soft.detach())


@dataclass
class AttentionTrace:
    """What one attention call computed, for verification of exact constructions.

    Attributes:
        scores: ``[batch, heads, seq, seq]`` pre-mask scores (after scaling and score bias).
        weights: ``[batch, heads, seq, seq]`` attention weights (0 on invisible keys).
        visible: ``bool [batch or 1, 1, seq, seq]``.
        heads: ``[batch, heads, seq, d_head]`` per-head outputs (weights @ V).
    """

    scores: torch.Tensor
    weights: torch.Tensor
    visible: torch.Tensor
    heads: torch.Tensor


@dataclass
class KVCache:
    """Keys and values of the positions already processed by one attention layer (incremental evaluation).

    Attributes:
        k: ``[batch, heads, t, d_head]`` keys after the encoding's rotation.
        v: ``[batch, heads, t, d_head]`` values.
        positions: ``int64 [batch, t]`` position ids of the cached keys.
        valid: ``bool [batch, t]`` False on padding.
    """

    k: torch.Tensor
    v: torch.Tensor
    positions: torch.Tensor
    valid: torch.Tensor

    @property
    def length(self) -> int:
        return int(self.k.shape[2])


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention (soft or unique hard) with positional hooks.

    Args:
        d_model: model width D.
        n_heads: H.
        d_head: per-head width (default D // H).
        attention: ``"soft"`` or ``"hard"``.
        tie: ``"leftmost"`` or ``"rightmost"`` (hard attention only).
        mask: ``"strict"``, ``"nonstrict"`` or ``"none"``.
        score_scale: multiplier of q·k (default 1/√d_head).
        length_scale: ``"none"`` (default) or ``"log"``: each query row's scores (after
            ``score_scale`` and the encoding's score bias) are multiplied by ``ln(n_i)``, n_i its
            visible keys (:func:`length_factor`; *Overcoming a Theoretical Limitation of
            Self-Attention*). Hard attention's choice is unchanged by it (a positive factor where
            two or more keys are visible).
        bias: whether the projections have biases (Eq. 4 of *Disentangling the Expressivity of RoPE*
            has query/key biases b_q, b_k that RoPE rotates with the projection).
        impl: ``"exact"`` (default) materializes scores and computes :func:`stable_softmax` /
            :func:`hard_attention_weights` — the semantics above, bit for bit; ``"sdpa"`` (soft
            attention only) calls ``torch.nn.functional.scaled_dot_product_attention`` with the same
            visibility and score bias — the same function up to floating-point reassociation
            (online softmax), several times faster and O(T) memory on GPU, for training and
            evaluation; rows without a visible key still return 0. ``return_trace=True`` always
            uses the exact path.

    Forward: ``x [batch, seq, d_model]``, ``positions int64 [batch or 1, seq]``, ``valid bool [batch,
    seq]`` (None = all valid), ``encoding`` → ``[batch, seq, d_model]`` (and an
    :class:`AttentionTrace` with ``return_trace=True``).

    Order of operations per head (*Transformer System M3.4*, §0x09): project Q, K, V; rotate Q and K
    (never V) with ``encoding.rotate``; score = scale·QKᵀ + ``encoding.score_bias``; mask; soft or
    hard weights; weights @ V; concatenate heads; ``out_proj``.
    """

    def __init__(self, d_model: int, n_heads: int, d_head: int | None = None, attention: str = "soft", tie: str = "rightmost",
                 mask: str = "strict", score_scale: float | None = None, bias: bool = True, impl: str = "exact",
                 length_scale: str = "none", score_grid: float | None = None) -> None:
        super().__init__()
        if score_grid is not None and not (isinstance(score_grid, (int, float)) and math.isfinite(score_grid) and score_grid > 0):
            raise ValueError(f"score_grid must be a positive number or None, got {score_grid!r}")
        self.score_grid = None if score_grid is None else float(score_grid)
        if length_scale not in LENGTH_SCALES:
            raise ValueError(f"unknown length_scale {length_scale!r}; expected one of {LENGTH_SCALES}")
        self.length_scale = length_scale
        if impl not in IMPLS:
            raise ValueError(f"unknown attention implementation {impl!r}; expected one of {IMPLS}")
        self.impl = impl
        if attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {attention!r}; expected one of {ATTENTIONS}")
        if tie not in TIES:
            raise ValueError(f"unknown tie rule {tie!r}; expected one of {TIES}")
        if mask not in MASKS:
            raise ValueError(f"unknown mask {mask!r}; expected one of {MASKS}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_head if d_head is not None else d_model // n_heads
        if self.d_head < 1:
            raise ValueError("d_head must be ≥ 1")
        self.attention = attention
        self.tie = tie
        self.mask = mask
        self.score_scale = 1.0 / math.sqrt(self.d_head) if score_scale is None else float(score_scale)
        inner = self.n_heads * self.d_head
        self.q_proj = nn.Linear(d_model, inner, bias=bias)  # weight [H·d_head, d_model]
        self.k_proj = nn.Linear(d_model, inner, bias=bias)  # weight [H·d_head, d_model]
        self.v_proj = nn.Linear(d_model, inner, bias=bias)  # weight [H·d_head, d_model]
        self.out_proj = nn.Linear(inner, d_model, bias=bias)  # weight [d_model, H·d_head]

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        B, T, _ = t.shape
        return t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # [B, H, T, d_head]

    def forward(self, x: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor | None = None,
                encoding: PositionalEncoding | None = None, return_trace: bool = False):
        encoding = encoding if encoding is not None else _NOPE
        B, T, _ = x.shape  # x: [batch, seq, d_model]
        if positions.shape[0] != B:
            positions = positions.expand(B, T)  # [batch, seq]
        q = self._split(self.q_proj(x))  # [B, H, T, d_head]
        k = self._split(self.k_proj(x))  # [B, H, T, d_head]
        v = self._split(self.v_proj(x))  # [B, H, T, d_head]  (never rotated)
        q, k = encoding.rotate(q, k, positions)
        vis = visibility(T, self.mask, valid, device=x.device)  # [B or 1, 1, T, T]
        fp32 = bool(getattr(encoding, "scores_in_fp32", False))  # pj_rotary: QKᵀ never in bf16/fp16
        if self.impl == "sdpa" and self.attention == "soft" and not return_trace:
            bias = encoding.score_bias(positions)
            if self.length_scale == "log":  # f·(s·q·k + b) = s·(f·q)·k + f·b
                f = length_factor(vis, q.dtype)  # [B or 1, 1, T, 1]
                q = q * f
                bias = None if bias is None else bias * f
            if fp32:
                with torch.autocast(device_type=x.device.type, enabled=False):
                    wide = torch.promote_types(q.dtype, torch.float32)
                    heads = self._sdpa(q.to(wide), k.to(wide), v.to(wide), vis, bias).to(v.dtype)
            else:
                heads = self._sdpa(q, k, v, vis, bias)
            return self.out_proj(heads.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head))
        if fp32:
            with torch.autocast(device_type=x.device.type, enabled=False):
                wide = torch.promote_types(torch.promote_types(q.dtype, k.dtype), torch.float32)
                scores = torch.matmul(q.to(wide), k.to(wide).transpose(-2, -1))  # [B, H, T, T]
        else:
            scores = torch.matmul(q, k.transpose(-2, -1))  # [B, H, T, T]
        if self.score_scale != 1.0:
            scores = scores.mul_(self.score_scale)  # in place: matmul's backward does not need its output
        bias = encoding.score_bias(positions)
        if bias is not None:
            scores = scores + bias.to(scores.dtype)
        if _autocast_on(x.device.type) and scores.dtype in (torch.float16, torch.bfloat16):
            scores = scores.float()  # like torch.softmax under autocast
        if self.length_scale == "log":
            scores = scores * length_factor(vis, scores.dtype)
        if self.attention == "soft":
            w = stable_softmax(scores, vis)
        else:
            w = straight_through_hard(scores, vis, self.tie, self.score_grid)
        heads = torch.matmul(w.to(v.dtype), v)  # [B, H, T, d_head]
        out = self.out_proj(heads.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head))  # [B, T, d_model]
        if return_trace:
            return out, AttentionTrace(scores=scores, weights=w, visible=vis, heads=heads)
        return out

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, vis: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """Fused soft attention with the same visibility; rows without a visible key return 0."""
        has_key = vis.any(dim=-1, keepdim=True)  # [B or 1, 1, T, 1]
        allowed = vis | ~has_key  # empty rows attend to everything, then are zeroed
        if bias is not None:
            mask = bias.to(q.dtype).masked_fill(~allowed, float("-inf"))  # [B, H, T, T]
        else:
            mask = allowed
        heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.score_scale)
        return heads * has_key.to(heads.dtype)  # [B, H, T, d_head]; no data-dependent branch (vmap)

    def step(self, x: torch.Tensor, positions: torch.Tensor, cache: KVCache | None = None,
             valid: torch.Tensor | None = None, encoding: PositionalEncoding | None = None) -> tuple[torch.Tensor, KVCache]:
        """Incremental evaluation with a key/value cache: the outputs at ``t_new`` further positions.

        Prefill is one call with the whole prefix (``cache=None``), decoding one call per token;
        any split gives the outputs of :meth:`forward` on the whole sequence (the same scores,
        visibility and weights per query row; only the matmul blocking differs). Memory is
        O(t·H·d_head) for the cache plus ``[batch, H, t_new, t]`` scores, never a t×t matrix when
        queries come in blocks (*Transformer System M3.4 — Rotary Position Embedding*: the
        prefill/decode/cache invariant; rotated keys are cached, values never rotated).

        Args:
            x: ``[batch, t_new, d_model]`` the new positions' inputs.
            positions: ``int64 [batch or 1, t_new]`` their position ids.
            cache: the cache of the earlier positions (None = empty).
            valid: ``bool [batch, t_new]`` (None = all valid).
            encoding: the layer's positional encoding.

        Returns:
            ``(out [batch, t_new, d_model], cache)`` with the new keys and values appended.

        Raises:
            ValueError: mask ``"none"`` with a non-empty cache (a query would need later keys).
        """
        encoding = encoding if encoding is not None else _NOPE
        B, T, _ = x.shape
        if positions.shape[0] != B:
            positions = positions.expand(B, T)
        if valid is None:
            valid = torch.ones(B, T, dtype=torch.bool, device=x.device)
        if cache is not None and cache.length and self.mask == "none":
            raise ValueError("mask 'none' cannot be evaluated incrementally (queries see later keys)")
        q = self._split(self.q_proj(x))  # [B, H, T, d_head]
        k = self._split(self.k_proj(x))
        v = self._split(self.v_proj(x))
        q, k = encoding.rotate(q, k, positions)
        if cache is not None and cache.length:
            cache = KVCache(torch.cat([cache.k, k], dim=2), torch.cat([cache.v, v], dim=2),
                            torch.cat([cache.positions, positions], dim=1), torch.cat([cache.valid, valid], dim=1))
        else:
            cache = KVCache(k, v, positions, valid)
        t_all = cache.length
        t0 = t_all - T
        i = torch.arange(t0, t_all, device=x.device)[:, None]
        j = torch.arange(t_all, device=x.device)[None, :]
        vis = (j < i) if self.mask == "strict" else (j <= i) if self.mask == "nonstrict" else torch.ones_like(j < i)
        vis = vis[None, None] & cache.valid[:, None, None, :]  # [B, 1, T, t_all]
        scores = torch.matmul(q, cache.k.transpose(-2, -1))  # [B, H, T, t_all]
        if self.score_scale != 1.0:
            scores = scores.mul_(self.score_scale)
        bias = encoding.score_bias_block(positions, cache.positions)
        if bias is not None:
            scores = scores + bias.to(scores.dtype)
        if self.length_scale == "log":
            scores = scores * length_factor(vis, scores.dtype)
        if self.attention == "soft":
            w = stable_softmax(scores, vis)
        else:
            w = hard_attention_weights(grid_scores(scores, self.score_grid), vis, self.tie)
        heads = torch.matmul(w.to(cache.v.dtype), cache.v)  # [B, H, T, d_head]
        return self.out_proj(heads.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)), cache

    # -- exact-weight helpers --------------------------------------------------------------
    def head_slice(self, h: int) -> slice:
        """Rows of q/k/v_proj.weight (and columns of out_proj.weight) that belong to head h."""
        if not 0 <= h < self.n_heads:
            raise IndexError(f"head {h} outside 0..{self.n_heads - 1}")
        return slice(h * self.d_head, (h + 1) * self.d_head)


_NOPE = NoPE()


def _autocast_on(device_type: str) -> bool:
    try:
        return bool(torch.is_autocast_enabled(device_type))
    except TypeError:  # older torch: no device argument
        return bool(torch.is_autocast_cpu_enabled() if device_type == "cpu" else torch.is_autocast_enabled())
