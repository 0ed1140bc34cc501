"""Plan stage of the soft-attention formula construction (no torch).

:func:`plan_formula` turns an LTL[P], LTL[P,MOD], LTL[P,Y] or LTL[P,Y,MOD] formula (no S) into a
:class:`FormulaPlan`: the residual-stream layout (one coordinate per token kind, ``notbos``,
``zero`` and one per head / gate), the literal of every formula node, the heads and Boolean gates of
every layer (the layer schedule), the ReLU units of every feed-forward layer, the score constants
and the positional encoding of every attention layer. Everything is a frozen value built from
numbers and the formula alone, so a plan can be built and inspected without torch (like the craft
stage of tracr); :mod:`langclass.models.construct.soft` writes it as weights.

Sources: *Disentangling the Expressivity of RoPE* — §2.2 (LTL[P] with NoPE and BOS), §3.2 / Lemma 3.2
and App. C.3 (MOD_m^r with periodic RoPE, Eq. 24), §4.2–4.3 / Cor. 4.1 and App. D (Y^k with
conventional RoPE, Eq. 9–10), Def. C.2 / D.1 (the model simulates the formula: every node is a
literal that is exactly 0 or 1); the recency variant of Y is this project's (docs/recency.md).

Schedule: layer l's attention reads values of time ≤ 2l and writes at time 2l + 1; its feed-forward
layer reads time ≤ 2l + 1 and writes at time 2l + 2. Every node is placed as early as its operands
allow; a layer whose attention has no work is a feed-forward-only layer.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from langclass.core.logic import formulas as F
from langclass.core.base.limits import readback_limits
from langclass.core.precision.encoding_families import COMPOSITE_SEPARATOR, EncodingFamily
from langclass.core.base.errors import InputError, UnsupportedError
from langclass.core.precision.numerics import delta_L, f_large, float_format
from langclass.models.construct.gates import Gate, Literal, ReluUnit, Row, gate_units, literal_row

__all__ = [
    "DTYPES", "ConstructionOptions", "Head", "EncodingSpec", "LayerPlan", "FormulaPlan", "plan_formula", "mod_delta",
]

DTYPES = ("float32", "float64", "bfloat16", "float16")
"""The model dtypes a construction may use."""


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

    Raises:
        InputError: a field out of range (``field`` names it).
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
        if self.dtype not in DTYPES:
            raise InputError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}", field="dtype")
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


def mod_delta(m: int) -> float:
    """δ_m = min_{1≤s<m} (1 − cos 2πs/m) = 1 − cos(2π/m) (App. C.3, Eq. 24)."""
    return 1.0 - math.cos(2 * math.pi / m)


@dataclass(frozen=True)
class Head:
    """One soft-attention head: ``kind`` ``"P"`` (reads ``operand``, writes ¬Pψ), ``"MOD"`` (``m``, ``r``)
    or ``"Y"`` (offset ``k``, reads ``operand``); its raw output goes to coordinate ``raw``."""

    kind: str
    node: F.Formula
    operand: Literal | None
    raw: int
    m: int = 0
    r: int = 0
    k: int = 0


@dataclass(frozen=True)
class EncodingSpec:
    """The positional encoding of attention layers: ``family`` and the ``make_encoding`` arguments
    ``arguments`` as ``((name, value), …)`` (sequences as tuples)."""

    family: EncodingFamily
    arguments: tuple[tuple[str, Any], ...] = ()

    def kwargs(self) -> dict[str, Any]:
        """The arguments as a dict, tuples turned into lists."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.arguments}


@dataclass(frozen=True)
class LayerPlan:
    """One transformer layer: the attention ``heads`` (empty: no attention), the Boolean ``gates`` of
    its feed-forward layer and their ReLU ``units``, and the index of its attention's encoding in
    :attr:`FormulaPlan.encodings` (−1 without attention)."""

    heads: tuple[Head, ...] = ()
    gates: tuple[Gate, ...] = ()
    units: tuple[ReluUnit, ...] = ()
    encoding: int = -1


@dataclass(frozen=True)
class FormulaPlan:
    """The complete plan of one formula's transformer (module docstring); every field is derived from
    the formula, the alphabet and the options.

    Attributes:
        coord_names: the name of every residual coordinate (``d_model`` = its length).
        c_bos, c_eos, c_notbos, c_zero, c_letter: coordinates of the token kinds, of ``notbos`` (1 except at
            BOS), of the constant 0 and of each letter.
        layers: the layer schedule.
        literals: the literal of every planned formula node; ``times`` the time it is available.
        root: the literal read out at EOS.
        heads_by_kind: number of P, MOD and Y heads.
        moduli: the MOD moduli (ascending); ``offsets`` the Y^k offsets in order of appearance (empty in
            recency mode).
        f_large, C_p, C_mod, C_y, recency_slope: f_large of the dtype and the score constants
            (``C_y`` None without RoPE Y heads, ``recency_slope`` None outside recency mode).
        d_head, pair_of_mod, pair_y, pair_flat: the head layout: rotary pairs [MOD pairs…, Y pair,
            unrotated pair] and the index of each.
        encoding_name: the formula's encoding (``"nope"``, ``"rope"``, ``"rope_periodic"``, ``"alibi"``,
            ``"rope_periodic+rope"`` or ``"rope_periodic+alibi"``); ``encodings`` the distinct encoding
            instances in order of first use.
        bos_row, eos_row, letter_rows: the embedding of BOS, of EOS and of each letter (alphabet order);
            PAD embeds as 0.
    """

    formula: F.Formula
    alphabet: tuple[str, ...]
    options: ConstructionOptions
    coord_names: tuple[str, ...]
    c_bos: int
    c_eos: int
    c_notbos: int
    c_zero: int
    c_letter: Mapping[str, int]
    layers: tuple[LayerPlan, ...]
    literals: Mapping[F.Formula, Literal]
    times: Mapping[F.Formula, int]
    root: Literal
    heads_by_kind: Mapping[str, int]
    has_mod: bool
    has_y: bool
    recency: bool
    moduli: tuple[int, ...]
    offsets: tuple[int, ...]
    f_large: float
    C_p: float
    C_mod: Mapping[int, float]
    C_y: float | None
    recency_slope: float | None
    d_head: int
    pair_of_mod: Mapping[int, int]
    pair_y: int | None
    pair_flat: int
    encoding_name: str
    encodings: tuple[EncodingSpec, ...]
    bos_row: Row
    eos_row: Row
    letter_rows: tuple[Row, ...]

    @property
    def d_model(self) -> int:
        return len(self.coord_names)

    def row(self, lit: Literal) -> Row:
        """The linear form of a literal over the stream."""
        return literal_row(lit, self.c_notbos)

    def summary(self) -> dict[str, Any]:
        """Sizes of the plan: ``{"d_model", "layers", "heads", "heads_by_kind", "gates", "ffn_units"}``."""
        return {"d_model": self.d_model, "layers": len(self.layers), "heads": sum(len(p.heads) for p in self.layers),
                "heads_by_kind": dict(self.heads_by_kind), "gates": sum(len(p.gates) for p in self.layers),
                "ffn_units": sum(len(p.units) for p in self.layers)}


class _Planner:
    """Builds the node → literal map and the layer schedule (mutable while planning, then frozen)."""

    def __init__(self, alphabet: tuple[str, ...], recency: bool, has_mod: bool) -> None:
        self.recency, self.has_mod = recency, has_mod
        self.coord_names: list[str] = []
        self.c_bos = self.new("BOS")
        self.c_eos = self.new("EOS")
        self.c_letter = {a: self.new(f"letter:{a}") for a in alphabet}
        self.c_notbos = self.new("notbos")
        self.c_zero = self.new("zero")
        self.heads: list[list[Head]] = []
        self.gates: list[list[Gate]] = []
        self.lit: dict[F.Formula, Literal] = {}
        self.time: dict[F.Formula, int] = {}
        self.heads_by_kind = {"P": 0, "MOD": 0, "Y": 0}
        self.moduli: list[int] = []
        self.offsets: list[int] = []

    def new(self, name: str) -> int:
        self.coord_names.append(name)
        return len(self.coord_names) - 1

    def layer(self, l: int) -> int:
        while len(self.heads) <= l:
            self.heads.append([])
            self.gates.append([])
        return l

    @staticmethod
    def head_layer(t_operand: int) -> int:  # attention of layer l reads time ≤ 2l
        return (t_operand + 1) // 2

    @staticmethod
    def ffn_layer(t_inputs: int) -> int:  # ffn of layer l reads time ≤ 2l + 1
        return max(0, t_inputs // 2)

    def gate(self, kind: str, lits: list[tuple[Literal, int]], name: str) -> tuple[Literal, int]:
        l = self.layer(self.ffn_layer(max(t for _, t in lits)))
        out = self.new(name)
        self.gates[l].append(Gate(kind, tuple(x for x, _ in lits), out))
        return Literal(out), 2 * l + 2

    def head(self, l: int, kind: str, node: F.Formula, operand: Literal | None, name: str, **params: int) -> int:
        raw = self.new(name)
        self.heads[self.layer(l)].append(Head(kind, node, operand, raw, **params))
        self.heads_by_kind[kind] += 1
        return raw

    def need(self, node: F.Formula) -> tuple[Literal, int]:
        """Plan ``node`` (and every operand first) and return its literal and time. Iterative: every
        :meth:`build` is a generator that yields the operands it needs and receives their results, so a
        formula DAG of any depth (a{300}: a chain of 300 P's) plans without Python recursion."""
        if node in self.lit:
            return self.lit[node], self.time[node]
        stack: list[tuple[F.Formula, Any]] = [(node, self.build(node))]
        sent: tuple[Literal, int] | None = None
        while stack:
            top, gen = stack[-1]
            try:
                want = gen.send(sent)
            except StopIteration as done:
                stack.pop()
                self.lit[top], self.time[top] = done.value
                sent = done.value
                continue
            if want in self.lit:
                sent = (self.lit[want], self.time[want])
            else:
                stack.append((want, self.build(want)))
                sent = None
        return self.lit[node], self.time[node]

    def flat(self, node: F.Formula, cls: type) -> list[F.Formula]:
        """The operands of a nest of one associative operator (already planned nodes kept whole)."""
        out: list[F.Formula] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if type(n) is cls and n not in self.lit:
                stack.extend(reversed(n.children))
            else:
                out.append(n)
        return out

    def build(self, node: F.Formula) -> Generator[F.Formula, Any, tuple[Literal, int]]:
        """The literal and time of ``node``; a generator that yields each operand it needs (see :meth:`need`)."""
        if isinstance(node, F.Atom):
            return Literal(self.c_letter[node.symbol]), 0
        if isinstance(node, F.Top):
            return Literal(self.c_notbos), 0
        if isinstance(node, F.Bottom):
            return Literal(self.c_zero), 0
        if isinstance(node, F.Not):
            lit, t = (yield node.arg)
            return lit.negated(), t
        if isinstance(node, (F.And, F.Or)):
            parts = []
            for c in self.flat(node, type(node)):
                parts.append((yield c))
            return self.gate("and" if isinstance(node, F.And) else "or", parts, node.text(60))
        if isinstance(node, F.Implies):
            a, ta = (yield node.left)
            b, tb = (yield node.right)
            return self.gate("or", [(a.negated(), ta), (b, tb)], node.text(60))
        if isinstance(node, F.Iff):
            left = yield node.left
            right = yield node.right
            return self.gate("iff", [left, right], node.text(60))
        if isinstance(node, F.Past):
            lit, t = (yield node.arg)
            l = self.head_layer(t)
            raw = self.head(l, "P", node, lit, f"head:P {node.arg.text(50)}")
            return Literal(raw, True), 2 * l + 1
        if isinstance(node, F.Mod):
            raw = self.head(0, "MOD", node, None, f"head:MOD({node.m},{node.r})", m=node.m, r=node.r)
            if node.m not in self.moduli:
                self.moduli.append(node.m)
            if 1 % node.m == node.r:
                return Literal(raw), 1
            pt = (yield F.Past(F.TOP))  # P⊤: false exactly at position 1 ("isolate the case i = 1")
            return self.gate("and", [(Literal(raw), 1), pt], f"MOD({node.m},{node.r}) gated")
        if isinstance(node, F.Yesterday) and self.recency:
            if node.k > 1:  # Y^k ψ = Y(Y^{k−1} ψ): i > k and ψ(i − k)
                return (yield F.Yesterday(F.Yesterday(node.arg, node.k - 1), 1))
            lit, t = (yield node.arg)
            l = self.head_layer(t)
            if self.has_mod:
                l = max(l, 1)  # layer 0 carries the periodic table of the MOD heads
            raw = self.head(l, "Y", node, lit, f"head:Y {node.arg.text(50)}", k=1)
            # no gate: at i = 1 the head reads BOS, where every literal is 0 (Y ψ false there)
            return Literal(raw), 2 * l + 1
        if isinstance(node, F.Yesterday):
            lit, t = (yield node.arg)
            l = self.head_layer(t)
            if self.has_mod:
                l = max(l, 1)  # layer 0 carries the periodic table of the MOD heads
            raw = self.head(l, "Y", node, lit, f"head:Y^{node.k} {node.arg.text(50)}", k=node.k)
            if node.k not in self.offsets:
                self.offsets.append(node.k)
            g_node: F.Formula = F.TOP
            for _ in range(node.k):
                g_node = F.Past(g_node)
            glit = (yield g_node)  # P^k ⊤ ⇔ i > k (proof of Cor. 4.1 (i))
            return self.gate("and", [(Literal(raw), 2 * l + 1), glit], f"Y^{node.k} gated")
        raise UnsupportedError(f"cannot construct {type(node).__name__}")


def _encodings(heads: Sequence[Sequence[Head]], moduli: tuple[int, ...], offsets: Sequence[int], recency_slope: float | None,
               has_recency: bool, d_head: int, pair_y: int | None, g: float) -> tuple[tuple[EncodingSpec, ...], list[int]]:
    """The encoding of every attention layer: layer 0 carries the periodic tables when there are MOD
    heads; every other layer uses conventional RoPE when there are Y heads (a recency layer its own
    ALiBi with slope s on the Y heads and 0 — NoPE — on the P heads); otherwise the formula's single
    encoding. Returns the distinct instances in order of first use and each layer's index (−1 for a
    layer without heads)."""
    n_pairs = d_head // 2
    specs: list[EncodingSpec] = []
    index: list[int] = []
    seen: dict[EncodingFamily, int] = {}
    for layer_index, hs in enumerate(heads):
        if not hs:
            index.append(-1)
            continue
        if has_recency and any(hd.kind == "Y" for hd in hs):
            slopes = tuple(recency_slope if hd.kind == "Y" else 0.0 for hd in hs)
            specs.append(EncodingSpec(EncodingFamily.ALIBI, (("n_heads", len(hs)), ("slopes", slopes))))
            index.append(len(specs) - 1)
            continue
        if moduli and (layer_index == 0 or not offsets):
            key = EncodingFamily.ROPE_PERIODIC
        elif offsets:
            key = EncodingFamily.ROPE
        else:
            key = EncodingFamily.NOPE
        if key not in seen:
            if key == EncodingFamily.ROPE:
                angles = [0.0] * n_pairs
                angles[pair_y] = float(g)
                spec = EncodingSpec(key, (("d_head", d_head), ("rotary_dim", d_head), ("pair_layout", "interleaved"),
                                             ("angles", tuple(angles))))
            elif key == EncodingFamily.ROPE_PERIODIC:
                periods = tuple(moduli) + (1,) * (n_pairs - len(moduli))
                spec = EncodingSpec(key, (("d_head", d_head), ("periods", periods), ("steps", 1),
                                                      ("rotary_dim", d_head), ("pair_layout", "interleaved")))
            else:
                spec = EncodingSpec(key)
            specs.append(spec)
            seen[key] = len(specs) - 1
        index.append(seen[key])
    return tuple(specs), index


def plan_formula(formula: F.Formula | str, alphabet: Sequence[str], options: ConstructionOptions | None = None) -> FormulaPlan:
    """Plan the soft-attention transformer of a formula without S (no weights, no torch).

    Args:
        formula: a :class:`~langclass.core.logic.formulas.Formula` or its text (read under
            :func:`~langclass.core.base.limits.readback_limits`: a formula the product recorded may be
            longer than user input).
        alphabet: Σ.
        options: :class:`ConstructionOptions`.

    Returns:
        The :class:`FormulaPlan`; ``d_model`` = 4 + |Σ| + number of heads + number of gates.

    Raises:
        UnsupportedError: the formula uses S, or a score constant is too large for the dtype.
        InputError: δ_L(g) = 0 (g/2π rational at the target length).
        FormulaSyntaxError, UnknownSymbolError: bad formula text.
    """
    options = options or ConstructionOptions()
    alphabet = tuple(alphabet)
    if isinstance(formula, str):
        formula = F.parse_formula(formula, alphabet, readback_limits())  # text the product may have recorded
    ops = F.operators(formula)
    has_mod, has_y = "MOD" in ops, "Y" in ops
    if "S" in ops:
        raise UnsupportedError("the since operator S needs rightmost hard attention (star-free languages); "
                               "build it with attention='hard' (B-RASP)", field="formula")
    fl = f_large(options.dtype)
    recency = options.y_mode == "recency"
    recency_slope = (float(options.recency_slope) if options.recency_slope is not None
                     else float(2 ** math.ceil(math.log2(fl)))) if recency else None
    C_p = float(options.C_p) if options.C_p is not None else float(2 ** math.ceil(math.log2(2.5 * fl)))
    pl = _Planner(alphabet, recency, has_mod)
    root, _ = pl.need(formula)
    pl.layer(0)
    moduli = tuple(sorted(pl.moduli))
    offsets = tuple(pl.offsets)
    # one head layout for every layer: pairs [MOD pairs…, Y pair (angle g), unrotated pair]
    pair_of_mod = {m: t for t, m in enumerate(moduli)}
    pair_y = len(moduli) if offsets else None
    pair_flat = len(moduli) + (1 if offsets else 0)
    d_head = 2 * (pair_flat + 1)
    has_recency = recency and pl.heads_by_kind["Y"] > 0
    families = ([EncodingFamily.ROPE_PERIODIC] if moduli else []) + (
        [EncodingFamily.ROPE] if offsets else [EncodingFamily.ALIBI] if has_recency else [])
    encoding_name = COMPOSITE_SEPARATOR.join(f.value for f in families) or EncodingFamily.NOPE.value
    C_mod = {m: float(options.mod_safety * 2 * fl / mod_delta(m)) for m in moduli}
    C_y: float | None = None
    if offsets:
        if options.C_y is not None:
            C_y = float(options.C_y)
        else:
            d = delta_L(options.g, options.target_length)
            if not d > 0:
                raise InputError(f"δ_L(g) = 0 for g={options.g}, L={options.target_length}: g/2π looks rational", field="g")
            C_y = float(1.25 * fl / d)
    max_finite = float_format(options.dtype).max_finite
    for what, C in [("C_P", C_p), ("C_Y", C_y)] + [(f"C for MOD({m},·)", c) for m, c in C_mod.items()]:
        if C is not None and not 4 * C < max_finite:
            raise UnsupportedError(f"{what} = {C:.6g} is too large for {options.dtype} (largest finite value "
                                   f"{max_finite:.6g}): the score margin cannot be represented; use a wider dtype"
                                   + (", a smaller target_length" if what == "C_Y" else ""), field="options.dtype")
    encodings, enc_index = _encodings(pl.heads, moduli, offsets, recency_slope, has_recency, d_head, pair_y, options.g)
    layers = tuple(
        LayerPlan(tuple(hs), tuple(gs), tuple(u for gt in gs for u in gate_units(gt, pl.c_notbos)), enc)
        for hs, gs, enc in zip(pl.heads, pl.gates, enc_index))
    # embedding: one-hot token kinds + notbos
    bos_row = ((pl.c_bos, 1.0),)
    eos_row = ((pl.c_eos, 1.0), (pl.c_notbos, 1.0))
    letter_rows = tuple(((pl.c_letter[a], 1.0), (pl.c_notbos, 1.0)) for a in alphabet)
    return FormulaPlan(
        formula=formula, alphabet=alphabet, options=options, coord_names=tuple(pl.coord_names), c_bos=pl.c_bos,
        c_eos=pl.c_eos, c_notbos=pl.c_notbos, c_zero=pl.c_zero, c_letter=MappingProxyType(dict(pl.c_letter)),
        layers=layers, literals=MappingProxyType(dict(pl.lit)), times=MappingProxyType(dict(pl.time)), root=root,
        heads_by_kind=MappingProxyType(dict(pl.heads_by_kind)), has_mod=has_mod, has_y=has_y, recency=recency,
        moduli=moduli, offsets=offsets, f_large=fl, C_p=C_p, C_mod=MappingProxyType(C_mod), C_y=C_y,
        recency_slope=recency_slope, d_head=d_head, pair_of_mod=MappingProxyType(pair_of_mod), pair_y=pair_y,
        pair_flat=pair_flat, encoding_name=encoding_name, encodings=encodings, bos_row=bos_row, eos_row=eos_row,
        letter_rows=letter_rows)
