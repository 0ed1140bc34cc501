"""Assembly of the B-RASP construction: a :class:`BraspPlan` → a masked unique-hard-attention transformer.

*Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*, Lemma 13 and Thm 24
(the plan, :mod:`~langclass.models.construct.brasp_plan`, explains the layout). Input: the word
itself (positions 1 … n, no BOS/EOS), readout at the last position; the empty word is accepted iff
the program declares ``empty accept``. Each head has its operation's own mask and leftmost/rightmost
tie (:func:`langclass.models.nn.attention.hard_attention_weights`); the feed-forward layers are the
plan's disjoint-cube units written by the shared writer
(:func:`~langclass.models.construct.assembly.write_feed_forward`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from langclass.core.logic.brasp import AttentionOp, Program
from langclass.core.base.errors import InputError
from langclass.models.nn.attention import hard_attention_weights
from langclass.models.nn.encodings import make_encoding
from langclass.models.construct.assembly import TORCH_DTYPES, SparseFeedForward, dense, freeze, write_feed_forward
from langclass.models.construct.brasp_plan import BraspPlan, HardHead, plan_brasp

__all__ = ["BraspTransformer", "build_brasp_transformer", "SOURCE_HARD"]

SOURCE_HARD = ("Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages: Lemma 13, Thm 12, "
               "Thm 24 (B-RASP → masked unique-hard-attention transformer)")


DENSE_FFN_MAX_D = 1024
"""Streams at most this wide run their feed-forward layers densely (``BraspTransformer.ffns``): the sparse
gather of :class:`~langclass.models.construct.assembly.SparseFeedForward` holds batch × positions ×
units × inputs entries, more than the dense product costs at this width. Both are exact (0/1 inputs,
±1 weights, integer biases), so the choice changes no value."""


class _HardHead(nn.Module):
    """One unique-hard-attention head with its own mask and tie rule (built on
    :func:`langclass.models.nn.attention.hard_attention_weights`).

    Score ``q_i · k_j`` with ``q = x W_q``, ``k = x W_k``; output ``weights @ (x W_v)`` written back
    through ``W_o``. Masks: none / future (j < i) / past (j > i) / non-strict variants.
    Shapes: ``x [batch, n, d_model]`` → ``[batch, n, d_model]``."""

    def __init__(self, d_model: int, d_qk: int, d_v: int, mask: str, tie: str) -> None:
        super().__init__()
        self.mask = mask
        self.tie = tie
        self.q = nn.Linear(d_model, d_qk, bias=False)
        self.k = nn.Linear(d_model, d_qk, bias=False)
        self.v = nn.Linear(d_model, d_v, bias=False)
        self.o = nn.Linear(d_v, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        i = torch.arange(T, device=x.device)[:, None]
        j = torch.arange(T, device=x.device)[None, :]
        vis = {"none": torch.ones(T, T, dtype=torch.bool, device=x.device), "future": j < i, "past": j > i,
               "future_nonstrict": j <= i, "past_nonstrict": j >= i}[self.mask][None]
        scores = self.q(x) @ self.k(x).transpose(-1, -2)  # [B, T, T]
        w = hard_attention_weights(scores, vis, self.tie)  # one-hot rows; zero rows when nothing is visible
        return self.o(w @ self.v(x))


def _head(info: HardHead, one: int, D: int) -> _HardHead:
    """The head of one attention operation: query α_t, key β_t; value [1, β_t, V_t] → [flag, β̃_t, Ṽ_t]."""
    nq = len(info.alpha)
    nv = 1 + len(info.beta) + len(info.v)
    hd = _HardHead(D, nq, nv, info.op.mask, info.op.direction)
    Wq = torch.zeros(nq, D, dtype=torch.float64)
    Wk = torch.zeros(nq, D, dtype=torch.float64)
    for t, (a, b) in enumerate(zip(info.alpha, info.beta)):
        Wq[t, a] = 1
        Wk[t, b] = 1
    Wv = torch.zeros(nv, D, dtype=torch.float64)
    Wo = torch.zeros(D, nv, dtype=torch.float64)
    Wv[0, one] = 1
    Wo[info.flag, 0] = 1
    for t, (b, bt) in enumerate(zip(info.beta, info.beta_t)):
        Wv[1 + t, b] = 1
        Wo[bt, 1 + t] = 1
    off = 1 + len(info.beta)
    for t, (v, vt) in enumerate(zip(info.v, info.v_t)):
        Wv[off + t, v] = 1
        Wo[vt, off + t] = 1
    with torch.no_grad():
        hd.q.weight.copy_(Wq)
        hd.k.weight.copy_(Wk)
        hd.v.weight.copy_(Wv)
        hd.o.weight.copy_(Wo)
    return hd


class BraspTransformer(nn.Module):
    """A masked unique-hard-attention transformer simulating a B-RASP program (module docstring).

    Forward: ``ids int64 [batch, n]`` letter indices (n ≥ 1) → hidden ``[batch, n, d_model]``;
    :meth:`decide` → accept logits ``[batch]`` at the last position; :meth:`vector_values` →
    ``{vector name: [batch, n]}``. The plan it was assembled from is :attr:`plan`.

    Raises:
        InputError: unknown ``dtype``.
        LimitExceeded: ``max_ffn_inputs`` (from the plan).
    """

    def __init__(self, program: Program, dtype: str = "float32", *, plan: BraspPlan | None = None) -> None:
        super().__init__()
        if dtype not in TORCH_DTYPES:
            raise InputError(f"dtype must be one of {sorted(TORCH_DTYPES)}", field="dtype")
        self.plan = plan if plan is not None else plan_brasp(program)
        self.program = self.plan.program
        self.dtype_name = dtype
        self.K = self.plan.K
        self.coord_names = list(self.plan.coord_names)
        self.c_letter = dict(self.plan.c_letter)
        self.c_one = self.plan.c_one
        self.coord_of = dict(self.plan.coord_of)
        self.d_model = self.plan.d_model
        self.ffn_inputs = [layer.max_inputs for layer in self.plan.layers]
        self.letter_names = {sym: [n for n, s in self.program.initial.items() if s == sym] for sym in self.program.alphabet}
        # B-RASP[MOD]: the marks MOD_r come from the finite-image PE e_(i mod m) on coordinates 0..m−1 (Thm 19)
        spec = self.plan.encoding
        self.encoding = None if spec is None else make_encoding(spec.family, **spec.kwargs())
        self._assemble()

    @classmethod
    def from_plan(cls, plan: BraspPlan, dtype: str = "float32") -> "BraspTransformer":
        """Assemble the transformer of a plan made by :func:`~langclass.models.construct.brasp_plan.plan_brasp`."""
        return cls(plan.program, dtype, plan=plan)

    def _assemble(self) -> None:
        plan, D = self.plan, self.plan.d_model
        E = torch.zeros(len(plan.letter_rows), D, dtype=torch.float64)
        for t, row in enumerate(plan.letter_rows):
            E[t] = dense(row, D)
        self.embed = nn.Embedding(len(plan.letter_rows), D)
        with torch.no_grad():
            self.embed.weight.copy_(E)
        self.attn_layers = nn.ModuleList()
        self.ffns = nn.ModuleList()
        self.sparse_ffns = nn.ModuleList()
        for layer in plan.layers:
            self.attn_layers.append(nn.ModuleList(_head(info, plan.c_one, D) for info in layer.heads))
            self.ffns.append(write_feed_forward(layer.units, D))
            self.sparse_ffns.append(SparseFeedForward(layer.units))
        self.readout = nn.Linear(D, 1)
        with torch.no_grad():
            self.readout.weight.zero_()
            self.readout.weight[0, plan.output] = 1.0
            self.readout.bias.fill_(-0.5)
        freeze(self, self.dtype_name)

    def _head_groups(self) -> list[list[tuple]]:
        """Per layer, the heads grouped by (mask, tie) in gather form: every row of a head's W_q, W_k,
        W_v and every column of its W_o has exactly one non-zero entry (:func:`_head`), so a group is
        ``(mask, tie, q_idx, q_w, k_idx, k_w, v_idx, v_w, o_idx, o_w)`` with ``*_idx`` long ``[H, e]``
        (coordinates) and ``*_w`` ``[H, e]`` (their weights; 0 on padding). It computes exactly what its
        heads compute one by one (:class:`_HardHead`): the same 0/1 products and integer sums."""
        key = (self.embed.weight.dtype, self.embed.weight.device)
        if getattr(self, "_groups_key", None) == key:
            return self._groups

        def rows(mats: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            width = max(m.shape[0] for m in mats)
            idx = torch.zeros(len(mats), width, dtype=torch.long, device=key[1])
            w = torch.zeros(len(mats), width, dtype=key[0], device=key[1])
            for h, m in enumerate(mats):
                if (m != 0).sum(dim=1).max() > 1:  # pragma: no cover - _head writes one entry per row
                    raise AssertionError("a head weight row with several entries")
                idx[h, :m.shape[0]] = m.abs().argmax(dim=1)
                w[h, :m.shape[0]] = m.gather(1, idx[h, :m.shape[0], None])[:, 0]
            return idx, w

        groups = []
        for heads in self.attn_layers:
            by: dict[tuple[str, str], list[_HardHead]] = {}
            for h in heads:
                by.setdefault((h.mask, h.tie), []).append(h)
            layer = []
            for (mask, tie), hs in by.items():
                layer.append((mask, tie, *rows([h.q.weight for h in hs]), *rows([h.k.weight for h in hs]),
                              *rows([h.v.weight for h in hs]), *rows([h.o.weight.T for h in hs])))
            groups.append(layer)
        self._groups, self._groups_key = groups, key
        return groups

    def forward(self, ids: torch.Tensor, *, query_block: int | None = None,
                between: Callable[[], None] | None = None) -> torch.Tensor:
        """Hidden states ``[batch, n, d_model]`` of letter indices ``ids int64 [batch, n]``. The heads of
        a layer run together, grouped by mask and tie, and the feed-forward layers sparsely
        (:meth:`_head_groups`, :class:`~langclass.models.construct.assembly.SparseFeedForward`); both
        equal the dense modules bit for bit.

        ``query_block``: compute the scores ``query_block`` query rows at a time (``[batch, heads,
        query_block, n]`` instead of ``[batch, heads, n, n]``; rows are independent, so the result is the
        same bit for bit). ``between``: called after every layer and every query block (a verification
        checks its deadline and cancellation there; what it raises propagates)."""
        x = self.embed(ids)  # [B, n, D]
        B, T = ids.shape
        if self.encoding is not None:  # positions 1..n
            x = self.encoding.embed(x, self.encoding.position_ids(T, device=ids.device))
        i = torch.arange(T, device=ids.device)[:, None]
        j = torch.arange(T, device=ids.device)[None, :]
        vis = {"none": torch.ones(T, T, dtype=torch.bool, device=ids.device), "future": j < i, "past": j > i,
               "future_nonstrict": j <= i, "past_nonstrict": j >= i}
        for groups, ffn, dense_ffn in zip(self._head_groups(), self.sparse_ffns, self.ffns):
            updates = []
            for mask, tie, qi, qw, ki, kw, vi, vw, oi, ow in groups:
                q = (x[..., qi] * qw).transpose(1, 2)  # [B, H, T, e]
                k = (x[..., ki] * kw).transpose(1, 2)
                v = (x[..., vi] * vw).transpose(1, 2)  # [B, H, T, f]
                step = T if query_block is None else max(1, int(query_block))
                ys = []
                for r0 in range(0, T, step):
                    w = hard_attention_weights(q[:, :, r0:r0 + step] @ k.transpose(-1, -2),
                                               vis[mask][None, None, r0:r0 + step], tie)  # [B, H, rows, T]
                    ys.append(w @ v)
                    if between is not None and step < T:
                        between()
                y = ((torch.cat(ys, dim=2) if len(ys) > 1 else ys[0]) * ow[None, :, None, :]
                     ).transpose(1, 2).reshape(B, T, -1)  # [B, T, H·f]
                updates.append((oi.reshape(-1), y))
            for oi, y in updates:  # all heads read the layer input, then write (in place: x is this forward's own)
                x.index_add_(-1, oi, y)
            if ffn.units and self.d_model <= DENSE_FFN_MAX_D:  # narrow stream: one matrix product is faster
                x.add_(dense_ffn(x))
            elif ffn.units:
                ffn.add_to(x)
            if between is not None:
                between()
        return x

    def decide(self, ids: torch.Tensor) -> torch.Tensor:
        """Accept logits ``[batch]`` at the last position (> 0 ⇔ accept)."""
        x = self.forward(ids)
        return self.readout(x[:, -1])[:, 0]

    def vector_values(self, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{vector name: [batch, n]}`` read from the stream (initial and defined vectors)."""
        return {name: hidden[..., c].double() for name, c in self.coord_of.items()}

    def describe(self) -> dict[str, Any]:
        """JSON-ready description: sizes, masks, tie directions, source."""
        return {
            "attention": "hard",
            "tie": sorted({op.direction for op in self.program.ops if isinstance(op, AttentionOp)}),
            "masks": sorted({op.mask for op in self.program.ops if isinstance(op, AttentionOp)}),
            "dtype": self.dtype_name,
            "d_model": self.d_model,
            "layers": self.K + 1,
            "program_depth": self.program.depth,
            "heads": sum(len(h) for h in self.attn_layers),
            "ffn_units": sum(0 if f is None else f[0].out_features for f in self.ffns),
            "parameters": int(sum(p.numel() for p in self.parameters())),
            "encoding": "nope" if self.encoding is None else self.encoding.family,
            "encodings": [] if self.encoding is None else [{"family": self.encoding.family,
                                                           "manifest": self.encoding.manifest(),
                                                           "digest": self.encoding.digest()}],
            "modulus": self.program.modulus,
            "input": "w (positions 1..n, no BOS/EOS); readout at position n; empty word by the program's declaration",
            "source": SOURCE_HARD,
        }


def build_brasp_transformer(program: Program, dtype: str = "float32") -> BraspTransformer:
    """Compile a B-RASP program into a masked unique-hard-attention transformer (plan, then assemble;
    *Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*, Lemma 13 / Thm 24).

    Args:
        program: a parsed :class:`~langclass.core.logic.brasp.Program`.
        dtype: ``"float32"`` (default), ``"float64"``, ``"bfloat16"`` or ``"float16"``.

    Raises:
        InputError: unknown ``dtype``.
        LimitExceeded: ``max_ffn_inputs`` when one Boolean target reads too many coordinates.
    """
    return BraspTransformer(program, dtype)
