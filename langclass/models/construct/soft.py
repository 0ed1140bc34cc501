"""Assembly of the soft-attention formula construction: a :class:`FormulaPlan` → a frozen transformer.

Input ``BOS w EOS`` (BOS at position 0, EOS = readout at N + 1), strict future mask, stable softmax
(Eq. 2 of *Disentangling the Expressivity of RoPE*). The plan (:mod:`~langclass.models.construct.plan`)
fixes the stream layout, the heads, gates and constants; this module writes the weights:

* ``P ψ`` (unrotated pair, any encoding): query 1, key C_P·ψ(j) + (C_P/2)·[j = BOS], value
  [j = BOS], so the head returns α_{i,BOS} = ¬Pψ(i) exactly: if some j < i has ψ(j) then BOS trails
  the maximum by C_P/2 ≥ f_large and gets weight 0, else BOS is the unique maximum (margin C_P/2) and
  gets weight 1. Then Pψ = notbos − head (a negated literal). This is the BOS-anchored variant of
  the Li & Cotterell simulation cited in §2.2/App. C.3, chosen so that the output is exactly 0/1.
* ``MOD_m^r`` (App. C.3, Lemma 3.2): one periodic rotary pair with the table T_m(i mod m) (Eq. 24),
  query bias (cos 2πr/m, −sin 2πr/m), key C_m·[j = BOS] on the pair, a constant baseline
  C_m·b_m·[j ≠ BOS] on an unrotated pair, value [j = BOS]; C_m ≥ 2 f_large/δ_m. At position 1 only
  BOS is visible, so when 1 ≢ r (mod m) the result is gated with P⊤ ("isolate the case i = 1").
* ``Y^k ψ`` (App. D, Cor. 4.1): a conventional RoPE pair with angle g (phase g·i formed in float32),
  query bias C_Y(cos kg, −sin kg), key bias (1, 0), value ψ(j): score C_Y cos(g(i−k−j)) (Eq. 9),
  gated with P^k⊤ (i > k). Exact up to the certified range N_max^(k)(g, C_Y, F) (Eq. 10), which is
  computed on the realized scores both by :func:`langclass.core.precision.numerics.certified_length` and on
  this model's own score tensor.
* ``Y ψ`` in recency mode (docs/recency.md): zero content score, value ψ(j); the layer's ALiBi bias
  −s·(i − j) with s ≥ f_large puts weight exactly 1 on j = i − 1 at every length.
* Boolean gates: the plan's ReLU units, written by the shared feed-forward writer
  (:func:`~langclass.models.construct.assembly.write_feed_forward`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from langclass.core.logic import formulas as F
from langclass.core.base.limits import readback_limits
from langclass.core.precision.numerics import certified_length
from langclass.models.nn.attention import MultiHeadAttention
from langclass.models.nn.encodings import make_encoding
from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL, PAD
from langclass.models.construct.assembly import dense, freeze, write_feed_forward
from langclass.models.construct.plan import ConstructionOptions, FormulaPlan, Head, mod_delta, plan_formula

__all__ = ["FormulaTransformer", "build_formula_transformer", "SOURCE_SOFT"]

SOURCE_SOFT = ("Disentangling the Expressivity of RoPE: §3.2 / Lemma 3.2 and App. C.3 (MOD with periodic RoPE), "
               "§4.2–4.3 / Cor. 4.1 and App. D (Y^k with conventional RoPE, Eq. 9–10), §2.2 (NoPE = LTL[P])")


def _plan_field(name: str, doc: str) -> property:
    return property(lambda self: getattr(self.plan, name), doc=doc)


class FormulaTransformer(nn.Module):
    """A soft-attention transformer simulating one formula (see the module docstring).

    Forward: ``ids int64 [batch, seq]`` (``BOS w EOS`` right-padded, :mod:`langclass.models.nn.tokens`),
    ``valid bool [batch, seq]`` → hidden states ``[batch, seq, d_model]``. :meth:`decide` gives the
    accept logits at EOS ``[batch]``; :meth:`literal_values` the value of every formula node at every
    position ``{node: [batch, seq]}``. The plan it was assembled from is :attr:`plan`.

    Args:
        formula: the parsed formula (no S); alphabet: Σ; options: :class:`ConstructionOptions`.
        plan: an existing plan of exactly these (see :meth:`from_plan`); planned when omitted.

    Raises:
        UnsupportedError, InputError: from :func:`~langclass.models.construct.plan.plan_formula`.
    """

    # the plan's fields under the names this class has always exposed
    lit = _plan_field("literals", "``{formula node: Literal}`` of every planned node")
    time = _plan_field("times", "``{formula node: time}`` (layer l's attention writes at 2l + 1, its FFN at 2l + 2)")
    root_lit = _plan_field("root", "the literal read out at EOS")
    layers_plan = _plan_field("layers", "the layer schedule (:class:`~langclass.models.construct.plan.LayerPlan`)")
    coord_names = _plan_field("coord_names", "the name of every residual coordinate")
    c_bos = _plan_field("c_bos", "coordinate of the BOS indicator")
    c_eos = _plan_field("c_eos", "coordinate of the EOS indicator")
    c_letter = _plan_field("c_letter", "``{letter: coordinate}``")
    c_notbos = _plan_field("c_notbos", "coordinate of notbos (1 except at BOS)")
    c_zero = _plan_field("c_zero", "the constant-0 coordinate (⊥)")
    d_model = _plan_field("d_model", "width of the residual stream")
    d_head = _plan_field("d_head", "width of every head (2 × number of pairs)")
    heads_by_kind = _plan_field("heads_by_kind", "``{P, MOD, Y}`` → number of heads")
    has_mod = _plan_field("has_mod", "the formula uses MOD")
    has_y = _plan_field("has_y", "the formula uses Y")
    recency = _plan_field("recency", "Y by recency (ALiBi) heads")
    recency_slope = _plan_field("recency_slope", "slope of the recency heads (None outside recency mode)")
    moduli = _plan_field("moduli", "the MOD moduli, ascending")
    offsets = _plan_field("offsets", "the RoPE Y^k offsets (empty in recency mode)")
    f_large = _plan_field("f_large", "f_large of the dtype")
    C_p = _plan_field("C_p", "score scale of the P heads")
    C_mod = _plan_field("C_mod", "``{m: C_m}`` of the MOD heads")
    C_y = _plan_field("C_y", "score scale of the RoPE Y^k heads (None without)")
    pair_of_mod = _plan_field("pair_of_mod", "``{m: pair index}`` of the periodic pairs")
    pair_y = _plan_field("pair_y", "pair index of the RoPE Y pair (None without)")
    pair_flat = _plan_field("pair_flat", "pair index of the unrotated pair")
    encoding_name = _plan_field("encoding_name", "the formula's encoding name")

    def __init__(self, formula: F.Formula, alphabet: tuple[str, ...], options: ConstructionOptions, *,
                 plan: FormulaPlan | None = None) -> None:
        super().__init__()
        self.plan = plan if plan is not None else plan_formula(formula, alphabet, options)
        self.formula = self.plan.formula
        self.alphabet = self.plan.alphabet
        self.options = self.plan.options
        self.dtype_name = self.options.dtype
        self._assemble()

    @classmethod
    def from_plan(cls, plan: FormulaPlan) -> "FormulaTransformer":
        """Assemble the transformer of a plan made by :func:`~langclass.models.construct.plan.plan_formula`."""
        return cls(plan.formula, plan.alphabet, plan.options, plan=plan)

    # ---------------------------------------------------------------- weights
    def _head_weights(self, hd: Head, base: int, W: dict[str, torch.Tensor]) -> None:
        """Write one head's rows (channels ``base … base + d_head``) into the stacked projections."""
        plan, opt = self.plan, self.options
        D = plan.d_model
        Wq, bq, Wk, bk, Wv, Wo = W["Wq"], W["bq"], W["Wk"], W["bk"], W["Wv"], W["Wo"]
        flat0 = base + 2 * plan.pair_flat  # first channel of the unrotated pair
        if hd.kind == "P":
            bq[flat0] = 1.0
            Wk[flat0] = plan.C_p * dense(plan.row(hd.operand), D)
            Wk[flat0, plan.c_bos] += plan.C_p / 2
            Wv[flat0, plan.c_bos] = 1.0
        elif hd.kind == "MOD":
            m, r = hd.m, hd.r
            C = plan.C_mod[m]
            p0 = base + 2 * plan.pair_of_mod[m]
            bq[p0] = math.cos(2 * math.pi * r / m)
            bq[p0 + 1] = -math.sin(2 * math.pi * r / m)
            Wk[p0, plan.c_bos] = C
            bq[flat0] = 1.0
            Wk[flat0, plan.c_notbos] = C * (1 - mod_delta(m) / 2)  # C·b_m at non-BOS keys
            Wv[flat0, plan.c_bos] = 1.0
        elif plan.recency:  # Y: zero content score, the ALiBi bias −s·(i − j) picks j = i − 1
            Wv[flat0] = dense(plan.row(hd.operand), D)
        else:  # Y^k
            p0 = base + 2 * plan.pair_y
            bq[p0] = plan.C_y * math.cos(hd.k * opt.g)
            bq[p0 + 1] = -plan.C_y * math.sin(hd.k * opt.g)
            bk[p0] = 1.0
            Wv[flat0] = dense(plan.row(hd.operand), D)
        Wo[hd.raw, flat0] = 1.0

    def _attention(self, heads: Sequence[Head]) -> MultiHeadAttention:
        D, dh, H = self.plan.d_model, self.plan.d_head, len(heads)
        mha = MultiHeadAttention(D, H, d_head=dh, attention="soft", mask="strict", score_scale=1.0, bias=True)
        W = {name: torch.zeros(*shape, dtype=torch.float64) for name, shape in
             [("Wq", (H * dh, D)), ("bq", (H * dh,)), ("Wk", (H * dh, D)), ("bk", (H * dh,)), ("Wv", (H * dh, D)),
              ("Wo", (D, H * dh))]}
        for h, hd in enumerate(heads):
            self._head_weights(hd, h * dh, W)
        with torch.no_grad():
            mha.q_proj.weight.copy_(W["Wq"])
            mha.q_proj.bias.copy_(W["bq"])
            mha.k_proj.weight.copy_(W["Wk"])
            mha.k_proj.bias.copy_(W["bk"])
            mha.v_proj.weight.copy_(W["Wv"])
            mha.v_proj.bias.zero_()
            mha.out_proj.weight.copy_(W["Wo"])
            mha.out_proj.bias.zero_()
        return mha

    def _assemble(self) -> None:
        plan = self.plan
        D = plan.d_model
        self.encodings = nn.ModuleList()
        E = torch.zeros(NUM_SPECIAL + len(plan.alphabet), D, dtype=torch.float64)
        E[BOS] = dense(plan.bos_row, D)
        E[EOS] = dense(plan.eos_row, D)
        for t, row in enumerate(plan.letter_rows):
            E[NUM_SPECIAL + t] = dense(row, D)
        self.embed = nn.Embedding(E.shape[0], D, padding_idx=PAD)
        self.layers = nn.ModuleList()
        self.ffns = nn.ModuleList()
        self.layer_encoding_index: list[int] = []
        for lp in plan.layers:
            if lp.heads:
                self.layers.append(self._attention(lp.heads))
                if lp.encoding == len(self.encodings):  # first use of this encoding instance
                    spec = plan.encodings[lp.encoding]
                    self.encodings.append(make_encoding(spec.family, **spec.kwargs()))
                self.layer_encoding_index.append(lp.encoding)
            else:
                self.layers.append(None)
                self.layer_encoding_index.append(-1)
            self.ffns.append(write_feed_forward(lp.units, D))
        # readout: logit = 2·root − 1 at EOS
        self.readout = nn.Linear(D, 1)
        with torch.no_grad():
            self.embed.weight.copy_(E)
            self.readout.weight.copy_(2 * dense(plan.row(plan.root), D)[None, :])
            self.readout.bias.fill_(-1.0)
        freeze(self, self.dtype_name)

    # ---------------------------------------------------------------- running
    def forward(self, ids: torch.Tensor, valid: torch.Tensor | None = None, return_traces: bool = False):
        """Hidden states ``[batch, seq, d_model]`` of ``ids int64 [batch, seq]`` (``valid bool [batch, seq]``,
        default all True); with ``return_traces`` also one attention trace per layer (None without
        attention)."""
        x = self.embed(ids)  # [B, T, D]
        T = ids.shape[1]
        traces = []
        for attn, enc_i, ffn in zip(self.layers, self.layer_encoding_index, self.ffns):
            if attn is not None:
                enc = self.encodings[enc_i]
                pos = enc.position_ids(T, device=ids.device)
                if return_traces:
                    out, tr = attn(x, pos, valid, enc, return_trace=True)
                    traces.append(tr)
                else:
                    out = attn(x, pos, valid, enc)
                x = x + out
            elif return_traces:
                traces.append(None)
            if ffn is not None:
                x = x + ffn(x)
        return (x, traces) if return_traces else x

    def extend(self, ids: torch.Tensor, caches: list | None = None, valid: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, list]:
        """Incremental evaluation: hidden states ``[batch, t_new, d_model]`` of ``t_new`` further tokens
        ``ids int64 [batch, t_new]`` given the per-layer key/value caches of the tokens before them
        (``None`` = start of the sequence). Prefill + decode in any split equals :meth:`forward`
        (see :meth:`MultiHeadAttention.step`); memory O(t·d) plus ``t_new × t`` scores per head.

        Returns:
            ``(hidden, caches)`` with the caches extended by the new tokens.
        """
        caches = list(caches) if caches is not None else [None] * len(self.layers)
        start = next((c.length for c in caches if c is not None), 0)
        T = ids.shape[1]
        x = self.embed(ids)
        for l, (attn, enc_i, ffn) in enumerate(zip(self.layers, self.layer_encoding_index, self.ffns)):
            if attn is not None:
                enc = self.encodings[enc_i]
                pos = enc.position_ids(start + T, device=ids.device)[:, start:]
                out, caches[l] = attn.step(x, pos, caches[l], valid, enc)
                x = x + out
            if ffn is not None:
                x = x + ffn(x)
        return x, caches

    def forward_incremental(self, ids: torch.Tensor, valid: torch.Tensor | None = None, chunk: int = 256) -> torch.Tensor:
        """:meth:`forward` computed ``chunk`` query positions at a time through :meth:`extend`:
        ``[batch, seq, d_model]`` without any seq × seq matrix (long words).

        Raises:
            ValueError: ``chunk`` < 1.
        """
        if chunk < 1:
            raise ValueError("chunk must be ≥ 1")
        caches = None
        outs = []
        for s0 in range(0, ids.shape[1], chunk):
            h, caches = self.extend(ids[:, s0:s0 + chunk], caches, None if valid is None else valid[:, s0:s0 + chunk])
            outs.append(h)
        return torch.cat(outs, dim=1)

    def decide(self, ids: torch.Tensor, valid: torch.Tensor, eos_index: torch.Tensor) -> torch.Tensor:
        """Accept logits ``[batch]`` read at each row's EOS (``eos_index int64 [batch]``; > 0 ⇔ accept)."""
        x = self.forward(ids, valid)
        at = x[torch.arange(x.shape[0]), eos_index]  # [B, D]
        return self.readout(at)[:, 0]

    def literal_values(self, hidden: torch.Tensor) -> dict[F.Formula, torch.Tensor]:
        """Value of every planned formula node at every position: ``{node: [batch, seq]}`` (float64)."""
        h = hidden.double()
        out = {}
        for node, lit in self.lit.items():
            v = h[..., lit.coord]
            out[node] = (h[..., self.c_notbos] - v) if lit.neg else v
        return out

    # ---------------------------------------------------------------- description
    def y_heads(self) -> list[tuple[int, int]]:
        """(layer index, head index) of every Y^k head."""
        return [(l, h) for l, plan in enumerate(self.layers_plan) for h, hd in enumerate(plan.heads) if hd.kind == "Y"]

    def certified_lengths(self, max_length: int | None = None) -> dict[str, Any]:
        """N_max of Eq. 10 per offset k, from :func:`certified_length` (rounding model of the numerics
        module, phases formed in float32 as this model's RoPE does) and from this model's own realized
        scores. Returns ``{"n_max", "n_max_numerics", "n_max_model", "per_k": {...}}``; None entries
        without Y heads."""
        if not self.offsets:
            return {"n_max": None, "n_max_numerics": None, "n_max_model": None, "per_k": {}}
        cap = int(max_length or self.options.n_max_cap)
        per_k: dict[str, dict[str, int]] = {}
        score_dtype = self.options.dtype
        # realized scores of this model: run one word of length cap (scores are content-independent)
        ids = torch.tensor([[BOS] + [NUM_SPECIAL] * cap + [EOS]], dtype=torch.long)
        valid = torch.ones_like(ids, dtype=torch.bool)
        with torch.no_grad():
            _, traces = self.forward(ids, valid, return_traces=True)
        fl = self.f_large
        for (l, h) in self.y_heads():
            k = self.layers_plan[l].heads[h].k
            S = traces[l].scores[0, h].double().numpy()  # [T, T]
            n_model = cap
            for i in range(k + 1, cap + 2):
                row = S[i, :i]
                target = row[i - k]
                others = np.delete(row, i - k)
                if others.size and not (target - others.max() >= fl):
                    n_model = max(i - 2, k - 1)
                    break
            n_num = certified_length(k, self.options.g, self.C_y, score_dtype, cap, phase="float32")
            entry = per_k.setdefault(str(k), {"n_max_model": n_model, "n_max_numerics": n_num})
            entry["n_max_model"] = min(entry["n_max_model"], n_model)
        n_model = min(v["n_max_model"] for v in per_k.values())
        n_num = min(v["n_max_numerics"] for v in per_k.values())
        return {"n_max": min(n_model, n_num), "n_max_numerics": n_num, "n_max_model": n_model, "per_k": per_k,
                "cap": cap}

    def mod_margins(self) -> dict[str, Any]:
        """Realized App. C.3 margins of every MOD head over one period (from this model's scores):
        ``{"MOD(m,r)": min over positions 2..m+1 of |score(BOS) − score(non-BOS)|}`` and whether
        each is ≥ f_large."""
        out = {}
        if not self.moduli:
            return out
        L = max(self.moduli) + 2
        ids = torch.tensor([[BOS] + [NUM_SPECIAL] * L + [EOS]], dtype=torch.long)
        with torch.no_grad():
            _, traces = self.forward(ids, torch.ones_like(ids, dtype=torch.bool), return_traces=True)
        for h, hd in enumerate(self.layers_plan[0].heads):
            if hd.kind != "MOD":
                continue
            S = traces[0].scores[0, h].double().numpy()
            margins = [abs(S[i, 0] - S[i, 1]) for i in range(2, L + 2)]
            out[f"MOD({hd.m},{hd.r})"] = {"min_margin": float(min(margins)), "ok": bool(min(margins) >= self.f_large),
                                          "C": self.C_mod[hd.m], "delta_m": mod_delta(hd.m)}
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-ready description: sizes, constants, encodings with manifests and digests."""
        encs = []
        for enc in self.encodings:
            encs.append({"family": enc.family, "manifest": enc.manifest(), "digest": enc.digest()})
        return {
            "attention": "soft",
            "mask": "strict",
            "dtype": self.options.dtype,
            "d_model": self.d_model,
            "d_head": self.d_head,
            "layers": len(self.layers_plan),
            "heads": sum(len(p.heads) for p in self.layers_plan),
            "heads_by_kind": dict(self.heads_by_kind),
            "ffn_units": sum(0 if f is None else f[0].out_features for f in self.ffns),
            "parameters": int(sum(p.numel() for p in self.parameters())),
            "f_large": self.f_large,
            "constants": {
                "C_P": self.C_p,
                "C_mod": {str(m): c for m, c in self.C_mod.items()},
                "C_Y": self.C_y,
                "g": self.options.g if self.offsets else None,
                "target_length": self.options.target_length if (self.offsets and self.options.C_y is None) else None,
                "recency_slope": self.recency_slope if self.heads_by_kind["Y"] and self.recency else None,
            },
            "y_mode": self.options.y_mode,
            "encoding": self.encoding_name,
            "encodings": encs,
            "source": SOURCE_SOFT,
        }


def build_formula_transformer(formula: F.Formula | str, alphabet: Sequence[str],
                              options: ConstructionOptions | None = None) -> FormulaTransformer:
    """Construct the soft-attention transformer of a formula without S (plan, then assemble).

    Args:
        formula: a :class:`~langclass.core.logic.formulas.Formula` or its text.
        alphabet: Σ.
        options: :class:`ConstructionOptions` (dtype, g, C_Y or target length …).

    Returns:
        A :class:`FormulaTransformer` (parameters frozen, in ``options.dtype``) whose encoding is NoPE
        for LTL[P], periodic RoPE for LTL[P,MOD], conventional RoPE for LTL[P,Y] and both (periodic
        tables in layer 0, conventional RoPE after) for LTL[P,Y,MOD].

    Raises:
        UnsupportedError: the formula uses S (use :func:`build_brasp_transformer`).
        FormulaSyntaxError, UnknownSymbolError: bad formula text.
    """
    options = options or ConstructionOptions()
    if isinstance(formula, str):
        formula = F.parse_formula(formula, alphabet, readback_limits())  # text the product may have recorded
    return FormulaTransformer(formula, tuple(alphabet), options)
