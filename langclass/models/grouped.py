"""R recognizers of one shape evaluated as one: stacked parameters and grouped (batched) matmuls.

:class:`GroupedRecognizers` holds the parameters of R :class:`~langclass.models.recognizer.Recognizer`
models that share a shape (:func:`group_key`) — they may differ in their positional encoding (any
family of :data:`GROUPABLE_FAMILIES`), their weights, and so their seed or language — in one flat
tensor ``theta [R, P]``. :meth:`GroupedRecognizers.logits` runs all R models on ``[R, B, T]`` inputs
(each run its own batch) or on ``[1, B, T]`` inputs shared by every run, as one chain of
``torch.baddbmm`` / ``torch.matmul`` calls over a leading run axis — one pass instead of R — which
is what lets a 2-core CPU train the run grid of an experiment together
(:mod:`langclass.models.train_batched`).

It computes the function of :meth:`Recognizer.forward` (soft attention, strict future mask, pre-norm;
*Disentangling the Expressivity of RoPE*, §2.2 and Eq. 2) up to floating-point reassociation,
using three facts about that function:

* **The encodings are tables.** For every groupable family the encoding enters as per-position
  tables computed once by the family's own code: a rotary family as ``cos``/``sin`` per channel
  (:meth:`~langclass.models.encodings.RoPE.cos_sin`; an unrotated channel or NoPE is cos 1, sin 0,
  which leaves it bit for bit), an absolute family as the rows it adds to the embedding
  (``embed`` of zeros), a bias family as its score bias. The rotation partner of each channel
  (the pair layout) is folded into the query/key projection weights (a row permutation of W_q, W_k),
  so the rotation is two elementwise products per tensor, whatever the runs' layouts.
* **With right padding and a strict mask, padding needs no mask.** Query i sees keys j < i; a
  query at or before EOS therefore sees only real tokens, and padded rows are never read. One
  additive ``[T, T]`` causal mask serves every string (the BOS row, which sees no key, is zeroed,
  as in :func:`~langclass.models.attention.stable_softmax`).
* **Only EOS is read.** The last layer computes its query, attention and feed-forward at the EOS
  position of each string only (keys and values at every position), and the final LayerNorm and
  readout act on that row.

Parameters live in ``theta`` (leaf, ``requires_grad``) and are handed to the forward as views
(``theta.split``), so the gradient is one ``[R, P]`` tensor: per-run gradient clipping is one norm
over ``dim=1`` and AdamW (:class:`StackedAdamW`) a handful of elementwise ops on ``[R, P]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from .recognizer import Recognizer

__all__ = ["GROUPABLE_FAMILIES", "group_key", "GroupedRecognizers", "StackedAdamW"]

GROUPABLE_FAMILIES = frozenset({"nope", "rope", "rope_periodic", "sinusoidal", "sinusoidal_periodic", "alibi"})
"""Encoding families without learnable parameters whose effect is a table (rotary, absolute or bias)."""

_SHAPE_FIELDS = ("alphabet", "d_model", "n_heads", "n_layers", "head_dim", "ff_dim", "score_scale", "length_scale", "activation",
                 "layer_norm_eps")


def group_key(config: Any) -> tuple | None:
    """A hashable key equal for configs that :class:`GroupedRecognizers` can stack, or None when the
    config cannot be grouped (hard attention, a mask other than strict, norm other than pre, no
    biases, an odd head width, dropout, a dtype or encoding compute dtype other than float32, or an encoding outside :data:`GROUPABLE_FAMILIES`)."""
    enc = getattr(config, "encoding", None) or {}
    if (getattr(config, "attention", None) != "soft" or config.mask != "strict" or config.norm != "pre" or not config.bias
            or config.head_dim % 2
            or float(config.dropout) != 0.0 or config.dtype != "float32" or enc.get("name") not in GROUPABLE_FAMILIES
            or enc.get("compute_dtype", "float32") != "float32"):
        return None
    return tuple(getattr(config, f) for f in _SHAPE_FIELDS)


def _param_layout(model: Recognizer) -> list[tuple[str, torch.Size]]:
    return [(n, p.shape) for n, p in model.named_parameters()]


class GroupedRecognizers:
    """R recognizers of one shape as one stacked model (see the module doc).

    Args:
        models: R :class:`Recognizer` models with equal :func:`group_key` (their weights are copied).
        device: where ``theta`` lives (default: the first model's device).

    Attributes:
        theta: ``float32 [R, P]`` all parameters of run r in row r (leaf, ``requires_grad``).
        names, shapes: the parameter layout (``Recognizer.named_parameters()`` order).
        encodings: the R encoding modules (tables are read from them).

    Raises:
        ValueError: no models, or models whose configs have different :func:`group_key` or none.
    """

    def __init__(self, models: Sequence[Recognizer], device: torch.device | None = None) -> None:
        if not models:
            raise ValueError("GroupedRecognizers needs at least one model")
        keys = {group_key(m.config) for m in models}
        if None in keys or len(keys) != 1:
            raise ValueError("these recognizers cannot be grouped (different shapes or an ungroupable configuration)")
        cfg = models[0].config
        self.config = cfg
        self.device = device if device is not None else models[0].device
        layout = _param_layout(models[0])
        self.names = [n for n, _ in layout]
        self.shapes = [s for _, s in layout]
        self.sizes = [s.numel() for s in self.shapes]
        self.D, self.H, self.dh = cfg.d_model, cfg.n_heads, cfg.head_dim
        self.encodings = [m.encoding.to(self.device) for m in models]
        self._perm = [self._channel_order(e) for e in self.encodings]
        with torch.no_grad():
            rows = [self._flat(m)[self._flat_index(perm)] for m, perm in zip(models, self._perm)]
        self.theta = torch.stack(rows).requires_grad_(True)  # [R, P]
        self.L = cfg.n_layers
        self.scale = 1.0 / math.sqrt(self.dh) if cfg.score_scale is None else float(cfg.score_scale)
        self.eps = cfg.layer_norm_eps
        self.log_scale = getattr(cfg, "length_scale", "none") == "log"  # scores of query i × ln(i) (i keys visible)
        self.act = F.relu if cfg.activation == "relu" else F.gelu
        self._tables_T = 0
        self._tables: dict[str, Any] = {}
        self._build_static()

    # ------------------------------------------------------------------ layout
    @property
    def R(self) -> int:
        return int(self.theta.shape[0])

    def params(self, theta: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Views ``name → [R, *shape]`` of ``theta`` (default ``self.theta``), differentiable."""
        t = self.theta if theta is None else theta
        return {n: piece.view(t.shape[0], *s) for n, s, piece in zip(self.names, self.shapes, t.split(self.sizes, dim=1))}

    def select(self, rows: Sequence[int]) -> None:
        """Keep only runs ``rows`` (in that order): ``theta`` and the per-run tables."""
        index = torch.tensor(list(rows), dtype=torch.long, device=self.device)
        self.theta = self.theta.detach().index_select(0, index).requires_grad_(True)
        self.encodings = [self.encodings[i] for i in rows]
        self._perm = [self._perm[i] for i in rows]
        self._build_static()
        self._tables_T = 0

    def model_layout(self, t: torch.Tensor) -> torch.Tensor:
        """``t [R, P]`` in the grouped layout (e.g. ``theta`` or its gradient) → the same values in
        each model's ``named_parameters()`` layout (the q/k channel order undone)."""
        out = torch.empty_like(t)
        for r, order in enumerate(self._perm):
            out[r, self._flat_index(order)] = t[r]
        return out

    def copy_into(self, row: int, model: Recognizer) -> None:
        """Write run ``row``'s parameters into ``model`` (same shape; the channel order undone)."""
        flat = torch.empty_like(self.theta[row])
        flat[self._flat_index(self._perm[row])] = self.theta[row].detach()
        with torch.no_grad():
            for (_, p), piece in zip(model.named_parameters(), flat.split(self.sizes)):
                p.copy_(piece.view(p.shape).to(p.device, p.dtype))

    def _flat(self, model: Recognizer) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1).to(self.device, torch.float32) for _, p in model.named_parameters()])

    def _channel_order(self, enc: Any) -> list[int]:
        """The per-head channel order of run ``enc`` under which its rotary pairs are (t, t + d_head/2).

        q·k is unchanged when the channels of q and k are permuted alike, so storing W_q and W_k
        rows in this order (and W_v, W_out untouched) is the same model; then the rotation of every
        run is ``x·C + swap_halves(x)·S`` with per-run tables C, S (:meth:`_tables_for`)."""
        dh = self.dh
        if getattr(enc, "kind", "none") != "rotary" or not enc.rotary_dim:
            return list(range(dh))
        Rr = enc.rotary_dim
        pairs = [(2 * t, 2 * t + 1) if enc.pair_layout == "interleaved" else (t, t + Rr // 2) for t in range(Rr // 2)]
        rest = [c for c in range(dh) if c >= Rr]
        half = dh // 2
        order = [0] * dh
        for t, (a, b) in enumerate(pairs):
            order[t], order[t + half] = a, b
        free = [t for t in range(Rr // 2, half)] + [t + half for t in range(Rr // 2, half)]
        for pos, c in zip(free, rest):
            order[pos] = c
        return order

    def _flat_index(self, order: list[int]) -> torch.Tensor:
        """Index into a model's flat parameter vector giving the grouped layout (q/k rows reordered)."""
        idx = torch.arange(sum(self.sizes), device=self.device)
        if order == list(range(self.dh)):
            return idx
        rows = torch.tensor([h * self.dh + c for h in range(self.H) for c in order], device=self.device)  # new row → old row
        off = 0
        for name, shape, size in zip(self.names, self.shapes, self.sizes):
            if name.endswith(("q_proj.weight", "k_proj.weight")):
                idx[off:off + size] = (off + rows[:, None] * shape[1] + torch.arange(shape[1], device=self.device)[None, :]).reshape(-1)
            elif name.endswith(("q_proj.bias", "k_proj.bias")):
                idx[off:off + size] = off + rows
            off += size
        return idx

    def _build_static(self) -> None:
        kinds = [getattr(e, "kind", "none") for e in self.encodings]
        self.rotary = any(k == "rotary" for k in kinds)
        self.absolute = any(k == "absolute" for k in kinds)
        self.biased = any(k == "bias" for k in kinds)

    def _tables_for(self, T: int) -> dict[str, Any]:
        """Per-run tables for positions 0..T−1: ``C, S [R, T, dh]`` (rotation), ``absolute [R, T, D]``,
        ``bias [R, H, T, T]`` and the causal mask ``[T, T]`` (cached for the longest T asked)."""
        if T <= self._tables_T:
            t = self._tables
            return {"C": t["C"][:, :T] if t["C"] is not None else None, "S": t["S"][:, :T] if t["S"] is not None else None,
                    "absolute": t["absolute"][:, :T] if t["absolute"] is not None else None,
                    "bias": t["bias"][:, :, :T, :T] if t["bias"] is not None else None,
                    "mask": t["mask"][:T, :T], "keep": t["keep"][:T], "logn": t["logn"][:T]}
        want, T = T, max(T, 2 * self._tables_T)
        dev, dh, D, H = self.device, self.dh, self.D, self.H
        out: dict[str, Any] = {"C": None, "S": None, "absolute": None, "bias": None}
        with torch.no_grad():
            if self.rotary:
                Cs, Ss = [], []
                half = dh // 2
                for e in self.encodings:
                    C = torch.ones(T, dh, device=dev)
                    S = torch.zeros(T, dh, device=dev)
                    if getattr(e, "kind", "none") == "rotary" and e.rotary_dim:
                        cos, sin = e.cos_sin(e.position_ids(T, device=dev))  # [1, T, R/2]
                        n = e.rotary_dim // 2
                        C[:, :n], S[:, :n] = cos[0].float(), -sin[0].float()  # a' = a·cos − b·sin
                        C[:, half:half + n], S[:, half:half + n] = cos[0].float(), sin[0].float()  # b' = a·sin + b·cos
                    Cs.append(C)
                    Ss.append(S)
                out["C"], out["S"] = torch.stack(Cs), torch.stack(Ss)
            if self.absolute:
                out["absolute"] = torch.stack([
                    e.embed(torch.zeros(1, T, D, device=dev), e.position_ids(T, device=dev))[0].float() for e in self.encodings])
            if self.biased:
                rows = []
                for e in self.encodings:
                    b = e.score_bias(e.position_ids(T, device=dev))
                    rows.append(torch.zeros(H, T, T, device=dev) if b is None else b[0].float().expand(H, T, T))
                out["bias"] = torch.stack(rows)
            i = torch.arange(T, device=dev)
            visible = i[None, :] < i[:, None]
            visible[0, 0] = True  # BOS sees no key: give it one, then zero its output
            out["mask"] = torch.zeros(T, T, device=dev).masked_fill_(~visible, float("-inf"))
            out["keep"] = (i > 0).float()[:, None]  # [T, 1]
            out["logn"] = torch.log(i.clamp(min=1).float())  # [T]: query i sees keys 0..i−1 (length_factor)
        self._tables, self._tables_T = out, T
        return self._tables_for(want)

    # ------------------------------------------------------------------ forward
    def logits(self, ids: torch.Tensor, eos: torch.Tensor | None = None, theta: torch.Tensor | None = None) -> torch.Tensor:
        """Accept logits ``float32 [R, B]`` (accept iff > 0) of every run on its strings.

        Args:
            ids: ``int64 [R, B, T]`` right-padded ``BOS w EOS`` ids (run r reads row r), or
                ``[1, B, T]`` read by every run (:func:`langclass.models.train.encode_batch` layout).
            eos: ``int64 [R or 1, B]`` EOS indices; None means every string ends at T − 1.
            theta: parameters ``[R, P]`` (default ``self.theta``).
        """
        th = self.theta if theta is None else theta
        p = self.params(th)
        R = th.shape[0]
        Rin, B, T = ids.shape
        tabs = self._tables_for(T)
        emb = p["embedding.weight"]  # [R, V, D]
        if Rin == 1:
            x = emb[:, ids[0]]  # [R, B, T, D]
        else:
            V = emb.shape[1]
            offs = (torch.arange(R, device=ids.device) * V)[:, None, None]
            x = emb.reshape(R * V, -1)[ids + offs]
        if tabs["absolute"] is not None:
            x = x + tabs["absolute"][:, None]
        if eos is None:
            eos_idx = torch.full((R, B), T - 1, dtype=torch.long, device=ids.device)
        else:
            eos_idx = eos.expand(R, B) if eos.shape[0] == 1 else eos
        for layer in range(self.L - 1):
            x = self._block(p, layer, x, tabs)
        br = torch.arange(R, device=ids.device)[:, None]
        bb = torch.arange(B, device=ids.device)[None, :]
        if self.L:
            xe = self._last_block(p, self.L - 1, x, tabs, eos_idx, br, bb)  # [R, B, D]
        else:
            xe = x[br, bb, eos_idx]
        h = self._ln(xe, p["final_norm.weight"], p["final_norm.bias"])
        out = torch.baddbmm(p["readout.bias"][:, None, :], h, p["readout.weight"].transpose(1, 2))  # [R, B, 1]
        return out[..., 0].float()

    def _ln(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        shape = (w.shape[0],) + (1,) * (x.dim() - 2) + (w.shape[-1],)
        return F.layer_norm(x, (self.D,), eps=self.eps) * w.view(shape) + b.view(shape)

    @staticmethod
    def _lin(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Per-run linear map: ``x [R, ..., in]``, ``w [R, out, in]``, ``b [R, out]`` → ``[R, ..., out]``."""
        R = x.shape[0]
        y = torch.baddbmm(b[:, None, :], x.reshape(R, -1, x.shape[-1]), w.transpose(1, 2))
        return y.view(*x.shape[:-1], w.shape[1])

    def _qkv(self, p: dict[str, torch.Tensor], pre: str, h: torch.Tensor, with_q: bool = True) -> list[torch.Tensor]:
        """Projections ``[q, k, v]`` of ``h [R, ..., D]`` (q, k rows in the run's channel order)."""
        ws = [p[f"{pre}.attn.q_proj.weight"], p[f"{pre}.attn.k_proj.weight"], p[f"{pre}.attn.v_proj.weight"]]
        bs = [p[f"{pre}.attn.q_proj.bias"], p[f"{pre}.attn.k_proj.bias"], p[f"{pre}.attn.v_proj.bias"]]
        y = self._lin(h, torch.cat(ws, dim=1), torch.cat(bs, dim=1))
        return list(y.split(self.H * self.dh, dim=-1))

    def _block(self, p: dict[str, torch.Tensor], layer: int, x: torch.Tensor, tabs: dict[str, Any]) -> torch.Tensor:
        """A full pre-norm layer on ``x [R, B, T, D]``."""
        pre = f"layers.{layer}"
        R, B, T, D = x.shape
        H, dh = self.H, self.dh
        h = self._ln(x, p[f"{pre}.ln1.weight"], p[f"{pre}.ln1.bias"])
        q, k, v = (t.view(R, B, T, H, dh) for t in self._qkv(p, pre, h))
        if self.rotary:
            C, S = tabs["C"][:, None, :, None, :], tabs["S"][:, None, :, None, :]  # [R, 1, T, 1, dh]
            q = q * C + _swap_halves(q) * S
            k = k * C + _swap_halves(k) * S
        bias = tabs["bias"]
        if self.log_scale:  # f·(s·q·k + b) = s·(f·q)·k + f·b with f = ln(i) per query row
            q = q * tabs["logn"][:, None, None]
            bias = None if bias is None else bias * tabs["logn"][:, None]
        q, k, v = (t.permute(0, 1, 3, 2, 4) for t in (q, k, v))  # [R, B, H, T, dh]
        if bias is None:  # fused kernel; the same function up to reassociation
            heads = F.scaled_dot_product_attention(q.reshape(R * B, H, T, dh), k.reshape(R * B, H, T, dh), v.reshape(R * B, H, T, dh),
                                                   attn_mask=tabs["mask"], scale=self.scale).view(R, B, H, T, dh)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale + bias[:, None]  # [R, B, H, T, T]
            heads = torch.matmul(torch.softmax(scores + tabs["mask"], dim=-1), v)
        heads = heads * tabs["keep"]  # [R, B, H, T, dh]; the BOS row (no visible key) is 0
        a = self._lin(heads.permute(0, 1, 3, 2, 4).reshape(R, B, T, H * dh), p[f"{pre}.attn.out_proj.weight"], p[f"{pre}.attn.out_proj.bias"])
        x = x + a
        f = self._lin(self.act(self._lin(self._ln(x, p[f"{pre}.ln2.weight"], p[f"{pre}.ln2.bias"]), p[f"{pre}.ff.fc1.weight"],
                                         p[f"{pre}.ff.fc1.bias"])), p[f"{pre}.ff.fc2.weight"], p[f"{pre}.ff.fc2.bias"])
        return x + f

    def _last_block(self, p: dict[str, torch.Tensor], layer: int, x: torch.Tensor, tabs: dict[str, Any], eos: torch.Tensor,
                    br: torch.Tensor, bb: torch.Tensor) -> torch.Tensor:
        """The last layer at the EOS rows only: ``x [R, B, T, D]`` → ``[R, B, D]``."""
        pre = f"layers.{layer}"
        R, B, T, D = x.shape
        H, dh = self.H, self.dh
        h = self._ln(x, p[f"{pre}.ln1.weight"], p[f"{pre}.ln1.bias"])
        parts = self._qkv(p, pre, h)
        k, v = parts[1].view(R, B, T, H, dh), parts[2].view(R, B, T, H, dh)
        q = parts[0][br, bb, eos].view(R, B, H, dh)
        if self.rotary:
            C, S = tabs["C"][:, None, :, None, :], tabs["S"][:, None, :, None, :]
            k = k * C + _swap_halves(k) * S
            Ce = tabs["C"][br, eos][:, :, None, :]  # [R, B, 1, dh]
            Se = tabs["S"][br, eos][:, :, None, :]
            q = q * Ce + _swap_halves(q) * Se
        k, v = k.permute(0, 1, 3, 2, 4), v.permute(0, 1, 3, 2, 4)  # [R, B, H, T, dh]
        scores = torch.matmul(q[:, :, :, None, :], k.transpose(-2, -1)) * self.scale  # [R, B, H, 1, T]
        if tabs["bias"] is not None:
            bias = tabs["bias"][br[:, :, None], torch.arange(H, device=x.device)[None, None, :], eos[:, :, None]]  # [R, B, H, T]
            scores = scores + bias[:, :, :, None, :]
        if self.log_scale:  # the EOS query sees eos keys
            scores = scores * tabs["logn"][eos][:, :, None, None, None]
        j = torch.arange(T, device=x.device)
        mask = torch.zeros(R, B, T, device=x.device).masked_fill_(j[None, None, :] >= eos[:, :, None], float("-inf"))
        w = torch.softmax(scores + mask[:, :, None, None, :], dim=-1)  # EOS (index ≥ 1) always sees BOS
        heads = torch.matmul(w, v)[:, :, :, 0, :].reshape(R, B, H * dh)  # [R, B, H·dh]
        xe = x[br, bb, eos] + self._lin(heads, p[f"{pre}.attn.out_proj.weight"], p[f"{pre}.attn.out_proj.bias"])
        f = self._lin(self.act(self._lin(self._ln(xe, p[f"{pre}.ln2.weight"], p[f"{pre}.ln2.bias"]), p[f"{pre}.ff.fc1.weight"],
                                         p[f"{pre}.ff.fc1.bias"])), p[f"{pre}.ff.fc2.weight"], p[f"{pre}.ff.fc2.bias"])
        return xe + f


def _swap_halves(x: torch.Tensor) -> torch.Tensor:
    """``x [..., dh]`` with its two halves exchanged: channel t ↔ t + dh/2 (the rotation partner)."""
    half = x.shape[-1] // 2
    return torch.cat((x[..., half:], x[..., :half]), dim=-1)


class StackedAdamW:
    """AdamW (decoupled weight decay, the update of ``torch.optim.AdamW``) on a stacked ``[R, P]``
    parameter tensor with one learning rate per run; the step count is shared.

    Args:
        lr: ``[R]`` learning rates; betas, eps, weight_decay as for ``torch.optim.AdamW``.
    """

    def __init__(self, theta: torch.Tensor, lr: Sequence[float], betas: tuple[float, float], eps: float, weight_decay: float) -> None:
        self.m = torch.zeros_like(theta)
        self.v = torch.zeros_like(theta)
        self.base_lr = torch.tensor(list(lr), dtype=theta.dtype, device=theta.device)[:, None]  # [R, 1]
        self.betas, self.eps, self.wd = betas, eps, weight_decay
        self.t = 0

    def step(self, theta: torch.Tensor, grad: torch.Tensor, factor: float = 1.0) -> None:
        """One update of ``theta`` in place with ``grad`` (both ``[R, P]``); lr = base lr × ``factor``."""
        b1, b2 = self.betas
        self.t += 1
        lr = self.base_lr * factor
        with torch.no_grad():
            if self.wd:
                theta.mul_(1 - lr * self.wd)
            self.m.lerp_(grad, 1 - b1)
            self.v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            denom = (self.v.sqrt() / math.sqrt(1 - b2 ** self.t)).add_(self.eps)
            theta.addcdiv_(self.m * (lr / (1 - b1 ** self.t)), denom, value=-1.0)

    def select(self, rows: Sequence[int]) -> None:
        """Keep only the moments (and learning rates) of runs ``rows``."""
        index = torch.tensor(list(rows), dtype=torch.long, device=self.m.device)
        self.m, self.v = self.m.index_select(0, index), self.v.index_select(0, index)
        self.base_lr = self.base_lr.index_select(0, index)
