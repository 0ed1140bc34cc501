"""Plan stage of the B-RASP → masked unique-hard-attention construction (no torch).

*Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*, Lemma 13 and Thm 24:
one stream coordinate per program vector; for every attention operation the preceding
feed-forward layer computes the i-side clause indicators α_u (one-hot over the assignments u of the
score's i-variables), the j-side score parts β_u(j) = S(u, j) and the value parts V_u(j); the head
(mask and leftmost/rightmost tie of the operation, score Σ_u α_u(i)β_u(j) ∈ {0, 1}) copies
[1, β_u(j_i), V_u(j_i)] into a flag and the β̃_u, Ṽ_u coordinates; the next feed-forward layer
computes (S∧V) ∨ (¬S∧D) (the V′ trick of Lemma 13), or D when no key is visible. Each feed-forward
layer computes every Boolean function it needs as a sum of disjoint cubes over the stream
coordinates it reads (:func:`~langclass.models.construct.gates.dnf_units`), composing position-wise
operations into it, so a program of attention depth K becomes K + 1 layers (Thm 24). An identity
operation ``▶_j[j ≤ i, 1] X(j) : 0`` (X(i) itself) gets no head: its layer's feed-forward reads X's
coordinate (:func:`is_identity`).

:func:`plan_brasp` returns a :class:`BraspPlan` (stream layout, heads per layer, feed-forward targets
and their ReLU units); :mod:`langclass.models.construct.hard` writes it as weights.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from langclass.core.logic.brasp import AttentionOp, BAnd, BConst, BNot, BOr, BVar, PositionOp, Program, bexpr_vars
from langclass.core.precision.encoding_families import EncodingFamily
from langclass.core.base.errors import LimitExceeded
from langclass.models.construct.gates import MAX_FFN_INPUTS, ReluUnit, Row, dnf_units, expr_coords
from langclass.models.construct.plan import EncodingSpec

__all__ = ["HardHead", "BraspLayer", "BraspPlan", "plan_brasp", "is_identity"]


@dataclass(frozen=True)
class HardHead:
    """One unique-hard-attention head (one attention operation ``op`` of the program).

    Query/key: row t reads α_t (``alpha[t]``) on the query side and β_t (``beta[t]``) on the key side,
    so the score is Σ_t α_t(i)·β_t(j) ∈ {0, 1}. Value → output: the constant ``one`` → ``flag``,
    ``beta[t]`` → ``beta_t[t]``, ``v[t]`` → ``v_t[t]``. ``v_ivars``/``v_assign`` are the value's
    i-side variables and their assignments, in the order of ``v``.
    """

    name: str
    op: AttentionOp
    alpha: tuple[int, ...]
    beta: tuple[int, ...]
    beta_t: tuple[int, ...]
    v: tuple[int, ...]
    v_t: tuple[int, ...]
    flag: int
    v_ivars: tuple[str, ...]
    v_assign: tuple[tuple[bool, ...], ...]


@dataclass(frozen=True)
class BraspLayer:
    """One layer: its ``heads`` (run on the input of the layer), then a feed-forward layer computing
    every ``(coordinate, stream expression)`` of ``targets`` by ``units``; ``max_inputs`` is the most
    coordinates one target reads."""

    heads: tuple[HardHead, ...]
    targets: tuple[tuple[int, Any], ...]
    units: tuple[ReluUnit, ...]
    max_inputs: int


@dataclass(frozen=True)
class BraspPlan:
    """The plan of a program's transformer.

    Attributes:
        program: the B-RASP program.
        K: attention depth (the model has K + 1 layers).
        coord_names: the name of every stream coordinate (``d_model`` = its length).
        c_letter: ``{initial vector: coordinate}``; ``c_one`` the constant-1 coordinate.
        c_mark: ``{mark vector MOD_r: coordinate}`` — coordinate r, written by the ``mod_onehot``
            position embedding (Thm 19); empty without marks.
        encoding: that embedding (``mod_onehot`` with the program's modulus, positions 1 … n) for a
            B-RASP[MOD] program; None without marks (NoPE).
        coord_of: ``{vector name: coordinate}`` of every initial and defined vector.
        layers: the K + 1 layers.
        letter_rows: the embedding of every letter of ``program.alphabet`` (its initial vectors and one).
        output: the coordinate read out at the last position.
    """

    program: Program
    K: int
    coord_names: tuple[str, ...]
    c_letter: Mapping[str, int]
    c_one: int
    coord_of: Mapping[str, int]
    layers: tuple[BraspLayer, ...]
    letter_rows: tuple[Row, ...]
    output: int
    c_mark: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    encoding: EncodingSpec | None = None

    @property
    def d_model(self) -> int:
        return len(self.coord_names)

    def summary(self) -> dict[str, Any]:
        """Sizes: ``{"d_model", "layers", "heads", "ffn_units", "ffn_inputs"}``."""
        return {"d_model": self.d_model, "layers": len(self.layers), "heads": sum(len(l.heads) for l in self.layers),
                "ffn_units": sum(len(l.units) for l in self.layers), "ffn_inputs": [l.max_inputs for l in self.layers]}


def is_identity(op: AttentionOp) -> bool:
    """``▶_j [j ≤ i, 1] X(j) : 0``: the rightmost visible key is i itself (n ≥ 1), so the result is X(i).
    The narrowing of :mod:`langclass.core.logic.brasp_width` writes these to cut wide Boolean expressions;
    the plan computes them in the next feed-forward layer from X's coordinate, without a head."""
    return (op.direction == "rightmost" and op.mask == "future_nonstrict" and op.score == BConst(True)
            and op.default == BConst(False) and isinstance(op.value, BVar) and op.value.side == "j")


def _assignments(vs: list[str]) -> list[tuple[bool, ...]]:
    return list(itertools.product([False, True], repeat=len(vs)))


def _subst(e: Any, side_env: Callable[[str, str], Any]) -> Any:
    """B-RASP expression → stream expression; ``side_env(name, side)`` gives a stream expression."""
    if isinstance(e, BVar):
        return side_env(e.name, e.side)
    if isinstance(e, BConst):
        return ("k", e.value)
    if isinstance(e, BNot):
        return ("not", _subst(e.arg, side_env))
    if isinstance(e, BAnd):
        return ("and", tuple(_subst(a, side_env) for a in e.args))
    if isinstance(e, BOr):
        return ("or", tuple(_subst(a, side_env) for a in e.args))
    raise AssertionError(e)


class _Planner:
    """Allocates coordinates and collects the targets of every layer (mutable while planning)."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.depth = prog.depths()
        self.K = max([self.depth[op.name] for op in prog.ops if isinstance(op, AttentionOp)], default=0)
        self.coord_names: list[str] = []
        self.c_mark = {name: self.new(name) for name in prog.marks}  # coordinates 0..m−1: the PE writes e_(i mod m)
        self.c_letter = {name: self.new(name) for name in prog.initial}
        self.c_one = self.new("one")
        self.coord_of: dict[str, int] = {**self.c_mark, **self.c_letter}
        self.materialized_at: dict[str, int] = {n: -1 for n in self.coord_of}
        self.ops = {op.name: op for op in prog.ops}
        self.heads: dict[str, HardHead] = {}
        self.targets: list[list[tuple[int, Any]]] = [[] for _ in range(self.K + 1)]
        self.head_names: list[list[str]] = [[] for _ in range(self.K + 1)]
        self.cache: dict[tuple[str, int], Any] = {}

    def new(self, name: str) -> int:
        self.coord_names.append(name)
        return len(self.coord_names) - 1

    def vec_expr(self, name: str, layer: int) -> Any:
        """Expression of vector ``name`` over the coordinates readable by the FFN of ``layer``."""
        key = (name, layer)
        if key in self.cache:
            return self.cache[key]
        if name in self.coord_of and self.materialized_at.get(name, -1) < layer:
            out: Any = ("c", self.coord_of[name])
        else:
            op = self.ops[name]
            if isinstance(op, PositionOp):
                out = _subst(op.expr, lambda n, s: self.vec_expr(n, layer))
            elif is_identity(op):  # ▶_j[j ≤ i, 1] X(j) : 0 is X(i), whose coordinate exists by now: no head
                out = self.vec_expr(op.value.name, layer)
            else:  # attention op of depth == layer: finalize from its head outputs
                out = self._finalize(self.heads[name], op, layer)
        self.cache[key] = out
        return out

    def _finalize(self, hd: HardHead, op: AttentionOp, layer: int) -> Any:
        """(flag ∧ ((S ∧ V) ∨ (¬S ∧ D))) ∨ (¬flag ∧ D) over the head outputs (Lemma 13)."""
        Dx = _subst(op.default, lambda n, s: self.vec_expr(n, layer))
        if len(hd.alpha) == 1 and hd.alpha[0] == self.c_one:
            sel_s: Any = ("c", hd.beta_t[0])
        else:
            sel_s = ("or", tuple(("and", (("c", a), ("c", bt))) for a, bt in zip(hd.alpha, hd.beta_t)))
        # value: select V_u′(j_i) by the i-side assignment u′ of V's i-variables
        terms = []
        for u, vt in zip(hd.v_assign, hd.v_t):
            conds = [self.vec_expr(n, layer) if bit else ("not", self.vec_expr(n, layer)) for n, bit in zip(hd.v_ivars, u)]
            terms.append(("and", tuple(conds) + (("c", vt),)))
        sel_v = ("or", tuple(terms))
        found = ("or", (("and", (sel_s, sel_v)), ("and", (("not", sel_s), Dx))))
        return ("or", (("and", (("c", hd.flag), found)), ("and", (("not", ("c", hd.flag)), Dx))))

    def _prepare(self, op: AttentionOp, layer: int) -> None:
        """Targets α_u, β_u, V_u in the FFN of ``layer`` and the head of ``op`` in layer + 1."""
        s_ivars = sorted({n for n, s in bexpr_vars(op.score) if s == "i"})
        v_ivars = sorted({n for n, s in bexpr_vars(op.value) if s == "i"})
        alpha, beta, beta_t, vcoords, v_t = [], [], [], [], []
        s_assign = _assignments(s_ivars)
        v_assign = _assignments(v_ivars)
        for u in s_assign:
            env_u = dict(zip(s_ivars, u))
            if s_ivars:
                a = self.new(f"{op.name}:alpha{u}")
                conds = tuple(self.vec_expr(n, layer) if bit else ("not", self.vec_expr(n, layer)) for n, bit in env_u.items())
                self.targets[layer].append((a, ("and", conds)))
            else:
                a = self.c_one  # one clause, always selected
            b = self.new(f"{op.name}:beta{u}")
            self.targets[layer].append((b, _subst(op.score, lambda n, s, env_u=env_u: ("k", env_u[n]) if s == "i"
                                                  else self.vec_expr(n, layer))))
            alpha.append(a)
            beta.append(b)
        for u in v_assign:
            env_u = dict(zip(v_ivars, u))
            v = self.new(f"{op.name}:value{u}")
            self.targets[layer].append((v, _subst(op.value, lambda n, s, env_u=env_u: ("k", env_u[n]) if s == "i"
                                                  else self.vec_expr(n, layer))))
            vcoords.append(v)
        flag = self.new(f"{op.name}:flag")
        for u in s_assign:
            beta_t.append(self.new(f"{op.name}:beta~{u}"))
        for u in v_assign:
            v_t.append(self.new(f"{op.name}:value~{u}"))
        self.heads[op.name] = HardHead(op.name, op, tuple(alpha), tuple(beta), tuple(beta_t), tuple(vcoords), tuple(v_t),
                                       flag, tuple(v_ivars), tuple(v_assign))
        self.head_names[layer + 1].append(op.name)

    def run(self, deadline: Any = None) -> None:
        prog, depth = self.prog, self.depth
        for layer in range(self.K + 1):
            if deadline is not None:
                deadline.check(f"B-RASP plan (layer {layer} of {self.K + 1})")
            # (1) materialize every vector of depth == layer (attention finalize + position-wise)
            for op in prog.ops:
                if depth[op.name] == layer and op.name not in self.coord_of:
                    e = self.vec_expr(op.name, layer)
                    c = self.new(op.name)
                    self.targets[layer].append((c, e))
                    self.coord_of[op.name] = c
                    self.materialized_at[op.name] = layer
                    self.cache.clear()
            # (2) prepare the attention ops of depth layer + 1
            for op in prog.ops:
                if isinstance(op, AttentionOp) and depth[op.name] == layer + 1 and not is_identity(op):
                    self._prepare(op, layer)


def plan_brasp(program: Program, deadline: Any = None) -> BraspPlan:
    """Plan the masked unique-hard-attention transformer of a B-RASP program (Lemma 13 / Thm 24).

    Args:
        program: the B-RASP program.
        deadline: an optional :class:`~langclass.core.base.limits.Deadline` checked once per layer.

    Returns:
        The :class:`BraspPlan`: K + 1 layers for attention depth K.

    Raises:
        LimitExceeded: ``max_ffn_inputs`` when one Boolean target reads more than
            :data:`~langclass.models.construct.gates.MAX_FFN_INPUTS` coordinates.
        TimeLimitExceeded: ``deadline`` passed (``step`` names the layer).
    """
    pl = _Planner(program)
    pl.run(deadline)
    for layer in range(pl.K + 1):  # the compiler's bound, checked on every target before any truth table
        for _, e in pl.targets[layer]:
            m = len(expr_coords(e))
            if m > MAX_FFN_INPUTS:
                raise LimitExceeded("max_ffn_inputs", MAX_FFN_INPUTS,
                                    f"a feed-forward target of the B-RASP compiler reads {m} coordinates "
                                    f"(> {MAX_FFN_INPUTS}); split the program's Boolean expressions")
    layers = []
    for layer in range(pl.K + 1):
        if deadline is not None:
            deadline.check(f"B-RASP plan (feed-forward units of layer {layer})")
        units, max_inputs = dnf_units(pl.targets[layer])
        layers.append(BraspLayer(tuple(pl.heads[n] for n in pl.head_names[layer]), tuple(pl.targets[layer]),
                                 tuple(units), max_inputs))
    # embedding: initial vectors Q (several names may denote one symbol) + constant one
    letter_rows = []
    for sym in program.alphabet:
        names = [n for n, s in program.initial.items() if s == sym]
        letter_rows.append(tuple(sorted([(pl.c_letter[n], 1.0) for n in names] + [(pl.c_one, 1.0)])))
    return BraspPlan(program=program, K=pl.K, coord_names=tuple(pl.coord_names),
                     c_letter=MappingProxyType(dict(pl.c_letter)), c_one=pl.c_one,
                     coord_of=MappingProxyType(dict(pl.coord_of)), layers=tuple(layers), letter_rows=tuple(letter_rows),
                     output=pl.coord_of[program.output], c_mark=MappingProxyType(dict(pl.c_mark)),
                     encoding=None if program.modulus <= 1 else EncodingSpec(EncodingFamily.MOD_ONEHOT, (
                         ("d_model", len(pl.coord_names)), ("period", program.modulus), ("position_origin", 1))))
