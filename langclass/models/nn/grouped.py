"""R recognizers of one shape evaluated as one: stacked parameters and grouped (batched) matmuls.

:class:`GroupedRecognizers` holds the parameters of R :class:`~langclass.models.nn.recognizer.Recognizer`
models that share a shape (:func:`group_key`) — they may differ in their positional encoding (any
family of :data:`GROUPABLE_FAMILIES`), their weights, and so their seed or language — in one flat
tensor ``theta [R, P]``. :meth:`GroupedRecognizers.logits` runs all R models on ``[R, B, T]`` inputs
(each run its own batch) or on ``[1, B, T]`` inputs shared by every run, as one chain of
``torch.baddbmm`` / ``torch.matmul`` calls over a leading run axis — one pass instead of R — which
is what lets a 2-core CPU train the run grid of an experiment together
(:mod:`langclass.models.training.train_batched`).

It computes the function of :meth:`Recognizer.forward` (soft attention, strict future mask, pre-norm;
*Disentangling the Expressivity of RoPE*, §2.2 and Eq. 2) up to floating-point reassociation,
using three facts about that function:

* **The encodings are tables.** For every groupable family the encoding enters as per-position
  tables computed once by the family's own code: a rotary family as ``cos``/``sin`` per channel
  (:meth:`~langclass.models.nn.encodings.RoPE.cos_sin`; an unrotated channel or NoPE is cos 1, sin 0,
  which leaves it bit for bit), an absolute family as the rows it adds to the embedding
  (``embed`` of zeros), a bias family as its score bias. The rotation partner of each channel
  (the pair layout) is folded into the query/key projection weights (a row permutation of W_q, W_k),
  and the projections of each channel's partner are computed by the same matmul (W_q, W_k with
  the halves of every head exchanged), so the rotation of q and k together is one ``y·C + y_s·S``
  (``torch.addcmul``), whatever the runs' layouts.
* **With right padding and a strict mask, padding needs no mask.** Query i sees keys j < i; a
  query at or before EOS therefore sees only real tokens, and padded rows are never read. One
  additive ``[T, T]`` causal mask serves every string (the BOS row, which sees no key, is zeroed,
  as in :func:`~langclass.models.nn.attention.stable_softmax`).
* **Only EOS is read.** The last layer computes its query, attention and feed-forward at the EOS
  position of each string only (keys and values at every position), and the final LayerNorm and
  readout act on that row.

and two rewritings of the same function that move work from the activations to the small weights
(:meth:`GroupedRecognizers.weights`, derived once per training step for all its length buckets):
every LayerNorm's affine part is folded into the linear map after it (``(n·g + β)Wᵀ + c =
n(W diag g)ᵀ + (Wβ + c)``), and without absolute tables the first layer's input is the token
embedding alone, so its q/k/v projections are computed for the V vocabulary rows and looked up.
That first layer then needs no T × T scores for a run whose encoding has at most
:data:`~langclass.models.nn.class_attention.MAX_POSITION_CLASSES` distinct rotations (NoPE, periodic
RoPE of a small period): its queries and keys take finitely many values, and
:func:`~langclass.models.nn.class_attention.class_count_attention` attends over prefix counts of
(token, position class) key classes; the other runs of the group take the fused kernel
(:meth:`GroupedRecognizers._first_heads`; ``count_attention = False`` sends every run there).

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

from langclass.models.nn.class_attention import MAX_POSITION_CLASSES, class_count_attention, position_classes
from langclass.models.nn.recognizer import Recognizer

__all__ = ["GROUPABLE_FAMILIES", "group_key", "GroupedRecognizers", "StackedAdamW"]

GROUPABLE_FAMILIES = frozenset({"nope", "rope", "rope_periodic", "sinusoidal", "sinusoidal_periodic", "alibi"})
"""Encoding families without learnable parameters whose effect is a table (rotary, absolute or bias)."""

_SHAPE_FIELDS = ("alphabet", "d_model", "n_heads", "n_layers", "head_dim", "ff_dim", "score_scale", "length_scale", "activation",
                 "layer_norm_eps")


def group_key(config: Any) -> tuple | None:
    """A hashable key equal for configs that :class:`GroupedRecognizers` can stack, or None when the
    config cannot be grouped (hard attention, a mask other than strict, a readout other than EOS or
    with several outputs, norm other than pre, no
    biases, an odd head width, dropout, a dtype or encoding compute dtype other than float32, or an encoding outside :data:`GROUPABLE_FAMILIES`)."""
    enc = getattr(config, "encoding", None) or {}
    if (getattr(config, "attention", None) != "soft" or config.mask != "strict" or config.norm != "pre" or not config.bias
            or getattr(config, "readout", "eos") != "eos" or getattr(config, "outputs", 1) != 1
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
        count_attention: True (default) — the first layer of a qualifying run by key-class counts
            (see the module doc); False — by T × T scores for every run (the same function; for
            checks and benchmarks).

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
        half = self.dh // 2
        self._swap_rows = torch.tensor([h * self.dh + (c + half) % self.dh for h in range(self.H) for c in range(self.dh)],
                                       device=self.device)  # q/k row of each head's rotation partner
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
        self.count_attention = True  # the class-count first layer where a run qualifies (False: T × T scores for all)
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
        """Per-run tables for positions 0..T−1: ``C, S [R, T, H·dh]`` (rotation, the same for every head), ``absolute [R, T, D]``,
        ``bias [R, H, T, T]`` and the causal mask ``[T, T]`` (cached for the longest T asked)."""
        if T <= self._tables_T:
            t = self._tables
            return {"C": t["C"][:, :T] if t["C"] is not None else None, "S": t["S"][:, :T] if t["S"] is not None else None,
                    "absolute": t["absolute"][:, :T] if t["absolute"] is not None else None,
                    "bias": t["bias"][:, :, :T, :T] if t["bias"] is not None else None,
                    "mask": t["mask"][:T, :T], "keep": t["keep"][:T], "logn": t["logn"][:T], "count": t["count"]}
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
                out["C"], out["S"] = torch.stack(Cs).repeat(1, 1, H), torch.stack(Ss).repeat(1, 1, H)  # [R, T, H·dh]
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
            out["count"] = self._count_tables(out, T)
        self._tables, self._tables_T = out, T
        return self._tables_for(want)

    def _count_tables(self, tabs: dict[str, Any], T: int) -> dict[str, Any] | None:
        """Which runs take the class-count first layer (:meth:`_first_heads`) and their tables, or
        None when none does (or the first layer is not a vocabulary lookup): a run qualifies when
        its encoding adds nothing to the embedding and no score bias, and its rotation rows over
        positions 0..T−1 take at most :data:`MAX_POSITION_CLASSES` distinct values. ``classes
        [Re, T]`` is each position's class, ``C, S [Re, P, H·dh]`` each class's rotation. (A call
        whose strings are shorter than the V·P key classes takes the pairwise path, :meth:`_block`.)"""
        if self.absolute or self.L < 2:
            return None
        dev = self.device
        rows, classes, reps = [], [], []
        for r, e in enumerate(self.encodings):
            if getattr(e, "kind", "none") not in ("none", "rotary"):
                continue
            if tabs["C"] is None:
                cls, first = torch.zeros(T, dtype=torch.long, device=dev), torch.zeros(1, dtype=torch.long, device=dev)
            else:
                cls, first = position_classes(torch.cat((tabs["C"][r], tabs["S"][r]), dim=-1))
            if first.numel() <= MAX_POSITION_CLASSES:
                rows.append(r)
                classes.append(cls)
                reps.append(first)
        if not rows:
            return None
        P = max(f.numel() for f in reps)
        reps = [torch.cat((f, f.new_zeros(P - f.numel()))) for f in reps]  # unused classes: never a key, any rotation
        index = torch.tensor(rows, dtype=torch.long, device=dev)
        others = [r for r in range(len(self.encodings)) if r not in set(rows)]
        out: dict[str, Any] = {"rows": index, "everyone": not others, "classes": torch.stack(classes), "P": P, "C": None, "S": None}
        if tabs["C"] is not None:
            pick = torch.stack(reps)  # [Re, P]
            out["C"] = tabs["C"][index[:, None], pick]  # [Re, P, H·dh]
            out["S"] = tabs["S"][index[:, None], pick]
        if others:
            out["others"] = torch.tensor(others, dtype=torch.long, device=dev)
            out["inverse"] = torch.argsort(torch.tensor(rows + others, device=dev))
        return out

    # ------------------------------------------------------------------ forward
    def weights(self, theta: torch.Tensor | None = None) -> dict[str, Any]:
        """The per-run weights the forward uses, derived from ``theta`` (default ``self.theta``)
        once for any number of :meth:`logits` calls (differentiable): every LayerNorm's affine part
        folded into the linear map after it (:meth:`_fold`), the attention projections stacked
        (:meth:`_proj`), and — without absolute tables — the first layer's projections of the V
        vocabulary rows (the first layer's input is then a function of the token alone)."""
        th = self.theta if theta is None else theta
        p = self.params(th)
        out: dict[str, Any] = {"R": th.shape[0], "emb": p["embedding.weight"]}  # [R, V, D]
        for layer in range(self.L):
            pre = f"layers.{layer}"
            last = layer == self.L - 1
            kv = ("k", "ks", "v") if self.rotary else ("k", "v")
            q = ("q", "qs") if self.rotary else ("q",)
            full = ("q", "k", "qs", "ks", "v") if self.rotary else ("q", "k", "v")  # the order _block splits
            out[f"{layer}.proj"] = self._proj(p, pre, kv if last else full)
            if last:
                out[f"{layer}.q"] = self._proj(p, pre, q)
            out[f"{layer}.out"] = (p[f"{pre}.attn.out_proj.weight"].transpose(1, 2), p[f"{pre}.attn.out_proj.bias"][:, None, :])
            w1, b1 = self._fold(p[f"{pre}.ln2.weight"], p[f"{pre}.ln2.bias"], p[f"{pre}.ff.fc1.weight"], p[f"{pre}.ff.fc1.bias"])
            out[f"{layer}.ff"] = (w1.transpose(1, 2), b1[:, None, :], p[f"{pre}.ff.fc2.weight"].transpose(1, 2), p[f"{pre}.ff.fc2.bias"][:, None, :])
        if self.L > 1 and not self.absolute:
            w, b = out["0.proj"]
            out["0.table"] = torch.baddbmm(b, self._norm(out["emb"]), w).reshape(-1, w.shape[-1])  # [R·V, n·H·dh]
        w, c = self._fold(p["final_norm.weight"], p["final_norm.bias"], p["readout.weight"], p["readout.bias"])
        out["readout"] = (w.transpose(1, 2), c[:, None, :])
        return out

    def logits(self, ids: torch.Tensor, eos: torch.Tensor | None = None, theta: torch.Tensor | None = None,
               weights: dict[str, Any] | None = None) -> torch.Tensor:
        """Accept logits ``float32 [R, B]`` (accept iff > 0) of every run on its strings.

        Args:
            ids: ``int64 [R, B, T]`` right-padded ``BOS w EOS`` ids (run r reads row r), or
                ``[1, B, T]`` read by every run (:func:`langclass.models.training.train.encode_batch` layout).
            eos: ``int64 [R or 1, B]`` EOS indices; None means every string ends at T − 1.
            theta: parameters ``[R, P]`` (default ``self.theta``); ignored when ``weights`` is given.
            weights: :meth:`weights` of the parameters, to share between calls (e.g. the length
                buckets of one training step).
        """
        wt = self.weights(theta) if weights is None else weights
        R = wt["R"]
        Rin, B, T = ids.shape
        tabs = self._tables_for(T)
        emb = wt["emb"]
        V = emb.shape[1]
        rows = ids.expand(R, B, T) + (torch.arange(R, device=ids.device) * V)[:, None, None]  # rows of emb.view(R·V, D)
        x = F.embedding(rows, emb.reshape(R * V, -1))  # [R, B, T, D]
        if tabs["absolute"] is not None:
            x = x + tabs["absolute"][:, None]
        if eos is None:
            eos_idx = torch.full((R, B), T - 1, dtype=torch.long, device=ids.device)
        else:
            eos_idx = eos.expand(R, B) if eos.shape[0] == 1 else eos
        for layer in range(self.L - 1):
            x = self._block(wt, layer, x, tabs, rows if layer == 0 and "0.table" in wt else None)
        br = torch.arange(R, device=ids.device)[:, None]
        bb = torch.arange(B, device=ids.device)[None, :]
        if self.L:
            xe = self._last_block(wt, self.L - 1, x, tabs, eos_idx, br, bb)  # [R, B, D]
        else:
            xe = x[br, bb, eos_idx]
        w, c = wt["readout"]
        return torch.baddbmm(c, self._norm(xe), w)[..., 0].float()  # [R, B]

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        """LayerNorm without its affine part (folded into the next linear map by :meth:`_fold`)."""
        return F.layer_norm(x, (self.D,), eps=self.eps)

    @staticmethod
    def _fold(ln_w: torch.Tensor, ln_b: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A LayerNorm's affine part folded into the linear map after it: ``(n·g + β)·Wᵀ + c =
        n·(W·diag g)ᵀ + (W·β + c)``. ``ln_w, ln_b [R, D]``, ``w [R, out, D]``, ``b [R, out]`` →
        ``(w', b')`` of the same shapes. The products are over the small weights, not the activations."""
        return w * ln_w[:, None, :], torch.baddbmm(b[:, :, None], w, ln_b[:, :, None])[..., 0]

    def _proj(self, p: dict[str, torch.Tensor], pre: str, names: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The attention projections ``names`` (``"q"``, ``"k"``, ``"v"``; ``"qs"``/``"ks"`` for q, k with
        the halves of each head exchanged — the rotation partner, so a rotation is ``y·C + y_s·S``
        with no shuffle of the activations) stacked in that order, with ln1 folded in:
        ``wᵀ [R, D, len(names)·H·dh]``, ``b [R, 1, len(names)·H·dh]``."""
        src = {n: (p[f"{pre}.attn.{n}_proj.weight"], p[f"{pre}.attn.{n}_proj.bias"]) for n in "qkv"}
        ws, bs = [], []
        for n in names:
            wn, bn = src[n[0]]
            if len(n) == 2:
                wn, bn = wn[:, self._swap_rows], bn[:, self._swap_rows]
            ws.append(wn)
            bs.append(bn)
        w, b = self._fold(p[f"{pre}.ln1.weight"], p[f"{pre}.ln1.bias"], torch.cat(ws, dim=1), torch.cat(bs, dim=1))
        return w.transpose(1, 2), b[:, None, :]

    def _ff(self, wt: dict[str, Any], layer: int, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        """``x + FF(LN2(x))`` for ``x [R, N, D]`` and its normalized ``n`` (ln2 folded into fc1)."""
        w1, b1, w2, b2 = wt[f"{layer}.ff"]
        return torch.baddbmm(x, self.act(torch.baddbmm(b1, n, w1)), w2).add_(b2)

    def _block(self, wt: dict[str, Any], layer: int, x: torch.Tensor, tabs: dict[str, Any],
               token_rows: torch.Tensor | None = None) -> torch.Tensor:
        """A full pre-norm layer on ``x [R, B, T, D]``; ``token_rows [R, B, T]`` (rows of the flattened
        embedding) when ``x`` is the embedding itself and ``wt`` has the first layer's vocabulary table."""
        R, B, T, D = x.shape
        HD = self.H * self.dh
        count = tabs["count"] if token_rows is not None and self.count_attention else None
        if count is not None and wt["emb"].shape[1] * count["P"] >= T:  # no fewer key classes than keys: pairwise is cheaper
            count = None
        if count is not None:
            heads = self._first_heads(wt, token_rows, tabs, count)
        else:
            if token_rows is None:
                w, b = wt[f"{layer}.proj"]
                y = torch.baddbmm(b, self._norm(x).view(R, B * T, D), w).view(R, B, T, -1)
            else:
                y = F.embedding(token_rows, wt["0.table"])
            heads = self._heads(y, tabs)
        wo, bo = wt[f"{layer}.out"]
        x = torch.baddbmm(x.view(R, B * T, D), heads.reshape(R, B * T, HD), wo).add_(bo)
        return self._ff(wt, layer, x, self._norm(x)).view(R, B, T, D)

    def _heads(self, y: torch.Tensor, tabs: dict[str, Any]) -> torch.Tensor:
        """Attention heads ``[R, B, T, H, dh]`` (BOS row zeroed) from the stacked projections
        ``y [R, B, T, ·]`` of :meth:`_proj` order, by scores over all T × T position pairs."""
        R, B, T, _ = y.shape
        H, dh = self.H, self.dh
        HD = H * dh
        # split/unbind, not slices: the backward of a slice writes a zero tensor of the whole input
        qk, rest = y.split((2 * HD, y.shape[-1] - 2 * HD), dim=-1)
        qk = qk.view(R, B, T, 2, HD)
        if self.rotary:  # q, k rotated together: [R, B, T, 2, HD]
            qks, v = rest.split((2 * HD, HD), dim=-1)
            qk = torch.addcmul(qk * tabs["C"][:, None, :, None, :], qks.view(R, B, T, 2, HD), tabs["S"][:, None, :, None, :])
        else:
            v = rest
        q, k = (t.reshape(R * B, T, H, dh).transpose(1, 2) for t in qk.unbind(dim=3))  # [RB, H, T, dh]
        v = v.reshape(R * B, T, H, dh).transpose(1, 2)
        bias = tabs["bias"]
        if self.log_scale:  # f·(s·q·k + b) = s·(f·q)·k + f·b with f = ln(i) per query row
            q = q * tabs["logn"][:, None]
            bias = None if bias is None else bias * tabs["logn"][:, None]
        if bias is None:  # fused kernel; the same function up to reassociation
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=tabs["mask"], scale=self.scale)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)).view(R, B, H, T, T) * self.scale + bias[:, None]
            heads = torch.matmul(torch.softmax(scores + tabs["mask"], dim=-1).view(R * B, H, T, T), v)
        return (heads.view(R, B, H, T, dh) * tabs["keep"]).permute(0, 1, 3, 2, 4)  # the BOS row (no visible key) is 0

    def _first_heads(self, wt: dict[str, Any], token_rows: torch.Tensor, tabs: dict[str, Any], count: dict[str, Any]) -> torch.Tensor:
        """The first layer's attention heads ``[R, B, T, H, dh]``: runs whose encoding has at most
        :data:`~langclass.models.nn.class_attention.MAX_POSITION_CLASSES` distinct rotations by
        :func:`~langclass.models.nn.class_attention.class_count_attention` over (token, position class)
        key classes, the others by :meth:`_heads`; both from the vocabulary table."""
        R, B, T = token_rows.shape
        H, dh = self.H, self.dh
        HD = H * dh
        rows, everyone = count["rows"], count["everyone"]
        V = wt["emb"].shape[1]
        table = wt["0.table"].view(R, V, -1)
        tab = table if everyone else table.index_select(0, rows)  # [Re, V, n·HD]
        Re = tab.shape[0]
        if self.rotary:
            q, k, qs, ks, v = tab.split(HD, dim=-1)
            C, S = count["C"][:, None], count["S"][:, None]  # [Re, 1, P, HD]
            q = torch.addcmul(q[:, :, None] * C, qs[:, :, None], S)  # [Re, V, P, HD]
            k = torch.addcmul(k[:, :, None] * C, ks[:, :, None], S)
        else:
            q, k, v = tab.split(HD, dim=-1)
            q, k = q[:, :, None], k[:, :, None]
        P = q.shape[2]
        U = V * P
        qh, kh = q.reshape(Re, U, H, dh), k.reshape(Re, U, H, dh)
        scores = torch.matmul(qh.permute(0, 2, 1, 3), kh.permute(0, 2, 3, 1)) * self.scale  # [Re, H, U, U]
        values = v[:, :, None, :].expand(Re, V, P, HD).reshape(Re, U, H, dh)
        tokens = (token_rows if everyone else token_rows.index_select(0, rows)) - (rows * V)[:, None, None]
        classes = tokens * P + count["classes"][:, None, :T]  # [Re, B, T]
        heads = class_count_attention(scores, values, classes, tabs["logn"] if self.log_scale else None)
        heads = heads * tabs["keep"][:, :, None]
        if everyone:
            return heads
        others = count["others"]
        sub = {**tabs, "C": None if tabs["C"] is None else tabs["C"].index_select(0, others),
               "S": None if tabs["S"] is None else tabs["S"].index_select(0, others),
               "bias": None if tabs["bias"] is None else tabs["bias"].index_select(0, others)}
        rest = self._heads(F.embedding(token_rows.index_select(0, others), wt["0.table"]), sub)
        return torch.cat((heads, rest)).index_select(0, count["inverse"])  # back to run order

    def _last_block(self, wt: dict[str, Any], layer: int, x: torch.Tensor, tabs: dict[str, Any], eos: torch.Tensor,
                    br: torch.Tensor, bb: torch.Tensor) -> torch.Tensor:
        """The last layer at the EOS rows only: ``x [R, B, T, D]`` → ``[R, B, D]`` (keys and values
        at every position, the query, attention and feed-forward at EOS)."""
        R, B, T, D = x.shape
        H, dh = self.H, self.dh
        HD = H * dh
        w, b = wt[f"{layer}.proj"]
        y = torch.baddbmm(b, self._norm(x).view(R, B * T, D), w).view(R, B, T, -1)
        xe = x[br, bb, eos]  # [R, B, D]
        wq, bq = wt[f"{layer}.q"]
        q = torch.baddbmm(bq, self._norm(xe), wq)  # [R, B, HD or 2·HD]
        if self.rotary:
            k, ks, v = y.split(HD, dim=-1)
            k = torch.addcmul(k * tabs["C"][:, None], ks, tabs["S"][:, None])
            Ce, Se = tabs["C"][br, eos], tabs["S"][br, eos]  # [R, B, HD]
            qr, qs = q.split(HD, dim=-1)
            q = torch.addcmul(qr * Ce, qs, Se)
        else:
            k, v = y.split(HD, dim=-1)
        k = k.reshape(R * B, T, H, dh).transpose(1, 2)  # [RB, H, T, dh]
        v = v.reshape(R * B, T, H, dh).transpose(1, 2)
        scores = torch.matmul(q.view(R * B, H, 1, dh), k.transpose(-2, -1)).view(R, B, H, T) * self.scale
        if tabs["bias"] is not None:
            scores = scores + tabs["bias"][br[:, :, None], torch.arange(H, device=x.device)[None, None, :], eos[:, :, None]]
        if self.log_scale:  # the EOS query sees eos keys
            scores = scores * tabs["logn"][eos][:, :, None, None]
        j = torch.arange(T, device=x.device)
        mask = torch.zeros(R, B, T, device=x.device).masked_fill_(j[None, None, :] >= eos[:, :, None], float("-inf"))
        wts = torch.softmax(scores + mask[:, :, None, :], dim=-1)  # EOS (index ≥ 1) always sees BOS
        heads = torch.matmul(wts.view(R * B, H, 1, T), v).view(R, B, HD)
        wo, bo = wt[f"{layer}.out"]
        xe = torch.baddbmm(xe, heads, wo).add_(bo)
        return self._ff(wt, layer, xe, self._norm(xe))


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
