"""B-RASP programs as data: Boolean expressions over vectors, the two kinds of operation and the
program (its vectors, attention depth, text and record).

Source: Yang, Chiang & Angluin, *Masked Hard-Attention Transformers Recognize Exactly the Star-Free
Languages*, §3.1 (definition). The text syntax, the interpreter and the translation from LTL are in
:mod:`langclass.core.logic.brasp`, which re-exports everything here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Union

import numpy as np

__all__ = [
    "BVar", "BConst", "BNot", "BAnd", "BOr", "BExpr", "PositionOp", "AttentionOp", "Op", "Program",
    "bexpr_vars", "bexpr_eval", "bexpr_text", "SOURCE", "MASKS", "mark_names", "MAX_MARKS",
]

SOURCE = "Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages, §3 (B-RASP)"

MASKS = ("none", "future", "past", "future_nonstrict", "past_nonstrict")

MAX_MARKS = 1_000
"""Largest modulus of a program's position marks (``marks m``)."""


# --------------------------------------------------------------------- Boolean expressions
@dataclass(frozen=True)
class BVar:
    """Vector ``name`` read at the query position (``side="i"``) or the key position (``"j"``)."""

    name: str
    side: str = "i"


@dataclass(frozen=True)
class BConst:
    value: bool


@dataclass(frozen=True)
class BNot:
    arg: "BExpr"


@dataclass(frozen=True)
class BAnd:
    args: tuple["BExpr", ...]


@dataclass(frozen=True)
class BOr:
    args: tuple["BExpr", ...]


BExpr = Union[BVar, BConst, BNot, BAnd, BOr]


def bexpr_vars(e: BExpr) -> set[tuple[str, str]]:
    """The (name, side) pairs ``e`` reads."""
    if isinstance(e, BVar):
        return {(e.name, e.side)}
    if isinstance(e, BConst):
        return set()
    if isinstance(e, BNot):
        return bexpr_vars(e.arg)
    out: set[tuple[str, str]] = set()
    for a in e.args:
        out |= bexpr_vars(a)
    return out


def bexpr_eval(e: BExpr, env) -> np.ndarray | bool:
    """Evaluate with ``env(name, side)`` returning broadcastable bool arrays."""
    if isinstance(e, BVar):
        return env(e.name, e.side)
    if isinstance(e, BConst):
        return e.value
    if isinstance(e, BNot):
        return np.logical_not(bexpr_eval(e.arg, env))
    vals = [bexpr_eval(a, env) for a in e.args]
    if isinstance(e, BAnd):
        out = True
        for v in vals:
            out = np.logical_and(out, v)
        return out
    out = False
    for v in vals:
        out = np.logical_or(out, v)
    return out


def bexpr_text(e: BExpr, bare_i: bool = False, prec: int = 0) -> str:
    """Render in the program syntax (``bare_i``: write X for X(i))."""
    if isinstance(e, BVar):
        return e.name if (bare_i and e.side == "i") else f"{e.name}({e.side})"
    if isinstance(e, BConst):
        return "1" if e.value else "0"
    if isinstance(e, BNot):
        return "!" + bexpr_text(e.arg, bare_i, 3)
    p, sym = (2, " & ") if isinstance(e, BAnd) else (1, " | ")
    if not e.args:
        return "1" if isinstance(e, BAnd) else "0"
    s = sym.join(bexpr_text(a, bare_i, p + 1) for a in e.args)
    return f"({s})" if p < prec or (prec > 0 and len(e.args) > 1 and p <= prec) else s


# --------------------------------------------------------------------- program
@dataclass(frozen=True)
class PositionOp:
    """``name(i) := expr(i)``."""

    name: str
    expr: BExpr


@dataclass(frozen=True)
class AttentionOp:
    """``name(i) := ◀/▶_j [mask, score] value : default``.

    Attributes:
        direction: ``"leftmost"`` (◀) or ``"rightmost"`` (▶).
        mask: ``"none"`` (M = 1), ``"future"`` (j < i), ``"past"`` (j > i), ``"future_nonstrict"``
            (j ≤ i), ``"past_nonstrict"`` (j ≥ i).
    """

    name: str
    direction: str
    mask: str
    score: BExpr
    value: BExpr
    default: BExpr


Op = Union[PositionOp, AttentionOp]


@dataclass(frozen=True)
class Program:
    """A B-RASP program over ``alphabet``.

    Attributes:
        alphabet: Σ.
        ops: the definitions in order.
        output: the name of the output vector (read at the last position).
        empty_accept: whether the empty word is accepted (B-RASP itself is defined on Σ⁺).
        initial: ``{initial vector name: symbol}``.
        modulus: m of the position marks ``MOD_r`` (r < m; ``MOD_r(i)`` ⇔ i ≡ r mod m), further initial
            vectors of B-RASP[MOD] (Thm 19 / Cor 20 of the source); 1 = no marks.
    """

    alphabet: tuple[str, ...]
    ops: tuple[Op, ...]
    output: str
    empty_accept: bool = False
    initial: Mapping[str, str] = field(default_factory=dict)
    modulus: int = 1

    @property
    def marks(self) -> dict[str, int]:
        """``{mark vector name: residue}`` (empty when ``modulus`` is 1)."""
        return mark_names(self.modulus)

    @property
    def names(self) -> list[str]:
        """Initial vectors, marks, then defined vectors, in order."""
        return list(self.initial) + list(self.marks) + [op.name for op in self.ops]

    def depths(self) -> dict[str, int]:
        """Attention depth of every vector (initial and marks: 0; attention op: 1 + max depth it reads)."""
        d = {n: 0 for n in list(self.initial) + list(self.marks)}
        for op in self.ops:
            if isinstance(op, PositionOp):
                d[op.name] = max((d[n] for n, _ in bexpr_vars(op.expr)), default=0)
            else:
                reads = bexpr_vars(op.score) | bexpr_vars(op.value) | bexpr_vars(op.default)
                d[op.name] = 1 + max((d[n] for n, _ in reads), default=0)
        return d

    @property
    def depth(self) -> int:
        """The attention depth of the program (max over vectors)."""
        return max(self.depths().values(), default=0)

    def text(self) -> str:
        """The program in the documented syntax (re-parsable)."""
        lines = [f"marks {self.modulus}"] if self.modulus > 1 else []
        for op in self.ops:
            if isinstance(op, PositionOp):
                lines.append(f"{op.name} := {bexpr_text(op.expr, bare_i=True)}")
            else:
                arrow = "<j" if op.direction == "leftmost" else ">j"
                mask = {"none": "1", "future": "j < i", "past": "j > i", "future_nonstrict": "j <= i",
                        "past_nonstrict": "j >= i"}[op.mask]
                lines.append(f"{op.name} := {arrow} [{mask}, {bexpr_text(op.score)}] {bexpr_text(op.value)} : "
                             f"{bexpr_text(op.default, bare_i=True)}")
        lines.append(f"output {self.output}")
        lines.append(f"empty {'accept' if self.empty_accept else 'reject'}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"program": self.text(), "alphabet": list(self.alphabet), "output": self.output,
                "vectors": len(self.ops), "attention_ops": sum(isinstance(o, AttentionOp) for o in self.ops),
                "depth": self.depth, "empty_accept": self.empty_accept, "modulus": self.modulus, "source": SOURCE}


def mark_names(modulus: int) -> dict[str, int]:
    """The position-mark vectors of B-RASP[MOD_m]: ``{"MOD_r": r}`` for r < m (none for m = 1)."""
    return {f"MOD_{r}": r for r in range(modulus)} if modulus > 1 else {}
