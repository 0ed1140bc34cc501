"""Narrow B-RASP programs: bound the number of stream coordinates each feed-forward target reads.

The B-RASP → transformer compiler (:mod:`langclass.models.construct`, *Masked Hard-Attention
Transformers Recognize Exactly the Star-Free Languages*, Lemma 13 / Thm 24) writes every
position-wise Boolean function as a sum of disjoint cubes over the coordinates it reads, inlining
position-wise operations into their readers; a function of m coordinates may need up to 2^(m−1)
ReLU units, so the compiler refuses m > ``MAX_FFN_INPUTS``. Programs synthesized from automata
(large disjunctions over many attention outputs) exceed that.

:func:`narrow_program` rewrites such a program into an equivalent one whose expressions are narrow:
a wide position-wise vector P is *materialized* through an identity attention operation

    P := ▶_j [j ≤ i, 1] P'(j) : 0          (non-strict mask, rightmost: j = i, so P(i) = P'(i))

so its readers see one attention output instead of its whole expression, and a wide conjunction or
disjunction is first cut into chunks that are materialized the same way (a tree of depth
log_{chunk}(width)). Each materialization costs one attention layer. The result has the same
value at every position for every vector of the input program (names are kept; new vectors get
fresh names), which the construction's checks confirm on every verified word.
"""

from __future__ import annotations

from langclass.core.base.limits import Deadline

from .brasp_program import AttentionOp, BAnd, BConst, BExpr, BNot, BOr, BVar, PositionOp, Program, bexpr_vars

__all__ = ["narrow_program", "ATTENTION_COST", "DEFAULT_WIDTH"]

ATTENTION_COST = 3
"""Coordinates a reader may need for one attention output of a formula-compiled program (its flag,
score part and value part while it is being finalized)."""

DEFAULT_WIDTH = 12
"""Largest coordinate cost of an expression left as it is (the compiler accepts 14)."""


def narrow_program(program: Program, width: int = DEFAULT_WIDTH, deadline: Deadline | None = None, *,
                   identity_cost: int = ATTENTION_COST) -> Program:
    """An equivalent program whose position-wise expressions have coordinate cost ≤ ``width``
    (module docstring); the program itself when nothing is wide.

    Args:
        program: a B-RASP program.
        width: the largest cost (initial vector 1, attention output :data:`ATTENTION_COST`) an
            expression may keep; at least 2·ATTENTION_COST.
        deadline: checked every 256 operations (``TimeLimitExceeded``, step "B-RASP narrowing").

    Returns:
        A :class:`~langclass.core.logic.brasp.Program` with the same alphabet, output and initial vectors.
    """
    if width < 2 * ATTENTION_COST:
        raise ValueError(f"width must be ≥ {2 * ATTENTION_COST}")
    leaves: dict[str, frozenset[str]] = {n: frozenset([n]) for n in list(program.initial) + list(program.marks)}
    cost_of: dict[str, int] = {n: 1 for n in leaves}
    taken = set(program.names)
    out_ops: list = []
    counter = [0]

    def fresh(base: str) -> str:
        while True:
            counter[0] += 1
            name = f"{base}_n{counter[0]}"  # a NAME the text syntax reads back (never taken: checked)
            if name not in taken:
                taken.add(name)
                return name

    def leaf_set(e: BExpr) -> frozenset[str]:
        s: set[str] = set()
        for n, _ in bexpr_vars(e):
            s |= leaves[n]
        return frozenset(s)

    def cost(ls: frozenset[str]) -> int:
        return sum(cost_of[n] for n in ls)

    def add_attention(name: str, op: AttentionOp) -> None:
        out_ops.append(op)
        leaves[name] = frozenset([name])
        cost_of[name] = identity_cost if is_identity(op) else ATTENTION_COST

    def materialize(name: str, expr: BExpr) -> None:
        """``name`` := identity attention of a position op holding ``expr``."""
        inner = fresh(name)
        out_ops.append(PositionOp(inner, expr))
        leaves[inner] = leaf_set(expr)
        add_attention(name, AttentionOp(name, "rightmost", "future_nonstrict", BConst(True), BVar(inner, "j"), BConst(False)))

    shared: dict[BExpr, str] = {}

    def materialized(expr: BExpr, base: str) -> BVar:
        """A vector holding ``expr`` (one per distinct expression: a chunk read twice is built once)."""
        if expr not in shared:
            shared[expr] = fresh(base)
            materialize(shared[expr], expr)
        return BVar(shared[expr], "i")

    def chunked(expr: BExpr, base: str) -> BExpr:
        """Cut a wide And/Or into materialized chunks until it is narrow (or cannot be cut)."""
        while isinstance(expr, (BAnd, BOr)) and cost(leaf_set(expr)) > width and len(expr.args) > 1:
            cls = type(expr)
            groups: list[list[BExpr]] = [[]]
            for a in sorted(expr.args, key=lambda a: -cost(leaf_set(a))):
                trial = groups[-1] + [a]
                if groups[-1] and cost(leaf_set(cls(tuple(trial)))) > width:
                    groups.append([a])
                else:
                    groups[-1] = trial
            if len(groups) == len(expr.args):  # every argument alone is already too wide to pair
                new_args = []
                for a in expr.args:
                    if cost(leaf_set(a)) > ATTENTION_COST:
                        if cost(leaf_set(a)) > width:
                            a = chunked(a, base)  # a wide argument is narrowed before it is materialized
                        new_args.append(materialized(a, base) if cost(leaf_set(a)) > identity_cost else a)
                    else:
                        new_args.append(a)
                expr = cls(tuple(new_args))
                continue  # the materialized arguments now pair
            new_args = []
            for g in groups:
                new_args.append(g[0] if len(g) == 1 else materialized(cls(tuple(g)), base))
            expr = cls(tuple(new_args))
        return expr

    def narrow_side(e: BExpr, base: str) -> BExpr:
        """An attention op's score/value/default: a wide one-sided expression becomes one vector."""
        if cost(leaf_set(e)) <= width:
            return e
        sides = {s for _, s in bexpr_vars(e)}
        if len(sides) != 1:
            return e  # mixed i/j expressions stay (formula-compiled programs have none)
        side = sides.pop()
        m = fresh(base)
        body = _to_side(e, "i")
        body = chunked(body, m)
        if cost(leaf_set(body)) > width:
            materialize(m, body)
        else:
            out_ops.append(PositionOp(m, body))
            leaves[m] = leaf_set(body)
        return BVar(m, side)

    for index, op in enumerate(program.ops):
        if deadline is not None and index % 256 == 0:
            deadline.check(f"B-RASP narrowing (operation {index} of {len(program.ops)})")
        if isinstance(op, PositionOp):
            expr = chunked(op.expr, op.name)
            if cost(leaf_set(expr)) > width:
                materialize(op.name, expr)
            else:
                out_ops.append(PositionOp(op.name, expr))
                leaves[op.name] = leaf_set(expr)
        else:
            new = AttentionOp(op.name, op.direction, op.mask, narrow_side(op.score, op.name),
                              narrow_side(op.value, op.name), narrow_side(op.default, op.name))
            add_attention(op.name, new)
    if len(out_ops) == len(program.ops):
        return program
    return Program(program.alphabet, tuple(out_ops), program.output, program.empty_accept, dict(program.initial),
                   program.modulus)


def is_identity(op: AttentionOp) -> bool:
    """``▶_j [j ≤ i, 1] X(j) : 0`` — X(i) itself (what :func:`narrow_program` writes to materialize)."""
    return (op.direction == "rightmost" and op.mask == "future_nonstrict" and op.score == BConst(True)
            and op.default == BConst(False) and isinstance(op.value, BVar) and op.value.side == "j")


def _to_side(e: BExpr, side: str) -> BExpr:
    if isinstance(e, BVar):
        return BVar(e.name, side)
    if isinstance(e, BConst):
        return e
    if isinstance(e, BNot):
        return BNot(_to_side(e.arg, side))
    if isinstance(e, BAnd):
        return BAnd(tuple(_to_side(a, side) for a in e.args))
    return BOr(tuple(_to_side(a, side) for a in e.args))
