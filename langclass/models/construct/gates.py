"""Boolean functions of the residual stream as ReLU units (plan stage: no torch).

Both constructions compute their Boolean gates in two-layer ReLU feed-forward layers whose
hidden units each read a few stream coordinates and write one. This module plans those units;
:func:`langclass.models.construct.assembly.write_feed_forward` writes them as weights, for soft and
hard attention alike.

A :class:`ReluUnit` is ``weight · ReLU(Σ_c inputs[c]·x[c] + bias)`` added to ``x[out]``. Every input
the units read is 0 or 1, so each unit's output is an exact small integer:

* literals and gates over literals (soft construction, *Disentangling the Expressivity of RoPE*,
  Def. C.2 / D.1: a literal is x[c] or notbos − x[c]): n-ary ∧ = ReLU(Σℓ − (n−1)),
  n-ary ∨ = ReLU(Σℓ) − ReLU(Σℓ − 1), ↔ = notbos − ReLU(a − b) − ReLU(b − a) (each 0 at BOS);
* any Boolean function of m coordinates (hard construction, *Masked Hard-Attention Transformers
  Recognize Exactly the Star-Free Languages*, Lemma 13): a sum of disjoint cubes, a cube being
  ReLU(Σ pos − Σ neg − (|pos| − 1)); disjoint cubes add up to 0 or 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.core.base.errors import LimitExceeded

__all__ = [
    "Literal", "Gate", "ReluUnit", "MAX_FFN_INPUTS", "literal_row", "gate_units", "dnf_units", "expr_coords", "truth_table",
    "evaluate_expr",
]

MAX_FFN_INPUTS = 14
"""Largest number of stream coordinates one DNF feed-forward target of the B-RASP compiler may read."""

Row = tuple[tuple[int, float], ...]
"""A sparse row over the stream: ``((coordinate, weight), …)``, coordinates distinct and ascending."""


@dataclass(frozen=True)
class Literal:
    """A 0/1 value of the soft construction's stream: ``x[coord]``, or ``notbos − x[coord]`` when ``neg``.

    Both are exactly 0 at BOS (every coordinate the plan reads as a literal is 0 there)."""

    coord: int
    neg: bool = False

    def negated(self) -> "Literal":
        return Literal(self.coord, not self.neg)


@dataclass(frozen=True)
class Gate:
    """A Boolean gate of the soft construction: ``kind`` ∈ {``"and"``, ``"or"``, ``"iff"``} over
    ``lits`` (two for ``"iff"``), written to coordinate ``out``."""

    kind: str
    lits: tuple[Literal, ...]
    out: int


@dataclass(frozen=True)
class ReluUnit:
    """One hidden unit: ``x[out] += weight · ReLU(Σ_(c, w) ∈ inputs w·x[c] + bias)``."""

    inputs: Row
    bias: float
    out: int
    weight: float


def _row(acc: dict[int, float]) -> Row:
    return tuple(sorted(acc.items()))


def _add(acc: dict[int, float], lit: Literal, notbos: int, sign: float = 1.0) -> None:
    if lit.neg:
        acc[notbos] = acc.get(notbos, 0.0) + sign
        acc[lit.coord] = acc.get(lit.coord, 0.0) - sign
    else:
        acc[lit.coord] = acc.get(lit.coord, 0.0) + sign


def literal_row(lit: Literal, notbos: int) -> Row:
    """The linear form of a literal: ``x[c]`` or ``x[notbos] − x[c]`` as a sparse row."""
    acc: dict[int, float] = {}
    _add(acc, lit, notbos)
    return _row(acc)


def gate_units(gate: Gate, notbos: int) -> list[ReluUnit]:
    """The ReLU units of one gate over literals (module docstring): 1 unit for ∧, 2 for ∨, 3 for ↔.

    Raises:
        ValueError: unknown gate kind, or ↔ without exactly two literals.
    """
    acc: dict[int, float] = {}
    for lit in gate.lits:
        _add(acc, lit, notbos)
    s, n = _row(acc), len(gate.lits)
    if gate.kind == "and":
        return [ReluUnit(s, -float(n - 1), gate.out, 1.0)]
    if gate.kind == "or":
        return [ReluUnit(s, 0.0, gate.out, 1.0), ReluUnit(s, -1.0, gate.out, -1.0)]
    if gate.kind == "iff" and n == 2:
        a, b = gate.lits
        a_minus_b: dict[int, float] = {}
        _add(a_minus_b, a, notbos)
        _add(a_minus_b, b, notbos, -1.0)
        b_minus_a: dict[int, float] = {}
        _add(b_minus_a, b, notbos)
        _add(b_minus_a, a, notbos, -1.0)
        return [ReluUnit(((notbos, 1.0),), 0.0, gate.out, 1.0), ReluUnit(_row(a_minus_b), 0.0, gate.out, -1.0),
                ReluUnit(_row(b_minus_a), 0.0, gate.out, -1.0)]
    raise ValueError(f"unknown gate {gate.kind!r} with {n} literals")


# Boolean expressions over stream coordinates (hard construction): ("c", coord), ("k", bool),
# ("not", e), ("and", (e, …)), ("or", (e, …)).
def evaluate_expr(e: Any, env: dict[int, bool]) -> bool:
    """Value of a stream expression under ``env`` (coordinate → bit)."""
    kind = e[0]
    if kind == "c":
        return env[e[1]]
    if kind == "k":
        return e[1]
    if kind == "not":
        return not evaluate_expr(e[1], env)
    if kind == "and":
        return all(evaluate_expr(a, env) for a in e[1])
    if kind == "or":
        return any(evaluate_expr(a, env) for a in e[1])
    raise AssertionError(kind)


def truth_table(e: Any, cs: Sequence[int]) -> np.ndarray:
    """The values of a stream expression under every assignment of the coordinates ``cs``: bool
    ``[2^m]``, entry index = the bits of the assignment with ``cs[0]`` most significant (the order of
    ``itertools.product([False, True], repeat=m)``); :func:`evaluate_expr` on every row, vectorized
    (one array operation per expression node, shared nodes evaluated once)."""
    m = len(cs)
    idx = np.arange(1 << m, dtype=np.int64)
    cols = {c: ((idx >> (m - 1 - j)) & 1).astype(bool) for j, c in enumerate(cs)}
    memo: dict[int, tuple[Any, np.ndarray]] = {}

    def ev(x: Any) -> np.ndarray:
        hit = memo.get(id(x))
        if hit is not None:
            return hit[1]
        kind = x[0]
        if kind == "c":
            out = cols[x[1]]
        elif kind == "k":
            out = np.full(1 << m, bool(x[1]))
        elif kind == "not":
            out = ~ev(x[1])
        elif kind == "and":
            out = np.ones(1 << m, dtype=bool)
            for a in x[1]:
                out = out & ev(a)
        elif kind == "or":
            out = np.zeros(1 << m, dtype=bool)
            for a in x[1]:
                out = out | ev(a)
        else:
            raise AssertionError(kind)
        memo[id(x)] = (x, out)  # the node is kept alive with its value, so its id is not reused
        return out

    return ev(e)


def expr_coords(e: Any, acc: set[int] | None = None) -> set[int]:
    """The stream coordinates an expression reads."""
    acc = set() if acc is None else acc
    kind = e[0]
    if kind == "c":
        acc.add(e[1])
    elif kind == "not":
        expr_coords(e[1], acc)
    elif kind in ("and", "or"):
        for a in e[1]:
            expr_coords(a, acc)
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


def dnf_units(targets: Iterable[tuple[int, Any]]) -> tuple[list[ReluUnit], int]:
    """The units of one feed-forward layer computing every ``(out coordinate, expression)`` target as a
    sum of *disjoint* cubes over the coordinates it reads (*Masked Hard-Attention Transformers
    Recognize Exactly the Star-Free Languages*, Lemma 13). The cubes are the true leaves of an ordered
    decision tree of the truth table (a disjoint sum of products, never larger than the full DNF);
    when the complement needs fewer cubes the target is 1 − Σ (cubes of the complement).

    Returns:
        ``(units, most coordinates one target reads)``.

    Raises:
        LimitExceeded: ``max_ffn_inputs`` when one target reads more than :data:`MAX_FFN_INPUTS`
            coordinates (its truth table has 2^m rows).
    """
    units: list[ReluUnit] = []
    max_inputs = 0
    for out, e in targets:
        cs: Sequence[int] = sorted(expr_coords(e))
        m = len(cs)
        max_inputs = max(max_inputs, m)
        if m > MAX_FFN_INPUTS:
            raise LimitExceeded("max_ffn_inputs", MAX_FFN_INPUTS,
                                f"a feed-forward target of the B-RASP compiler reads {m} coordinates "
                                f"(> {MAX_FFN_INPUTS}); split the program's Boolean expressions")
        table = truth_table(e, cs)  # index = bits in big-endian order over cs
        cubes_true = _dsop(table, m)
        cubes_false = _dsop(~table, m)
        negate = len(cubes_false) + 1 < len(cubes_true)
        if negate:  # 1 − Σ cubes of ¬e
            units.append(ReluUnit((), 1.0, out, 1.0))
        for cube in (cubes_false if negate else cubes_true):
            row = tuple(sorted((cs[var], 1.0 if bit else -1.0) for var, bit in cube))
            npos = sum(int(bit) for _, bit in cube)
            units.append(ReluUnit(row, -float(npos - 1), out, -1.0 if negate else 1.0))
    return units, max_inputs
