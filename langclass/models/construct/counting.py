"""Assembly of the C-RASP construction: a :class:`~langclass.models.construct.counting_plan.CountingPlan`
→ a frozen soft-attention NoPE transformer with a non-strict causal mask.

Input ``BOS w_1 … w_n`` (token ids of :mod:`langclass.models.nn.tokens`, no EOS), decision read at the
last index. Each layer: one soft-attention head (non-strict mask j ≤ i, NoPE, zero queries and keys,
so uniform weights 1/(i + 1); one value channel per comparison), a layer normalization of each
channel's coordinate pair (:class:`PairNorm`), and a ReLU feed-forward layer (the shared writer
:func:`~langclass.models.construct.assembly.write_feed_forward`). See
:mod:`~langclass.models.construct.counting_plan` for the construction and its source (*Counting
Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers*, the compilation theorem).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from langclass.core.logic.crasp import CraspProgram
from langclass.models.nn.attention import MultiHeadAttention
from langclass.models.nn.encodings import NoPE
from langclass.models.nn.tokens import BOS, NUM_SPECIAL, PAD
from langclass.models.construct.assembly import TORCH_DTYPES, dense, freeze, write_feed_forward
from langclass.models.construct.counting_plan import SOURCE_COUNTING, CountingPlan, plan_counting

__all__ = ["PairNorm", "CountingTransformer", "build_counting_transformer"]


class PairNorm(nn.Module):
    """Layer normalization, without affine map, of each coordinate pair ``(c, c + 1)`` in ``coords``;
    the other coordinates pass unchanged. On a pair ``(z, −z)`` with z ≠ 0 it returns
    ``(z, −z)/|z|`` (mean 0, variance z²). ``eps`` is added to the variance (default: the dtype's
    smallest normal number, so an exact 0 gives 0 instead of NaN).

    Shapes: ``x [..., d_model]`` → same."""

    def __init__(self, coords: list[int], eps: float = 0.0) -> None:
        super().__init__()
        idx = torch.tensor([[c, c + 1] for c in coords], dtype=torch.long).reshape(-1)
        self.register_buffer("idx", idx, persistent=False)
        self.eps = float(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = x[..., self.idx].unflatten(-1, (-1, 2))  # [..., m, 2]
        y = torch.nn.functional.layer_norm(g, (2,), eps=self.eps)
        out = x.clone()
        out[..., self.idx] = y.flatten(-2)
        return out


class CountingTransformer(nn.Module):
    """The transformer of a C-RASP program (module docstring).

    Forward: ``ids int64 [batch, seq]`` (``BOS w``, right-padded with ``PAD``), ``valid bool [batch,
    seq]`` → hidden states ``[batch, seq, d_model]``. :meth:`decide` gives the accept logits at each
    row's last index ``[batch]``; :meth:`boolean_values` the value of every planned Boolean op at every
    index. The plan is :attr:`plan`.
    """

    def __init__(self, plan: CountingPlan, dtype: str = "float32") -> None:
        super().__init__()
        if dtype not in TORCH_DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}")
        self.plan = plan
        self.dtype_name = dtype
        D = plan.d_model
        E = torch.zeros(NUM_SPECIAL + len(plan.alphabet), D, dtype=torch.float64)
        E[BOS, plan.c_bos] = 1.0
        for t, a in enumerate(plan.alphabet):
            E[NUM_SPECIAL + t, plan.c_notbos] = 1.0
            E[NUM_SPECIAL + t, plan.c_letter[a]] = 1.0
        self.embed = nn.Embedding(E.shape[0], D, padding_idx=PAD)
        self.encoding = NoPE()
        self.attn = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.ffns = nn.ModuleList()
        self.has_attention: list[bool] = []
        tiny = torch.finfo(TORCH_DTYPES[dtype]).tiny
        for layer in plan.layers:
            m = len(layer.channels)
            if m:
                mha = MultiHeadAttention(D, 1, d_head=m, attention="soft", mask="nonstrict", score_scale=1.0, bias=True)
                Wv = torch.zeros(m, D, dtype=torch.float64)
                Wo = torch.zeros(D, m, dtype=torch.float64)
                for h, ch in enumerate(layer.channels):
                    Wv[h] = dense(ch.value, D)
                    Wo[ch.coord, h] = 1.0
                    Wo[ch.coord + 1, h] = -1.0
                with torch.no_grad():
                    for lin in (mha.q_proj, mha.k_proj):  # all scores 0: uniform attention
                        lin.weight.zero_()
                        lin.bias.zero_()
                    mha.v_proj.weight.copy_(Wv)
                    mha.v_proj.bias.zero_()
                    mha.out_proj.weight.copy_(Wo)
                    mha.out_proj.bias.zero_()
                self.attn.append(mha)
                self.norms.append(PairNorm([ch.coord for ch in layer.channels], eps=tiny))
            else:
                self.attn.append(nn.Identity())
                self.norms.append(nn.Identity())
            self.has_attention.append(bool(m))
            ffn = write_feed_forward(layer.units, D)
            self.ffns.append(ffn if ffn is not None else nn.Identity())
        self.readout = nn.Linear(D, 1)
        with torch.no_grad():
            self.embed.weight.copy_(E)
            self.readout.weight.copy_(dense(plan.readout, D)[None, :])
            self.readout.bias.fill_(plan.readout_bias)
        freeze(self, dtype)

    def forward(self, ids: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states ``[batch, seq, d_model]`` of ``ids int64 [batch, seq]``."""
        x = self.embed(ids)
        T = ids.shape[1]
        pos = self.encoding.position_ids(T, device=ids.device)
        for attn, norm, ffn, has in zip(self.attn, self.norms, self.ffns, self.has_attention):
            if has:
                x = norm(x + attn(x, pos, valid, self.encoding))
            x = x + ffn(x) if not isinstance(ffn, nn.Identity) else x
        return x

    def extend(self, ids: torch.Tensor, caches: list | None = None) -> tuple[torch.Tensor, list]:
        """Incremental evaluation: hidden states ``[batch, t_new, d_model]`` of ``t_new`` further tokens
        given the per-layer key/value caches of the tokens before them (None = start); prefill and
        decode in any split equal :meth:`forward` up to the matmul blocking (long words without a
        seq × seq score matrix).

        Returns:
            ``(hidden, caches)``.
        """
        caches = list(caches) if caches is not None else [None] * len(self.attn)
        start = next((c.length for c in caches if c is not None), 0)
        T = ids.shape[1]
        x = self.embed(ids)
        pos = self.encoding.position_ids(start + T, device=ids.device)[:, start:]
        for l, (attn, norm, ffn, has) in enumerate(zip(self.attn, self.norms, self.ffns, self.has_attention)):
            if has:
                out, caches[l] = attn.step(x, pos, caches[l], None, self.encoding)
                x = norm(x + out)
            x = x + ffn(x) if not isinstance(ffn, nn.Identity) else x
        return x, caches

    def decide(self, ids: torch.Tensor, valid: torch.Tensor | None = None,
               last_index: torch.Tensor | None = None) -> torch.Tensor:
        """Accept logits ``[batch]`` (> 0 ⇔ accept) read at ``last_index int64 [batch]`` (default: the
        last column, for unpadded batches)."""
        x = self.forward(ids, valid)
        if last_index is None:
            at = x[:, -1]
        else:
            at = x[torch.arange(x.shape[0]), last_index]
        return self.readout(at)[:, 0]

    def boolean_values(self, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every planned Boolean op at every index: ``{name: [batch, seq]}`` (float64; 0 at BOS)."""
        h = hidden.double()
        notbos = h[..., self.plan.c_notbos]
        return {name: (notbos - h[..., lit.coord]) if lit.neg else h[..., lit.coord]
                for name, lit in self.plan.literals.items()}

    def describe(self) -> dict[str, Any]:
        """JSON-ready description: sizes, the program's depth, the source."""
        s = self.plan.summary()
        return {
            "attention": "soft", "mask": "nonstrict", "encoding": "nope", "dtype": self.dtype_name,
            "d_model": s["d_model"], "layers": s["layers"], "attention_layers": s["attention_layers"],
            "heads": s["heads"], "channels": s["channels"], "ffn_units": s["ffn_units"],
            "parameters": int(sum(p.numel() for p in self.parameters())),
            "program_depth": s["program_depth"],
            "normalization": "layer normalization of each comparison channel's coordinate pair (no affine map)",
            "input": "BOS w (BOS at index 0, letter i at index i); readout at the last index (BOS for the empty word)",
            "source": SOURCE_COUNTING,
        }


def build_counting_transformer(program: CraspProgram, dtype: str = "float32") -> CountingTransformer:
    """Compile a C-RASP program into an exact soft-attention NoPE transformer with a non-strict mask
    (plan, then assemble; the compilation theorem of *Counting Like Transformers*).

    Args:
        program: a :class:`~langclass.core.logic.crasp.CraspProgram`.
        dtype: ``"float32"`` (default), ``"float64"``, ``"bfloat16"`` or ``"float16"``.

    Returns:
        A frozen :class:`CountingTransformer`; exact (every Boolean coordinate exactly 0/1) up to the
        certified length of :func:`langclass.core.precision.counting.certified_counting_length`.
    """
    return CountingTransformer(plan_counting(program), dtype)
