"""Exact transformers built from formulas and B-RASP programs (no training).

Two constructions, each a small transformer with hand-set weights built from the project's attention
and encoding modules (:mod:`langclass.models.attention`, :mod:`langclass.models.encodings`):

**Soft attention, formulas** (:func:`build_formula_transformer`) — LTL[P], LTL[P,MOD], LTL[P,Y] and
LTL[P,Y,MOD] formulas (no S). Input ``BOS w EOS`` (BOS at position 0, EOS = readout at N + 1), strict
future mask, stable softmax (Eq. 2 of *Disentangling the Expressivity of RoPE*). The residual stream
has one coordinate per token kind (BOS, EOS, letters), a ``notbos`` coordinate (1 except at BOS) and
one coordinate per head / Boolean gate. Every formula node is a *literal* over the stream, x[c] or
notbos − x[c], whose value is exactly 1 or 0 at every position i ∈ [1, N+1] and 0 at BOS
(Def. C.2 / D.1 of that paper: the model *simulates* the formula).

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
  computed on the realized scores both by :func:`langclass.core.numerics.certified_length` and on
  this model's own score tensor.
* Boolean gates in ReLU feed-forward layers over literals: n-ary ∧ = ReLU(Σℓ − (n−1)),
  n-ary ∨ = ReLU(Σℓ) − ReLU(Σℓ − 1), ↔ = notbos − ReLU(a−b) − ReLU(b−a) (each 0 at BOS).

Layers are scheduled as soon as their operands exist; a layer whose attention has no work is a
feed-forward-only layer.

**Unique hard attention, B-RASP** (:func:`build_brasp_transformer`) — *Masked Hard-Attention
Transformers Recognize Exactly the Star-Free Languages*, Lemma 13 and Thm 24: one coordinate per
program vector; for every attention operation the preceding feed-forward layer computes the
i-side clause indicators α_u (one-hot over the assignments u of the score's i-variables), the
j-side score parts β_u(j) = S(u, j) and value parts V_u(j); the head (mask and leftmost/rightmost
tie of the operation, score Σ_u α_u(i)β_u(j) ∈ {0, 1}) copies [1, β_u(j_i), V_u(j_i)]; the next
feed-forward layer computes (S∧V) ∨ (¬S∧D) (the V′ trick of Lemma 13), or D when no key is visible.
Each feed-forward layer computes every Boolean function it needs as a full DNF over the stream
coordinates it reads (one ReLU unit per true minterm), composing position-wise operations into
it, so a program of attention depth K becomes K + 1 layers (Thm 24). Input: the word itself
(positions 1 … n, no BOS/EOS), readout at the last position; the empty word is accepted iff the
program declares ``empty accept``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ..core import formulas as F
from ..core.brasp import AttentionOp, BAnd, BConst, BNot, BOr, BVar, PositionOp, Program, bexpr_vars
from ..core.errors import InputError, LimitExceeded, UnsupportedError
from ..core.numerics import certified_length, delta_L, f_large, float_format
from .attention import MultiHeadAttention, hard_attention_weights
from .encodings import ALiBi, NoPE, PeriodicRoPE, PositionalEncoding, RoPE
from .tokens import BOS, EOS, NUM_SPECIAL, PAD

__all__ = [
    "ConstructionOptions", "FormulaTransformer", "BraspTransformer", "build_formula_transformer",
    "build_brasp_transformer", "TORCH_DTYPES", "MAX_FFN_INPUTS",
]

TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}

MAX_FFN_INPUTS = 14
"""Largest number of stream coordinates one DNF feed-forward target of the B-RASP compiler may read."""

SOURCE_SOFT = ("Disentangling the Expressivity of RoPE: §3.2 / Lemma 3.2 and App. C.3 (MOD with periodic RoPE), "
               "§4.2–4.3 / Cor. 4.1 and App. D (Y^k with conventional RoPE, Eq. 9–10), §2.2 (NoPE = LTL[P])")
SOURCE_HARD = ("Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages: Lemma 13, Thm 12, "
               "Thm 24 (B-RASP → masked unique-hard-attention transformer)")


@dataclass(frozen=True)
class ConstructionOptions:
    """Parameters of the soft-attention formula construction.

    Attributes:
        dtype: model dtype ``"float32"`` (default), ``"bfloat16"``, ``"float16"`` or ``"float64"``.
        g: rotation angle (radians per position) of the conventional RoPE pair used by Y^k heads
            (1.0 = the first frequency of conventional RoPE, θ_1 = β^0).
        target_length: the length L that C_Y is chosen to certify, C_Y = 1.25·f_large/δ_L(g).
        C_y: explicit C_Y (overrides ``target_length``); a smaller C_Y shortens N_max.
        C_p: explicit scale of P heads (default the power of two ≥ 2.5·f_large).
        mod_safety: C_m = mod_safety · 2 f_large / δ_m (≥ 1 required by App. C.3).
        n_max_cap: the largest length examined when computing N_max.
        y_mode: ``"rope"`` — Y^k by conventional RoPE, exact up to N_max (Cor. 4.1) — or
            ``"recency"`` — Y by a recency-bias (ALiBi) head with a large slope, exact at every
            length (docs/recency.md); Y^k is then k stacked Y heads.
        recency_slope: slope s of the recency heads (default the power of two ≥ f_large(dtype));
            must be ≥ f_large.
    """

    dtype: str = "float32"
    g: float = 1.0
    target_length: int = 300
    C_y: float | None = None
    C_p: float | None = None
    mod_safety: float = 1.25
    n_max_cap: int = 2000
    y_mode: str = "rope"
    recency_slope: float | None = None

    def __post_init__(self) -> None:
        if self.dtype not in TORCH_DTYPES:
            raise InputError(f"dtype must be one of {sorted(TORCH_DTYPES)}, got {self.dtype!r}", field="dtype")
        if not (isinstance(self.g, (int, float)) and math.isfinite(self.g) and self.g != 0):
            raise InputError("g must be a finite non-zero angle", field="g")
        if not isinstance(self.target_length, int) or self.target_length < 1:
            raise InputError("target_length must be an integer ≥ 1", field="target_length")
        if self.C_y is not None and not (math.isfinite(self.C_y) and self.C_y > 0):
            raise InputError("C_y must be a positive number", field="C_y")
        if self.C_p is not None and not (math.isfinite(self.C_p) and self.C_p > 0):
            raise InputError("C_p must be a positive number", field="C_p")
        if not self.mod_safety >= 1:
            raise InputError("mod_safety must be ≥ 1 (App. C.3 needs C ≥ 2 f_large/δ_m)", field="mod_safety")
        if self.y_mode not in ("rope", "recency"):
            raise InputError(f"y_mode must be 'rope' or 'recency', got {self.y_mode!r}", field="y_mode")
        if self.recency_slope is not None and not (math.isfinite(self.recency_slope)
                                                   and self.recency_slope >= f_large(self.dtype)):
            raise InputError(f"recency_slope must be a finite number ≥ f_large({self.dtype}) = {f_large(self.dtype):.6g} "
                             "(a smaller slope leaves weight on j < i − 1)", field="recency_slope")


# ============================================================================ soft: formulas
@dataclass
class _Lit:
    coord: int
    neg: bool = False


@dataclass
class _Head:
    kind: str  # "P" | "MOD" | "Y"
    node: Any
    operand: _Lit | None
    raw: int  # output coordinate
    m: int = 0
    r: int = 0
    k: int = 0


@dataclass
class _Gate:
    kind: str  # "and" | "or" | "iff"
    lits: list[_Lit]
    out: int


@dataclass
class _LayerPlan:
    heads: list[_Head] = field(default_factory=list)
    gates: list[_Gate] = field(default_factory=list)


def _mod_delta(m: int) -> float:
    """δ_m = min_{1≤s<m} (1 − cos 2πs/m) = 1 − cos(2π/m) (App. C.3, Eq. 24)."""
    return 1.0 - math.cos(2 * math.pi / m)


class FormulaTransformer(nn.Module):
    """A soft-attention transformer simulating one formula (see the module docstring).

    Forward: ``ids int64 [batch, seq]`` (``BOS w EOS`` right-padded, :mod:`langclass.models.tokens`),
    ``valid bool [batch, seq]`` → hidden states ``[batch, seq, d_model]``. :meth:`decide` gives the
    accept logits at EOS ``[batch]``; :meth:`literal_values` the value of every formula node at every
    position ``{node: [batch, seq]}``.
    """

    def __init__(self, formula: F.Formula, alphabet: tuple[str, ...], options: ConstructionOptions) -> None:
        super().__init__()
        self.formula = formula
        self.alphabet = alphabet
        self.options = options
        self.dtype_name = options.dtype
        self._plan(formula)
        self._build()

    # ---------------------------------------------------------------- planning
    def _plan(self, formula: F.Formula) -> None:
        ops = F.operators(formula)
        self.has_mod, self.has_y = "MOD" in ops, "Y" in ops
        if "S" in ops:
            raise UnsupportedError("the since operator S needs rightmost hard attention (star-free languages); "
                                   "build it with attention='hard' (B-RASP)", field="formula")
        fl = f_large(self.options.dtype)
        self.f_large = fl
        self.recency = self.options.y_mode == "recency"
        self.recency_slope = (float(self.options.recency_slope) if self.options.recency_slope is not None
                              else float(2 ** math.ceil(math.log2(fl)))) if self.recency else None
        self.C_p = float(self.options.C_p) if self.options.C_p is not None else float(2 ** math.ceil(math.log2(2.5 * fl)))
        self.coord_names: list[str] = []

        def new(name: str) -> int:
            self.coord_names.append(name)
            return len(self.coord_names) - 1

        self.c_bos = new("BOS")
        self.c_eos = new("EOS")
        self.c_letter = {a: new(f"letter:{a}") for a in self.alphabet}
        self.c_notbos = new("notbos")
        self.c_zero = new("zero")
        self.layers_plan: list[_LayerPlan] = []
        self.lit: dict[F.Formula, _Lit] = {}
        self.time: dict[F.Formula, int] = {}
        self.heads_by_kind: dict[str, int] = {"P": 0, "MOD": 0, "Y": 0}
        self.moduli: list[int] = []
        self.offsets: list[int] = []

        def layer(l: int) -> _LayerPlan:
            while len(self.layers_plan) <= l:
                self.layers_plan.append(_LayerPlan())
            return self.layers_plan[l]

        def head_layer(t_operand: int) -> int:  # attention of layer l reads time ≤ 2l
            return (t_operand + 1) // 2

        def ffn_layer(t_inputs: int) -> int:  # ffn of layer l reads time ≤ 2l + 1
            return max(0, t_inputs // 2)

        def gate(kind: str, lits: list[tuple[_Lit, int]], name: str) -> tuple[_Lit, int]:
            l = ffn_layer(max(t for _, t in lits))
            out = new(name)
            layer(l).gates.append(_Gate(kind, [x for x, _ in lits], out))
            return _Lit(out), 2 * l + 2

        p_top_cache: dict[int, tuple[_Lit, int]] = {}

        def need(node: F.Formula) -> tuple[_Lit, int]:
            if node in self.lit:
                return self.lit[node], self.time[node]
            res = build(node)
            self.lit[node], self.time[node] = res
            return res

        def flat(node: F.Formula, cls) -> list[F.Formula]:
            out: list[F.Formula] = []
            stack = [node]
            while stack:
                n = stack.pop()
                if type(n) is cls and n not in self.lit:
                    stack.extend(reversed(n.children))
                else:
                    out.append(n)
            return out

        def build(node: F.Formula) -> tuple[_Lit, int]:
            if isinstance(node, F.Atom):
                return _Lit(self.c_letter[node.symbol]), 0
            if isinstance(node, F.Top):
                return _Lit(self.c_notbos), 0
            if isinstance(node, F.Bottom):
                return _Lit(self.c_zero), 0
            if isinstance(node, F.Not):
                lit, t = need(node.arg)
                return _Lit(lit.coord, not lit.neg), t
            if isinstance(node, (F.And, F.Or)):
                parts = [need(c) for c in flat(node, type(node))]
                return gate("and" if isinstance(node, F.And) else "or", parts, node.text()[:60])
            if isinstance(node, F.Implies):
                a, ta = need(node.left)
                b, tb = need(node.right)
                return gate("or", [(_Lit(a.coord, not a.neg), ta), (b, tb)], node.text()[:60])
            if isinstance(node, F.Iff):
                return gate("iff", [need(node.left), need(node.right)], node.text()[:60])
            if isinstance(node, F.Past):
                lit, t = need(node.arg)
                l = head_layer(t)
                raw = new(f"head:P {node.arg.text()[:50]}")
                layer(l).heads.append(_Head("P", node, lit, raw))
                self.heads_by_kind["P"] += 1
                return _Lit(raw, True), 2 * l + 1
            if isinstance(node, F.Mod):
                raw = new(f"head:MOD({node.m},{node.r})")
                layer(0).heads.append(_Head("MOD", node, None, raw, m=node.m, r=node.r))
                self.heads_by_kind["MOD"] += 1
                if node.m not in self.moduli:
                    self.moduli.append(node.m)
                if 1 % node.m == node.r:
                    return _Lit(raw), 1
                pt = need(F.Past(F.TOP))  # P⊤: false exactly at position 1
                return gate("and", [(_Lit(raw), 1), pt], f"MOD({node.m},{node.r}) gated")
            if isinstance(node, F.Yesterday) and self.recency:
                if node.k > 1:  # Y^k ψ = Y(Y^{k−1} ψ): i > k and ψ(i − k)
                    return need(F.Yesterday(F.Yesterday(node.arg, node.k - 1), 1))
                lit, t = need(node.arg)
                l = head_layer(t)
                if self.has_mod:
                    l = max(l, 1)  # layer 0 carries the periodic table of the MOD heads
                raw = new(f"head:Y {node.arg.text()[:50]}")
                layer(l).heads.append(_Head("Y", node, lit, raw, k=1))
                self.heads_by_kind["Y"] += 1
                # no gate: at i = 1 the head reads BOS, where every literal is 0 (Y ψ false there)
                return _Lit(raw), 2 * l + 1
            if isinstance(node, F.Yesterday):
                lit, t = need(node.arg)
                l = head_layer(t)
                if self.has_mod:
                    l = max(l, 1)  # layer 0 carries the periodic table of the MOD heads
                raw = new(f"head:Y^{node.k} {node.arg.text()[:50]}")
                layer(l).heads.append(_Head("Y", node, lit, raw, k=node.k))
                self.heads_by_kind["Y"] += 1
                if node.k not in self.offsets:
                    self.offsets.append(node.k)
                g_node: F.Formula = F.TOP
                for _ in range(node.k):
                    g_node = F.Past(g_node)
                glit = need(g_node)  # P^k ⊤ ⇔ i > k (proof of Cor. 4.1 (i))
                return gate("and", [(_Lit(raw), 2 * l + 1), glit], f"Y^{node.k} gated")
            raise UnsupportedError(f"cannot construct {type(node).__name__}")

        self.root_lit, _ = need(formula)
        if not self.layers_plan:
            self.layers_plan.append(_LayerPlan())
        self.d_model = len(self.coord_names)

    # ---------------------------------------------------------------- weights
    def _build(self) -> None:
        opt = self.options
        dt = TORCH_DTYPES[opt.dtype]
        D = self.d_model
        self.moduli.sort()
        # one head layout for every layer: pairs [MOD pairs…, Y pair (angle g), unrotated pair]
        self.pair_of_mod = {m: t for t, m in enumerate(self.moduli)}
        self.pair_y = len(self.moduli) if self.offsets else None
        self.pair_flat = len(self.moduli) + (1 if self.offsets else 0)
        n_pairs = self.pair_flat + 1
        self.d_head = 2 * n_pairs
        self.encodings = nn.ModuleList()
        has_recency = self.recency and self.heads_by_kind["Y"] > 0
        if self.moduli and self.offsets:
            self.encoding_name = "rope_periodic+rope"
        elif self.moduli and has_recency:
            self.encoding_name = "rope_periodic+alibi"
        elif has_recency:
            self.encoding_name = "alibi"
        elif self.moduli:
            self.encoding_name = "rope_periodic"
        elif self.offsets:
            self.encoding_name = "rope"
        else:
            self.encoding_name = "nope"
        # constants
        self.C_mod = {m: float(opt.mod_safety * 2 * self.f_large / _mod_delta(m)) for m in self.moduli}
        if self.offsets:
            if opt.C_y is not None:
                self.C_y = float(opt.C_y)
            else:
                d = delta_L(opt.g, opt.target_length)
                if not d > 0:
                    raise InputError(f"δ_L(g) = 0 for g={opt.g}, L={opt.target_length}: g/2π looks rational", field="g")
                self.C_y = float(1.25 * self.f_large / d)
        else:
            self.C_y = None
        max_finite = float_format(opt.dtype).max_finite
        for what, C in [("C_P", self.C_p), ("C_Y", self.C_y)] + [(f"C for MOD({m},·)", c) for m, c in self.C_mod.items()]:
            if C is not None and not 4 * C < max_finite:
                raise UnsupportedError(f"{what} = {C:.6g} is too large for {opt.dtype} (largest finite value "
                                       f"{max_finite:.6g}): the score margin cannot be represented; use a wider dtype"
                                       + (", a smaller target_length" if what == "C_Y" else ""), field="options.dtype")
        # embedding: one-hot token kinds + notbos
        vocab = NUM_SPECIAL + len(self.alphabet)
        E = torch.zeros(vocab, D, dtype=torch.float64)
        E[BOS, self.c_bos] = 1
        E[EOS, self.c_eos] = 1
        E[EOS, self.c_notbos] = 1
        for t, a in enumerate(self.alphabet):
            E[NUM_SPECIAL + t, self.c_letter[a]] = 1
            E[NUM_SPECIAL + t, self.c_notbos] = 1
        self.embed = nn.Embedding(vocab, D, padding_idx=PAD)
        self.layers = nn.ModuleList()
        self.ffns = nn.ModuleList()
        self.layer_encoding_index: list[int] = []
        enc_cache: dict[str, int] = {}

        def encoding_for(layer_index: int) -> int:
            """Layer 0 carries the periodic tables when there are MOD heads; every other layer uses
            conventional RoPE when there are Y heads; otherwise the formula's single encoding."""
            plan = self.layers_plan[layer_index]
            if has_recency and any(hd.kind == "Y" for hd in plan.heads):
                # per-head slopes: s on the recency (Y) heads, 0 (NoPE) on the P heads
                enc = ALiBi(len(plan.heads), slopes=[self.recency_slope if hd.kind == "Y" else 0.0 for hd in plan.heads])
                self.encodings.append(enc)
                return len(self.encodings) - 1
            if self.moduli and (layer_index == 0 or not self.offsets):
                key = "rope_periodic"
            elif self.offsets:
                key = "rope"
            else:
                key = "nope"
            if key not in enc_cache:
                if key == "rope":
                    angles = [0.0] * n_pairs
                    angles[self.pair_y] = float(opt.g)
                    enc: PositionalEncoding = RoPE(self.d_head, rotary_dim=self.d_head, pair_layout="interleaved", angles=angles)
                elif key == "rope_periodic":
                    periods = list(self.moduli) + [1] * (n_pairs - len(self.moduli))
                    enc = PeriodicRoPE(self.d_head, periods=periods, steps=1, rotary_dim=self.d_head, pair_layout="interleaved")
                else:
                    enc = NoPE()
                self.encodings.append(enc)
                enc_cache[key] = len(self.encodings) - 1
            return enc_cache[key]

        def lit_row(lit: _Lit) -> torch.Tensor:
            row = torch.zeros(D, dtype=torch.float64)
            if lit.neg:
                row[self.c_notbos] += 1
                row[lit.coord] -= 1
            else:
                row[lit.coord] += 1
            return row

        dh = self.d_head
        for layer_index, plan in enumerate(self.layers_plan):
            if plan.heads:
                H = len(plan.heads)
                mha = MultiHeadAttention(D, H, d_head=dh, attention="soft", mask="strict", score_scale=1.0, bias=True)
                Wq = torch.zeros(H * dh, D, dtype=torch.float64)
                bq = torch.zeros(H * dh, dtype=torch.float64)
                Wk = torch.zeros(H * dh, D, dtype=torch.float64)
                bk = torch.zeros(H * dh, dtype=torch.float64)
                Wv = torch.zeros(H * dh, D, dtype=torch.float64)
                Wo = torch.zeros(D, H * dh, dtype=torch.float64)
                for h, hd in enumerate(plan.heads):
                    base = h * dh
                    flat0 = base + 2 * self.pair_flat  # first channel of the unrotated pair
                    if hd.kind == "P":
                        bq[flat0] = 1.0
                        Wk[flat0] = self.C_p * lit_row(hd.operand)
                        Wk[flat0, self.c_bos] += self.C_p / 2
                        Wv[flat0, self.c_bos] = 1.0
                    elif hd.kind == "MOD":
                        m, r = hd.m, hd.r
                        C = self.C_mod[m]
                        p0 = base + 2 * self.pair_of_mod[m]
                        bq[p0] = math.cos(2 * math.pi * r / m)
                        bq[p0 + 1] = -math.sin(2 * math.pi * r / m)
                        Wk[p0, self.c_bos] = C
                        bq[flat0] = 1.0
                        Wk[flat0, self.c_notbos] = C * (1 - _mod_delta(m) / 2)  # C·b_m at non-BOS keys
                        Wv[flat0, self.c_bos] = 1.0
                    elif self.recency:  # Y: zero content score, the ALiBi bias −s·(i − j) picks j = i − 1
                        Wv[flat0] = lit_row(hd.operand)
                    else:  # Y^k
                        k = hd.k
                        p0 = base + 2 * self.pair_y
                        bq[p0] = self.C_y * math.cos(k * opt.g)
                        bq[p0 + 1] = -self.C_y * math.sin(k * opt.g)
                        bk[p0] = 1.0
                        Wv[flat0] = lit_row(hd.operand)
                    Wo[hd.raw, flat0] = 1.0
                with torch.no_grad():
                    mha.q_proj.weight.copy_(Wq)
                    mha.q_proj.bias.copy_(bq)
                    mha.k_proj.weight.copy_(Wk)
                    mha.k_proj.bias.copy_(bk)
                    mha.v_proj.weight.copy_(Wv)
                    mha.v_proj.bias.zero_()
                    mha.out_proj.weight.copy_(Wo)
                    mha.out_proj.bias.zero_()
                self.layers.append(mha)
                self.layer_encoding_index.append(encoding_for(layer_index))
            else:
                self.layers.append(None)
                self.layer_encoding_index.append(-1)
            # feed-forward gates
            rows: list[torch.Tensor] = []
            biases: list[float] = []
            outs: list[tuple[int, int, float]] = []  # (hidden unit, out coord, weight)
            for gt in plan.gates:
                s = sum((lit_row(x) for x in gt.lits), torch.zeros(D, dtype=torch.float64))
                n = len(gt.lits)
                if gt.kind == "and":
                    rows.append(s); biases.append(-(n - 1)); outs.append((len(rows) - 1, gt.out, 1.0))
                elif gt.kind == "or":
                    rows.append(s); biases.append(0.0); outs.append((len(rows) - 1, gt.out, 1.0))
                    rows.append(s); biases.append(-1.0); outs.append((len(rows) - 1, gt.out, -1.0))
                else:  # iff
                    a, b = lit_row(gt.lits[0]), lit_row(gt.lits[1])
                    nb = torch.zeros(D, dtype=torch.float64); nb[self.c_notbos] = 1
                    rows.append(nb); biases.append(0.0); outs.append((len(rows) - 1, gt.out, 1.0))
                    rows.append(a - b); biases.append(0.0); outs.append((len(rows) - 1, gt.out, -1.0))
                    rows.append(b - a); biases.append(0.0); outs.append((len(rows) - 1, gt.out, -1.0))
            if rows:
                hidden = len(rows)
                ffn = nn.Sequential(nn.Linear(D, hidden), nn.ReLU(), nn.Linear(hidden, D))
                W2 = torch.zeros(D, hidden, dtype=torch.float64)
                for u, c, w in outs:
                    W2[c, u] = w
                with torch.no_grad():
                    ffn[0].weight.copy_(torch.stack(rows))
                    ffn[0].bias.copy_(torch.tensor(biases, dtype=torch.float64))
                    ffn[2].weight.copy_(W2)
                    ffn[2].bias.zero_()
                self.ffns.append(ffn)
            else:
                self.ffns.append(None)
        # readout: logit = 2·root − 1 at EOS
        self.readout = nn.Linear(D, 1)
        with torch.no_grad():
            self.embed.weight.copy_(E)
            row = lit_row(self.root_lit)
            self.readout.weight.copy_(2 * row[None, :])
            self.readout.bias.fill_(-1.0)
        self.to(dt)
        for p in self.parameters():
            p.requires_grad_(False)

    # ---------------------------------------------------------------- running
    def forward(self, ids: torch.Tensor, valid: torch.Tensor | None = None, return_traces: bool = False):
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
        ``[batch, seq, d_model]`` without any seq × seq matrix (long words)."""
        if chunk < 1:
            raise ValueError("chunk must be ≥ 1")
        caches = None
        outs = []
        for s0 in range(0, ids.shape[1], chunk):
            h, caches = self.extend(ids[:, s0:s0 + chunk], caches, None if valid is None else valid[:, s0:s0 + chunk])
            outs.append(h)
        return torch.cat(outs, dim=1)

    def decide(self, ids: torch.Tensor, valid: torch.Tensor, eos_index: torch.Tensor) -> torch.Tensor:
        """Accept logits ``[batch]`` read at each row's EOS (> 0 ⇔ accept)."""
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
                                          "C": self.C_mod[hd.m], "delta_m": _mod_delta(hd.m)}
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
    """Construct the soft-attention transformer of a formula without S.

    Args:
        formula: a :class:`~langclass.core.formulas.Formula` or its text.
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
        formula = F.parse_formula(formula, alphabet)
    return FormulaTransformer(formula, tuple(alphabet), options)


# ============================================================================ hard: B-RASP
# Boolean expressions over stream coordinates for the DNF compiler: ("c", coord), ("k", bool),
# ("not", e), ("and", (e, …)), ("or", (e, …)).
def _ev(e, env: dict[int, bool]) -> bool:
    kind = e[0]
    if kind == "c":
        return env[e[1]]
    if kind == "k":
        return e[1]
    if kind == "not":
        return not _ev(e[1], env)
    if kind == "and":
        return all(_ev(a, env) for a in e[1])
    if kind == "or":
        return any(_ev(a, env) for a in e[1])
    raise AssertionError(kind)


def _coords(e, acc: set[int]) -> set[int]:
    kind = e[0]
    if kind == "c":
        acc.add(e[1])
    elif kind == "not":
        _coords(e[1], acc)
    elif kind in ("and", "or"):
        for a in e[1]:
            _coords(a, acc)
    return acc


def _dsop(table: np.ndarray, m: int) -> list[tuple[tuple[int, bool], ...]]:
    """Disjoint cubes covering the True entries of a truth table over m variables (entry index =
    the variables' bits, variable 0 most significant): the True leaves of the ordered decision tree."""
    out: list[tuple[tuple[int, bool], ...]] = []
    stack: list[tuple[np.ndarray, int, tuple[tuple[int, bool], ...]]] = [(table, 0, ())]
    while stack:
        t, var, cube = stack.pop()
        if not t.any():
            continue
        if t.all():
            out.append(cube)
            continue
        half = t.size // 2
        stack.append((t[half:], var + 1, cube + ((var, True),)))
        stack.append((t[:half], var + 1, cube + ((var, False),)))
    return out


class _HardHead(nn.Module):
    """One unique-hard-attention head with its own mask and tie rule (built on
    :func:`langclass.models.attention.hard_attention_weights`).

    Score ``q_i · k_j`` with ``q = x W_q``, ``k = x W_k``; output ``weights @ (x W_v)`` written back
    through ``W_o``. Masks: none / future (j < i) / past (j > i) / non-strict variants."""

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


class BraspTransformer(nn.Module):
    """A masked unique-hard-attention transformer simulating a B-RASP program (module docstring).

    Forward: ``ids int64 [batch, n]`` letter indices (n ≥ 1) → hidden ``[batch, n, d_model]``;
    :meth:`decide` → accept logits ``[batch]`` at the last position; :meth:`vector_values` →
    ``{vector name: [batch, n]}``.
    """

    def __init__(self, program: Program, dtype: str = "float32") -> None:
        super().__init__()
        if dtype not in TORCH_DTYPES:
            raise InputError(f"dtype must be one of {sorted(TORCH_DTYPES)}", field="dtype")
        self.program = program
        self.dtype_name = dtype
        self.coord_names: list[str] = []
        self._compile()

    def _new(self, name: str) -> int:
        self.coord_names.append(name)
        return len(self.coord_names) - 1

    def _compile(self) -> None:
        prog = self.program
        depth = prog.depths()
        K = max([depth[op.name] for op in prog.ops if isinstance(op, AttentionOp)], default=0)
        self.K = K
        self.c_letter = {name: self._new(name) for name in prog.initial}
        self.c_one = self._new("one")
        self.coord_of: dict[str, int] = dict(self.c_letter)
        ops = {op.name: op for op in prog.ops}
        # per attention op: prep coords (α_u, β_u, V_u) and head output coords (flag, β̃_u, Ṽ_u)
        self.head_info: dict[str, dict] = {}
        # FFN targets per layer: list of (out coord, expression)
        ffn_targets: list[list[tuple[int, Any]]] = [[] for _ in range(K + 1)]
        head_specs: list[list[str]] = [[] for _ in range(K + 1)]

        def assignments(vs: list[str]) -> list[tuple[bool, ...]]:
            return list(itertools.product([False, True], repeat=len(vs)))

        def subst(e, side_env) -> Any:
            """B-RASP expression → stream expression; side_env(name, side) gives a stream expression."""
            if isinstance(e, BVar):
                return side_env(e.name, e.side)
            if isinstance(e, BConst):
                return ("k", e.value)
            if isinstance(e, BNot):
                return ("not", subst(e.arg, side_env))
            if isinstance(e, BAnd):
                return ("and", tuple(subst(a, side_env) for a in e.args))
            if isinstance(e, BOr):
                return ("or", tuple(subst(a, side_env) for a in e.args))
            raise AssertionError(e)

        expr_cache: dict[tuple[str, int], Any] = {}

        def vec_expr(name: str, layer: int) -> Any:
            """Expression of vector ``name`` over the coordinates readable by the FFN of ``layer``."""
            key = (name, layer)
            if key in expr_cache:
                return expr_cache[key]
            if name in self.coord_of and self.materialized_at.get(name, -1) < layer:
                out = ("c", self.coord_of[name])
            else:
                op = ops[name]
                if isinstance(op, PositionOp):
                    out = subst(op.expr, lambda n, s: vec_expr(n, layer))
                else:  # attention op of depth == layer: finalize from its head outputs
                    info = self.head_info[name]
                    Dx = subst(op.default, lambda n, s: vec_expr(n, layer))
                    if len(info["alpha"]) == 1 and info["alpha"][0] == self.c_one:
                        sel_s: Any = ("c", info["beta_t"][0])
                    else:
                        sel_s = ("or", tuple(("and", (("c", a), ("c", bt))) for a, bt in zip(info["alpha"], info["beta_t"])))
                    # value: select V_u′(j_i) by the i-side assignment u′ of V's i-variables
                    vi = info["v_ivars"]
                    terms = []
                    for u, vt in zip(info["v_assign"], info["v_t"]):
                        conds = [vec_expr(n, layer) if bit else ("not", vec_expr(n, layer)) for n, bit in zip(vi, u)]
                        terms.append(("and", tuple(conds) + (("c", vt),)))
                    sel_v = ("or", tuple(terms))
                    found = ("or", (("and", (sel_s, sel_v)), ("and", (("not", sel_s), Dx))))
                    out = ("or", (("and", (("c", info["flag"]), found)), ("and", (("not", ("c", info["flag"])), Dx))))
            expr_cache[key] = out
            return out

        self.materialized_at: dict[str, int] = {n: -1 for n in self.c_letter}
        for layer in range(K + 1):
            # (1) materialize every vector of depth == layer (attention finalize + position-wise)
            for op in prog.ops:
                if depth[op.name] == layer and op.name not in self.coord_of:
                    e = vec_expr(op.name, layer)
                    c = self._new(op.name)
                    ffn_targets[layer].append((c, e))
                    self.coord_of[op.name] = c
                    self.materialized_at[op.name] = layer
                    expr_cache.clear()
            # (2) prepare the attention ops of depth layer + 1
            for op in prog.ops:
                if not (isinstance(op, AttentionOp) and depth[op.name] == layer + 1):
                    continue
                s_ivars = sorted({n for n, s in bexpr_vars(op.score) if s == "i"})
                v_ivars = sorted({n for n, s in bexpr_vars(op.value) if s == "i"})
                alpha, beta, beta_t, vcoords, v_t = [], [], [], [], []
                s_assign = assignments(s_ivars)
                v_assign = assignments(v_ivars)
                for u in s_assign:
                    env_u = dict(zip(s_ivars, u))
                    if s_ivars:
                        a = self._new(f"{op.name}:alpha{u}")
                        conds = tuple(vec_expr(n, layer) if bit else ("not", vec_expr(n, layer)) for n, bit in env_u.items())
                        ffn_targets[layer].append((a, ("and", conds)))
                    else:
                        a = self.c_one  # one clause, always selected
                    b = self._new(f"{op.name}:beta{u}")
                    ffn_targets[layer].append((b, subst(op.score, lambda n, s, env_u=env_u: ("k", env_u[n]) if s == "i" else vec_expr(n, layer))))
                    alpha.append(a)
                    beta.append(b)
                for u in v_assign:
                    env_u = dict(zip(v_ivars, u))
                    v = self._new(f"{op.name}:value{u}")
                    ffn_targets[layer].append((v, subst(op.value, lambda n, s, env_u=env_u: ("k", env_u[n]) if s == "i" else vec_expr(n, layer))))
                    vcoords.append(v)
                flag = self._new(f"{op.name}:flag")
                for u in s_assign:
                    beta_t.append(self._new(f"{op.name}:beta~{u}"))
                for u in v_assign:
                    v_t.append(self._new(f"{op.name}:value~{u}"))
                self.head_info[op.name] = {"alpha": alpha, "beta": beta, "beta_t": beta_t, "v": vcoords, "v_t": v_t,
                                           "flag": flag, "v_ivars": v_ivars, "v_assign": v_assign, "op": op}
                head_specs[layer + 1].append(op.name)
        self.d_model = len(self.coord_names)
        D = self.d_model
        dt = TORCH_DTYPES[self.dtype_name]
        vocab = len(prog.initial)
        # embedding: initial vectors Q (several names may denote one symbol) + constant one
        self.letter_names = {sym: [n for n, s in prog.initial.items() if s == sym] for sym in prog.alphabet}
        E = torch.zeros(len(prog.alphabet), D, dtype=torch.float64)
        for t, sym in enumerate(prog.alphabet):
            for n in self.letter_names[sym]:
                E[t, self.c_letter[n]] = 1
            E[t, self.c_one] = 1
        self.embed = nn.Embedding(len(prog.alphabet), D)
        with torch.no_grad():
            self.embed.weight.copy_(E)
        self.attn_layers = nn.ModuleList()
        self.ffns = nn.ModuleList()
        self.ffn_inputs: list[int] = []
        for layer in range(K + 1):
            heads = nn.ModuleList()
            for name in head_specs[layer]:
                info = self.head_info[name]
                op: AttentionOp = info["op"]
                nq = len(info["alpha"])
                nv = 1 + len(info["beta"]) + len(info["v"])
                hd = _HardHead(D, nq, nv, op.mask, op.direction)
                Wq = torch.zeros(nq, D, dtype=torch.float64)
                Wk = torch.zeros(nq, D, dtype=torch.float64)
                for t, (a, b) in enumerate(zip(info["alpha"], info["beta"])):
                    Wq[t, a] = 1
                    Wk[t, b] = 1
                Wv = torch.zeros(nv, D, dtype=torch.float64)
                Wo = torch.zeros(D, nv, dtype=torch.float64)
                Wv[0, self.c_one] = 1
                Wo[info["flag"], 0] = 1
                for t, (b, bt) in enumerate(zip(info["beta"], info["beta_t"])):
                    Wv[1 + t, b] = 1
                    Wo[bt, 1 + t] = 1
                off = 1 + len(info["beta"])
                for t, (v, vt) in enumerate(zip(info["v"], info["v_t"])):
                    Wv[off + t, v] = 1
                    Wo[vt, off + t] = 1
                with torch.no_grad():
                    hd.q.weight.copy_(Wq)
                    hd.k.weight.copy_(Wk)
                    hd.v.weight.copy_(Wv)
                    hd.o.weight.copy_(Wo)
                heads.append(hd)
            self.attn_layers.append(heads)
            self.ffns.append(self._dnf_ffn(ffn_targets[layer], D))
        self.readout = nn.Linear(D, 1)
        with torch.no_grad():
            self.readout.weight.zero_()
            self.readout.weight[0, self.coord_of[prog.output]] = 1.0
            self.readout.bias.fill_(-0.5)
        self.to(dt)
        for p in self.parameters():
            p.requires_grad_(False)

    def _dnf_ffn(self, targets: list[tuple[int, Any]], D: int) -> nn.Module | None:
        """One 2-layer ReLU FFN computing every target as a sum of *disjoint* cubes over the
        coordinates it reads (Lemma 13: a conjunction of literals is ReLU(Σ pos − Σ neg − (|pos| − 1));
        disjoint cubes add up to 0 or 1). The cubes are the true leaves of an ordered decision tree of
        the truth table (a disjoint sum of products, never larger than the full DNF); when the
        complement needs fewer cubes the unit computes 1 − Σ (cubes of the complement)."""
        rows, biases, outs = [], [], []
        max_inputs = 0
        for out, e in targets:
            cs = sorted(_coords(e, set()))
            m = len(cs)
            max_inputs = max(max_inputs, m)
            if m > MAX_FFN_INPUTS:
                raise LimitExceeded("max_ffn_inputs", MAX_FFN_INPUTS,
                                    f"a feed-forward target of the B-RASP compiler reads {m} coordinates "
                                    f"(> {MAX_FFN_INPUTS}); split the program's Boolean expressions")
            table = np.array([_ev(e, dict(zip(cs, bits))) for bits in itertools.product([False, True], repeat=m)],
                             dtype=bool)  # index = bits in big-endian order over cs
            cubes_true = _dsop(table, m)
            cubes_false = _dsop(~table, m)
            negate = len(cubes_false) + 1 < len(cubes_true)
            if negate:  # 1 − Σ cubes of ¬e
                rows.append(torch.zeros(D, dtype=torch.float64)); biases.append(1.0); outs.append((out, 1.0))
            for cube in (cubes_false if negate else cubes_true):
                row = torch.zeros(D, dtype=torch.float64)
                npos = 0
                for var, bit in cube:
                    row[cs[var]] = 1.0 if bit else -1.0
                    npos += int(bit)
                rows.append(row); biases.append(-(npos - 1)); outs.append((out, -1.0 if negate else 1.0))
        self.ffn_inputs.append(max_inputs)
        if not rows:
            return None
        H = len(rows)
        ffn = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, D))
        W2 = torch.zeros(D, H, dtype=torch.float64)
        for u, (c, w) in enumerate(outs):
            W2[c, u] = w
        with torch.no_grad():
            ffn[0].weight.copy_(torch.stack(rows))
            ffn[0].bias.copy_(torch.tensor(biases, dtype=torch.float64))
            ffn[2].weight.copy_(W2)
            ffn[2].bias.zero_()
        return ffn

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)  # [B, n, D]
        for heads, ffn in zip(self.attn_layers, self.ffns):
            if len(heads):
                x = x + sum(h(x) for h in heads)
            if ffn is not None:
                x = x + ffn(x)
        return x

    def decide(self, ids: torch.Tensor) -> torch.Tensor:
        """Accept logits ``[batch]`` at the last position (> 0 ⇔ accept)."""
        x = self.forward(ids)
        return self.readout(x[:, -1])[:, 0]

    def vector_values(self, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{vector name: [batch, n]}`` read from the stream (initial and defined vectors)."""
        return {name: hidden[..., c].double() for name, c in self.coord_of.items()}

    def describe(self) -> dict[str, Any]:
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
            "encoding": "nope",
            "input": "w (positions 1..n, no BOS/EOS); readout at position n; empty word by the program's declaration",
            "source": SOURCE_HARD,
        }


def build_brasp_transformer(program: Program, dtype: str = "float32") -> BraspTransformer:
    """Compile a B-RASP program into a masked unique-hard-attention transformer (Lemma 13 / Thm 24).

    Raises:
        LimitExceeded: ``max_ffn_inputs`` when one Boolean target reads too many coordinates.
    """
    return BraspTransformer(program, dtype)
