"""Plan stage of the C-RASP construction (no torch): a :class:`~langclass.core.logic.crasp.CraspProgram`
→ a :class:`CountingPlan` for a soft-attention NoPE transformer with a NON-STRICT causal mask.

The compilation theorem of Yang & Chiang, *Counting Like Transformers: Compiling Temporal Counting
Logic into Softmax Transformers* (C-RASP → future-masked softmax transformer), specialised as
follows (the model is assembled by :mod:`langclass.models.construct.counting`):

* **Input** ``BOS w_1 … w_n``: BOS at sequence index 0, letter i at index i; the model's decision is
  read at the LAST index (n; BOS itself for the empty word). No positional encoding.
* **Stream**: ``bos`` (1 at BOS), ``notbos`` (1 elsewhere), one coordinate per letter, one per
  Boolean gate or comparison result, and two per comparison *channel*. Every Boolean of the program
  is a :class:`~langclass.models.construct.gates.Literal` (``x[c]`` or ``notbos − x[c]``), exactly 0
  or 1 at every letter position and 0 at BOS.
* **Counts** are never stored: a comparison ``C rel C'`` is rewritten, by substituting the linear
  operations, as ``D ≥ 1`` for an integer affine form ``D = Σ_t c_t·#P_t + k`` over counts of
  Booleans (``>``: D = C − C'; ``≥``: C − C' + 1; ``<``, ``≤`` mirrored; ``=`` is ¬[D ≥ 1] ∧ ¬[−D ≥ 1]
  with D = C − C', two channels; ``≠`` its negation). One attention layer with zero queries and keys
  (all scores 0, so the non-strict mask averages uniformly over the i + 1 visible positions,
  BOS included) and value ``v(j) = Σ_t c_t·P_t(j) + (k − ½)·bos(j)`` returns in each channel
  ``z(i) = (D(i) − ½)/(i + 1)`` — the count fractions #P_t/(i + 1) of the paper's uniform-attention
  lemma combined by the value projection, and the constant carried by BOS. As D is an integer,
  ``z ≠ 0`` and ``sign z = [D ≥ 1]``.
* **Sign gadget**: the output projection writes ``(z, −z)`` to the channel's coordinate pair and a
  layer normalization of that pair (no affine map) replaces it by ``(z, −z)/|z| = (±1, ∓1)`` — the
  layer-normalization step of the paper's comparison construction, independent of i. A ReLU pair
  ``ReLU(2y − 3·bos) − ReLU(2y − 1 − 3·bos)`` turns y ≈ ±1 into an exact 0/1 (0 at BOS).
* **Boolean operations**: ¬ is a negated literal; ∧ = ReLU(Σℓ − (m−1)·notbos), ∨ = the negation
  of ReLU(notbos − Σℓ) (one unit each, exact on 0/1 inputs, 0 at BOS), in feed-forward layers.
  An ∨ of ∧'s with pairwise disjoint literal sets (:func:`_disjoint_ors`) is the sum of its cubes.
* **Schedule**: layer l = attention (channels) → pair normalization → feed-forward (cleanups and
  gates). A Boolean has time 0 (embedding) or 2l + 2 (written by the feed-forward layer of layer
  l); a comparison over Booleans of time ≤ 2l is computed by layer l's attention; a gate over
  Booleans of time ≤ 2l + 1 by layer l's feed-forward layer. Layers without a comparison are
  feed-forward only. The comparisons of one count depth share one attention layer (placed as late
  as the latest of them needs), so the attention layers number exactly the program's count depth.
  A comparison of constants only is folded into ``true`` / ``false`` at plan time.
* **Readout** at the last index: logit ``2·out − 1 + 2·[accepts ε]·bos``.

Precision: :func:`langclass.core.precision.counting.certified_counting_length` from the channel
figures of :meth:`CountingPlan.channel_bounds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from langclass.core.base.errors import InputError
from langclass.core.logic.crasp import CraspProgram
from langclass.models.construct.gates import Literal, ReluUnit, Row

__all__ = ["Channel", "CountingLayer", "CountingPlan", "plan_counting", "SOURCE_COUNTING", "affine_forms",
           "planned_counting_parameters"]

SOURCE_COUNTING = ("Counting Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers "
                   "(Yang & Chiang, 2024), compilation theorem: C-RASP compiled into a future-masked softmax transformer "
                   "(uniform attention for counts, layer normalization for comparisons)")


@dataclass(frozen=True)
class Channel:
    """One comparison channel ``[Σ_t c_t·#P_t + k ≥ 1]`` of an attention layer.

    Attributes:
        op: the comparison op it serves; part: ``"ge1"`` (the comparison itself), ``"pos"`` /
            ``"neg"`` (the two halves of an equality).
        value: the value projection's row ``((coordinate, weight), …)`` = Σ_t c_t·P_t(j) + (k − ½)·bos(j)
            with every literal expanded (``notbos − x`` for a negated one).
        bos_value: k − ½, the value at BOS (a half-integer).
        v_pos, v_neg: Σ of the positive coefficients c_t and of |negative| ones (over distinct
            Booleans): at a letter position the value lies in [−v_neg, v_pos].
        coord: first coordinate of the channel's pair (z at ``coord``, −z at ``coord + 1``).
    """

    op: str
    part: str
    value: Row
    bos_value: Fraction
    v_pos: int
    v_neg: int
    coord: int


@dataclass(frozen=True)
class CountingLayer:
    """One layer: its attention channels (empty: feed-forward only) and feed-forward units."""

    channels: tuple[Channel, ...]
    units: tuple[ReluUnit, ...]


@dataclass(frozen=True)
class CountingPlan:
    """The construction of one program (module docstring); no tensor.

    Attributes:
        program: the compiled program (only the ops the output needs are planned).
        alphabet: Σ; coord_names: the name of every stream coordinate (``d_model`` of them).
        c_bos, c_notbos: coordinates of the BOS / not-BOS indicators; c_letter: letter → coordinate.
        literals: every planned Boolean op → its :class:`Literal`; times: op → time (module docstring).
        layers: the layer schedule; readout: the readout row; readout_bias: its bias (−1).
    """

    program: CraspProgram
    alphabet: tuple[str, ...]
    coord_names: tuple[str, ...]
    c_bos: int
    c_notbos: int
    c_letter: Mapping[str, int]
    literals: Mapping[str, Literal]
    times: Mapping[str, int]
    layers: tuple[CountingLayer, ...]
    readout: Row
    readout_bias: float = -1.0

    @property
    def d_model(self) -> int:
        return len(self.coord_names)

    @property
    def channels(self) -> tuple[Channel, ...]:
        return tuple(c for layer in self.layers for c in layer.channels)

    def channel_bounds(self) -> list[dict[str, Any]]:
        """Per channel: ``{"op", "part", "bos_value", "v_letter"}`` with v_letter = max(v_pos, v_neg),
        the bound on |v(j)| at a letter position (what the precision analysis needs)."""
        return [{"op": c.op, "part": c.part, "bos_value": c.bos_value, "v_letter": max(c.v_pos, c.v_neg),
                 "v_sum": c.v_pos + c.v_neg} for c in self.channels]

    def summary(self) -> dict[str, Any]:
        att = [layer for layer in self.layers if layer.channels]
        return {"d_model": self.d_model, "layers": len(self.layers), "attention_layers": len(att),
                "heads": len(att), "channels": len(self.channels),
                "ffn_units": sum(len(layer.units) for layer in self.layers),
                "program_depth": self.program.depth()}


def affine_forms(program: CraspProgram) -> dict[str, tuple[dict[str, int], int]]:
    """Every count-typed op as an integer affine form over the Booleans it counts:
    ``{op: ({boolean op: coefficient}, constant)}`` (a count is ``#P`` = ``({P: 1}, 0)``; a linear
    op substitutes its operands' forms). Zero coefficients are dropped."""
    forms: dict[str, tuple[dict[str, int], int]] = {}
    for op in program.ops:
        if op.kind == "count":
            forms[op.name] = ({op.args[0]: 1}, 0)
        elif op.kind == "linear":
            coef: dict[str, int] = {}
            const = op.args[1]
            for c, name in op.args[0]:
                sub, k = forms[name]
                const += c * k
                for b, w in sub.items():
                    coef[b] = coef.get(b, 0) + c * w
            forms[op.name] = ({b: w for b, w in coef.items() if w}, const)
    return forms


_REL_VALUE = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, "==": lambda x, y: x == y,
              "!=": lambda x, y: x != y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}


def _ge1_forms(rel: str, left: tuple[dict[str, int], int], right: tuple[dict[str, int], int]
               ) -> list[tuple[str, dict[str, int], int]]:
    """The comparison ``left rel right`` as channels ``[D ≥ 1]``: ``[(part, coefficients, k), …]``."""
    def diff(a, b, extra: int, sign: int = 1):
        coef = dict()
        for name, w in a[0].items():
            coef[name] = coef.get(name, 0) + sign * w
        for name, w in b[0].items():
            coef[name] = coef.get(name, 0) - sign * w
        return {n: w for n, w in coef.items() if w}, sign * (a[1] - b[1]) + extra

    if rel == ">":
        return [("ge1", *diff(left, right, 0))]
    if rel == ">=":
        return [("ge1", *diff(left, right, 1))]
    if rel == "<":
        return [("ge1", *diff(left, right, 0, -1))]
    if rel == "<=":
        return [("ge1", *diff(left, right, 1, -1))]
    return [("pos", *diff(left, right, 0)), ("neg", *diff(left, right, 0, -1))]  # == / !=


def _disjoint_ors(ops) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The ∨ operations whose operands are ∧ operations with pairwise disjoint literal sets, by a
    syntactic test: one holds Q_a and the other Q_b for letters a ≠ b, or one holds P and the other
    ¬P. Such an ∨ is the SUM of its cubes (at most one is 1), one feed-forward level instead of two:
    ``{or: (cube args, …)}``."""
    by_name = {op.name: op for op in ops}

    def lit(name: str) -> tuple[str, bool]:  # (base op, positive), through ¬ chains
        pos = True
        while by_name[name].kind == "not":
            name, pos = by_name[name].args[0], not pos
        return name, pos

    def disjoint(c1: tuple[str, ...], c2: tuple[str, ...]) -> bool:
        l1, l2 = {lit(x) for x in c1}, {lit(x) for x in c2}
        if any((b, not p) in l2 for b, p in l1):
            return True
        letters1 = {by_name[b].args[0] for b, p in l1 if p and by_name[b].kind == "symbol"}
        letters2 = {by_name[b].args[0] for b, p in l2 if p and by_name[b].kind == "symbol"}
        return any(a != b for a in letters1 for b in letters2)

    out = {}
    for op in ops:
        if op.kind == "or" and len(op.args) > 1 and all(by_name[x].kind == "and" for x in op.args):
            cubes = tuple(by_name[x].args for x in op.args)
            if all(disjoint(cubes[i], cubes[j]) for i in range(len(cubes)) for j in range(i + 1, len(cubes))):
                out[op.name] = cubes
    return out


def _schedule(ops, forms: Mapping[str, tuple[dict[str, int], int]], depths: Mapping[str, int],
              flat: Mapping[str, tuple[tuple[str, ...], ...]]) -> dict[str, int]:
    """The layer of every gate and comparison. A gate goes to the feed-forward layer of the first
    layer after its inputs; the comparisons of one count depth d share ONE attention layer, the
    latest any of them needs (so a program of count depth d has exactly d attention layers, the
    depth-preserving correspondence of *Knee-Deep in C-RASP*). Placing a group later can delay the
    next group's inputs, so the placement is iterated to its fixed point (the layers only grow)."""
    fixed: dict[int, int] = {}
    while True:
        times: dict[str, int] = {}
        layer_of: dict[str, int] = {}
        for op in ops:
            k, a = op.kind, op.args
            if op.type == "count":
                continue
            if k in ("symbol", "const_bool"):
                times[op.name] = 0
            elif k == "not":
                times[op.name] = times[a[0]]
            elif k in ("and", "or"):
                reads = [x for cube in flat[op.name] for x in cube] if op.name in flat else a
                layer_of[op.name] = max(times[x] for x in reads) // 2
                times[op.name] = 2 * layer_of[op.name] + 2
            elif not forms[a[0]][0] and not forms[a[2]][0]:  # constants only: folded at plan time
                times[op.name] = 0
            else:
                counted = [b for side in (a[0], a[2]) for b in forms[side][0]]
                group = max(depths[op.name], 1)
                layer_of[op.name] = max(max((times[b] for b in counted), default=0) // 2, fixed.get(group, 0))
                times[op.name] = 2 * layer_of[op.name] + 2
        need: dict[int, int] = {}
        for op in ops:
            if op.kind == "compare" and op.name in layer_of:
                group = max(depths[op.name], 1)
                need[group] = max(need.get(group, 0), layer_of[op.name])
        if all(fixed.get(g, 0) >= l for g, l in need.items()):
            return layer_of
        fixed = {g: max(fixed.get(g, 0), l) for g, l in need.items()}


def plan_counting(program: CraspProgram, max_d_model: int | None = None) -> CountingPlan:
    """Plan the non-strict-mask NoPE transformer of ``program`` (module docstring).

    Args:
        program: a validated :class:`CraspProgram`.
        max_d_model: refuse (InputError) a stream wider than this (None: no bound).

    Returns:
        A :class:`CountingPlan`; only the ops the output depends on are planned.
    """
    ops = program.needed()
    names: list[str] = ["bos", "notbos"] + [f"Q_{a}" for a in program.alphabet]
    c_bos, c_notbos = 0, 1
    c_letter = {a: 2 + t for t, a in enumerate(program.alphabet)}
    lits: dict[str, Literal] = {}
    times: dict[str, int] = {}
    forms = affine_forms(CraspProgram(program.alphabet, ops, program.output, program.accepts_empty))
    flat = _disjoint_ors(ops)
    layer_of = _schedule(ops, forms, program.depths(), flat)
    readers: dict[str, set[str]] = {}
    for op in ops:
        reads = [x for cube in flat[op.name] for x in cube] if op.name in flat else op.refs()
        if op.kind == "linear" or op.kind == "compare":
            reads = [b for side in ((op.args[0], op.args[2]) if op.kind == "compare" else ()) for b in forms[side][0]]
        for x in reads:
            readers.setdefault(x, set()).add(op.name)
    # ∧ operations read only as cubes of flattened ∨ operations are not built
    skip = {op.name for op in ops if op.kind == "and" and op.name != program.output and not readers.get(op.name)}
    layer_channels: dict[int, list[Channel]] = {}
    layer_units: dict[int, list[ReluUnit]] = {}

    def new_coord(name: str) -> int:
        names.append(name)
        if max_d_model is not None and len(names) > max_d_model:
            raise InputError(f"the construction needs a stream wider than {max_d_model}", field="program")
        return len(names) - 1

    def add_lit(acc: dict[int, Fraction], lit: Literal, w: int) -> None:
        if lit.neg:
            acc[c_notbos] = acc.get(c_notbos, 0) + w
            acc[lit.coord] = acc.get(lit.coord, 0) - w
        else:
            acc[lit.coord] = acc.get(lit.coord, 0) + w

    def row(acc: Mapping[int, Any]) -> Row:
        return tuple(sorted((c, float(w)) for c, w in acc.items() if w))

    for op in ops:
        k, a = op.kind, op.args
        if op.type == "count":
            continue
        if k == "symbol":
            lits[op.name], times[op.name] = Literal(c_letter[a[0]]), 0
        elif k == "const_bool":
            lits[op.name], times[op.name] = Literal(c_notbos, neg=not a[0]), 0
        elif k == "not":
            lits[op.name], times[op.name] = lits[a[0]].negated(), times[a[0]]
        elif k in ("and", "or"):
            if op.name in skip:
                continue
            layer = layer_of[op.name]
            out = new_coord(f"{op.name} ({k})")
            acc: dict[int, Fraction] = {}
            if op.name in flat:  # Σ over disjoint cubes of ReLU(Σℓ − (m−1)·notbos)
                for cube in flat[op.name]:
                    acc = {}
                    for x in cube:
                        add_lit(acc, lits[x], 1)
                    acc[c_notbos] = acc.get(c_notbos, 0) - (len(cube) - 1)
                    layer_units.setdefault(layer, []).append(ReluUnit(row(acc), 0.0, out, 1.0))
                lits[op.name] = Literal(out)
                times[op.name] = 2 * layer + 2
                continue
            for x in a:
                add_lit(acc, lits[x], 1 if k == "and" else -1)
            if k == "and":  # ReLU(Σℓ − (m−1)·notbos)
                acc[c_notbos] = acc.get(c_notbos, 0) - (len(a) - 1)
                lits[op.name] = Literal(out)
            else:  # ¬ReLU(notbos − Σℓ)
                acc[c_notbos] = acc.get(c_notbos, 0) + 1
                lits[op.name] = Literal(out, neg=True)
            layer_units.setdefault(layer, []).append(ReluUnit(row(acc), 0.0, out, 1.0))
            times[op.name] = 2 * layer + 2
        elif op.name not in layer_of:  # a comparison of constants: its truth value
            value = _REL_VALUE[a[1]](forms[a[0]][1], forms[a[2]][1])
            lits[op.name], times[op.name] = Literal(c_notbos, neg=not value), 0
        else:  # compare
            left, rel, right = a
            parts = _ge1_forms(rel, forms[left], forms[right])
            layer = layer_of[op.name]
            out = new_coord(f"{op.name} ({'=' if rel in ('==', '!=') else 'D ≥ 1'})")
            units = layer_units.setdefault(layer, [])
            if rel in ("==", "!="):
                units.append(ReluUnit(((c_notbos, 1.0),), 0.0, out, 1.0))
            sign = -1.0 if rel in ("==", "!=") else 1.0
            for part, coef, const in parts:
                acc = {}
                v_pos = v_neg = 0
                for b, w in coef.items():
                    add_lit(acc, lits[b], w)
                    v_pos += max(w, 0)
                    v_neg += max(-w, 0)
                bos_value = Fraction(const) - Fraction(1, 2)
                acc[c_bos] = acc.get(c_bos, 0) + bos_value
                c = new_coord(f"{op.name}.{part} z")
                new_coord(f"{op.name}.{part} −z")
                layer_channels.setdefault(layer, []).append(Channel(op.name, part, row(acc), bos_value, v_pos, v_neg, c))
                # exact 0/1 from y ≈ ±1 (0 at BOS): ReLU(2y − 3·bos) − ReLU(2y − 1 − 3·bos)
                units.append(ReluUnit(((c, 2.0), (c_bos, -3.0)), 0.0, out, sign))
                units.append(ReluUnit(((c, 2.0), (c_bos, -3.0)), -1.0, out, -sign))
            lits[op.name] = Literal(out, neg=(rel == "!="))
            times[op.name] = 2 * layer + 2
    n_layers = times[program.output] // 2
    layers = tuple(CountingLayer(tuple(layer_channels.get(l, ())), tuple(layer_units.get(l, ())))
                   for l in range(n_layers))
    acc = {}
    add_lit(acc, lits[program.output], 2)
    acc[c_bos] = acc.get(c_bos, 0) + (2 if program.accepts_empty else 0)
    return CountingPlan(program, program.alphabet, tuple(names), c_bos, c_notbos, c_letter, dict(lits), dict(times),
                        layers, row(acc))


def planned_counting_parameters(plan: CountingPlan) -> int:
    """Parameters the assembly (:class:`~langclass.models.construct.counting.CountingTransformer`)
    allocates for ``plan``, from its shapes alone: token embedding (PAD, BOS, EOS + |Σ|) × d_model;
    per attention layer with m channels (one head of width m) Q/K/V/O with biases,
    4·m·d_model + 3·m + d_model; per feed-forward layer with U units 2·U·d_model + U + d_model; the
    readout d_model + 1. (Pair normalizations have no parameters.)"""
    D = plan.d_model
    total = (3 + len(plan.alphabet)) * D + D + 1
    for layer in plan.layers:
        m, U = len(layer.channels), len(layer.units)
        if m:
            total += 4 * m * D + 3 * m + D
        if U:
            total += 2 * U * D + U + D
    return total
