"""The formula AST (frozen, hash-consed nodes), smart constructors, traversal, fragments and text rendering.

See :mod:`langclass.core.logic.formulas` for the logic's semantics and text syntax.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce

from langclass.core.base.errors import InputError

__all__ = [
    "Formula", "Atom", "Top", "Bottom", "Not", "And", "Or", "Implies", "Iff", "Past", "Yesterday", "Since", "Mod",
    "TOP", "BOTTOM", "conj", "disj", "neg", "past", "letters", "subformulas", "operators", "fragment",
    "formula_depth", "formula_size", "SOURCE", "KEYWORDS",
]

SOURCE = "Disentangling the Expressivity of RoPE, §2.1 (Eq. 1) and App. A.1 (Eq. 11)"

KEYWORDS = frozenset({"P", "Y", "S", "MOD", "true", "false"})


# ----------------------------------------------------------------------------- AST
class Formula:
    """Base class of LTL formula nodes (immutable; hashable; children first in :func:`subformulas`).

    Subclasses are frozen dataclasses; the hash is cached so that formulas shared as a DAG (as the
    synthesized ones are) hash in time linear in the number of *distinct* nodes.
    """

    __slots__ = ()

    @property
    def children(self) -> tuple["Formula", ...]:
        return ()

    def text(self, max_chars: int | None = None) -> str:
        """The formula in the documented text syntax (re-parsable by :func:`parse_formula`).

        ``max_chars``: return only the first ``max_chars`` characters, in time and memory linear in
        the number of distinct subformulas × ``max_chars`` — the full text of a shared DAG can be
        exponentially long (the synthesized formula of a{30}), so labels must use this form."""
        return _render(self, max_chars)

    def __str__(self) -> str:
        return self.text()

    def to_dict(self) -> dict:
        """JSON-ready description: text, fragment, operators, size and depth."""
        return {
            "text": self.text(),
            "fragment": fragment(self),
            "operators": sorted(operators(self)),
            "size": formula_size(self),
            "distinct_subformulas": len(subformulas(self)),
            "depth": formula_depth(self),
        }


def _cached_hash(self) -> int:
    h = self.__dict__.get("_h")
    if h is None:
        h = hash((type(self).__name__,) + tuple(getattr(self, f) for f in self._fields))
        object.__setattr__(self, "_h", h)
    return h


_INTERN: "weakref.WeakValueDictionary[tuple, Formula]" = weakref.WeakValueDictionary()
"""Hash-consing table: every node built by calling its class is shared with a structurally equal live
node, so equal formulas are one object and comparing them is an identity test (synthesized formulas
are DAGs whose structural comparison would otherwise be exponential)."""


def _intern_new(cls, *args, **kwargs):
    if not args and not kwargs:  # copy / unpickling path: a fresh object, compared structurally
        obj = object.__new__(cls)
        object.__setattr__(obj, "_loose", True)
        return obj
    vals = list(args)
    for name in cls._fields[len(args):]:
        vals.append(kwargs[name] if name in kwargs else cls.__dataclass_fields__[name].default)
    key = (cls, *vals)
    try:
        hit = _INTERN.get(key)
    except TypeError:  # an unhashable argument: let the dataclass reject or keep it
        return object.__new__(cls)
    if hit is not None:
        return hit
    obj = object.__new__(cls)
    _INTERN[key] = obj
    return obj


def _node(cls):
    cls = dataclass(frozen=True, eq=True, repr=True)(cls)
    cls._fields = tuple(f.name for f in cls.__dataclass_fields__.values() if f.init)
    cls.__hash__ = _cached_hash
    structural = cls.__eq__

    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        if hash(self) != hash(other):
            return False
        if "_loose" not in self.__dict__ and "_loose" not in other.__dict__:
            return False  # two distinct hash-consed nodes are structurally different
        return structural(self, other)

    cls.__eq__ = __eq__
    cls.__new__ = _intern_new
    return cls


@_node
class Atom(Formula):
    """π_a: the symbol at the current position is ``symbol``."""

    symbol: str


@_node
class Top(Formula):
    """⊤ (true everywhere)."""


@_node
class Bottom(Formula):
    """⊥ (false everywhere)."""


@_node
class Not(Formula):
    """¬φ."""

    arg: Formula

    @property
    def children(self):
        return (self.arg,)


@_node
class And(Formula):
    """φ ∧ ψ."""

    left: Formula
    right: Formula

    @property
    def children(self):
        return (self.left, self.right)


@_node
class Or(Formula):
    """φ ∨ ψ."""

    left: Formula
    right: Formula

    @property
    def children(self):
        return (self.left, self.right)


@_node
class Implies(Formula):
    """φ → ψ (= ¬φ ∨ ψ)."""

    left: Formula
    right: Formula

    @property
    def children(self):
        return (self.left, self.right)


@_node
class Iff(Formula):
    """φ ↔ ψ."""

    left: Formula
    right: Formula

    @property
    def children(self):
        return (self.left, self.right)


@_node
class Past(Formula):
    """P φ: φ held at some strictly earlier string position."""

    arg: Formula

    @property
    def children(self):
        return (self.arg,)


@_node
class Yesterday(Formula):
    """Y^k φ: i > k and φ held at position i − k (k ≥ 1; k = 1 is Y)."""

    arg: Formula
    k: int = 1

    @property
    def children(self):
        return (self.arg,)


@_node
class Since(Formula):
    """φ S ψ: ψ held at some j < i and φ at every position strictly between j and i."""

    left: Formula
    right: Formula

    @property
    def children(self):
        return (self.left, self.right)


@_node
class Mod(Formula):
    """MOD_m^r: the current position i satisfies i ≡ r (mod m); 0 ≤ r < m."""

    m: int
    r: int


TOP = Top()
BOTTOM = Bottom()


# ------------------------------------------------------------------ smart constructors
def neg(f: Formula) -> Formula:
    """¬f with constant folding and double-negation removal."""
    if isinstance(f, Top):
        return BOTTOM
    if isinstance(f, Bottom):
        return TOP
    if isinstance(f, Not):
        return f.arg
    return Not(f)


def conj(*fs: Formula) -> Formula:
    """f1 ∧ … ∧ fn (left-nested) with ⊤/⊥ folding and duplicate removal; ⊤ for no arguments."""
    out: list[Formula] = []
    for f in fs:
        if isinstance(f, Bottom):
            return BOTTOM
        if isinstance(f, Top) or f in out:
            continue
        out.append(f)
    if not out:
        return TOP
    return reduce(And, out)


def disj(*fs: Formula) -> Formula:
    """f1 ∨ … ∨ fn (left-nested) with ⊤/⊥ folding and duplicate removal; ⊥ for no arguments."""
    out: list[Formula] = []
    for f in fs:
        if isinstance(f, Top):
            return TOP
        if isinstance(f, Bottom) or f in out:
            continue
        out.append(f)
    if not out:
        return BOTTOM
    return reduce(Or, out)


def past(f: Formula) -> Formula:
    """P f with P ⊥ = ⊥ folded."""
    return BOTTOM if isinstance(f, Bottom) else Past(f)


def letters(symbols: Iterable[str]) -> Formula:
    """π_{a1} ∨ … ∨ π_{an} (⊥ for the empty set): "the current letter is one of ``symbols``"."""
    return disj(*(Atom(s) for s in symbols))


# ------------------------------------------------------------------ traversal
def subformulas(f: Formula) -> list[Formula]:
    """Distinct subformulas of ``f`` in post-order (children before parents), ``f`` last. Iterative."""
    seen: set[Formula] = set()
    order: list[Formula] = []
    stack: list[tuple[Formula, bool]] = [(f, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            if node not in seen:
                seen.add(node)
                order.append(node)
            continue
        if node in seen:
            continue
        stack.append((node, True))
        for c in reversed(node.children):
            if c not in seen:
                stack.append((c, False))
    return order


def formula_depth(f: Formula) -> int:
    """Nesting depth (an atom has depth 1)."""
    depth: dict[Formula, int] = {}
    for n in subformulas(f):
        depth[n] = 1 + max((depth[c] for c in n.children), default=0)
    return depth[f]


def formula_size(f: Formula) -> int:
    """Number of nodes of ``f`` written as a tree (what its text costs); can exceed the DAG size."""
    size: dict[Formula, int] = {}
    for n in subformulas(f):
        size[n] = 1 + sum(size[c] for c in n.children)
    return size[f]


_OP_NAMES = {Past: "P", Yesterday: "Y", Since: "S", Mod: "MOD"}


def operators(f: Formula) -> set[str]:
    """Temporal operators and predicates used: a subset of {"P", "Y", "S", "MOD"}."""
    return {_OP_NAMES[type(n)] for n in subformulas(f) if type(n) in _OP_NAMES}


def fragment(f: Formula) -> str:
    """The least named fragment containing ``f``: LTL[P], LTL[P,MOD], LTL[P,Y], LTL[P,Y,MOD],
    LTL[S] (= star-free, FO[<]) or LTL[S,MOD] (= FO[<,MOD]); ``Boolean`` without temporal operators."""
    ops = operators(f)
    if "S" in ops:
        return "LTL[S,MOD]" if "MOD" in ops else "LTL[S]"
    if not ops:
        return "Boolean"
    if "Y" in ops:
        return "LTL[P,Y,MOD]" if "MOD" in ops else "LTL[P,Y]"
    return "LTL[P,MOD]" if "MOD" in ops else "LTL[P]"


# ------------------------------------------------------------------ rendering
_PREC = {Iff: 1, Implies: 2, Or: 3, And: 4, Since: 5}
_UNARY_PREC = 6
_BARE = re.compile(r"^\w+$")


def _symbol_text(s: str) -> str:
    if _BARE.match(s) and s not in KEYWORDS and not re.match(r"^MOD_\d+$", s):
        return s
    if '"' not in s:
        return '"' + s + '"'
    if "'" not in s:
        return "'" + s + "'"
    raise InputError(f"symbol {s!r} contains both quote characters and cannot be written in a formula")


def _render(f: Formula, max_chars: int | None = None) -> str:
    memo: dict[Formula, tuple[str, int]] = {}
    for n in subformulas(f):
        text, prec = _render_node(n, memo)
        # keeping max_chars + 1 characters of every node keeps the first max_chars characters of every
        # concatenation exact (a cut piece is longer than max_chars, so nothing after it is reached)
        memo[n] = (text if max_chars is None else text[:max_chars + 1], prec)
    return memo[f][0] if max_chars is None else memo[f][0][:max_chars]


def _render_node(n: Formula, memo) -> tuple[str, int]:
    def wrap(c: Formula, min_prec: int) -> str:
        text, p = memo[c]
        return text if p >= min_prec else f"({text})"

    if isinstance(n, Atom):
        return _symbol_text(n.symbol), 9
    if isinstance(n, Top):
        return "true", 9
    if isinstance(n, Bottom):
        return "false", 9
    if isinstance(n, Mod):
        return f"MOD({n.m},{n.r})", 9
    if isinstance(n, Not):
        return "!" + wrap(n.arg, _UNARY_PREC), _UNARY_PREC
    if isinstance(n, Past):
        return "P " + wrap(n.arg, _UNARY_PREC), _UNARY_PREC
    if isinstance(n, Yesterday):
        op = "Y" if n.k == 1 else f"Y^{n.k}"
        return op + " " + wrap(n.arg, _UNARY_PREC), _UNARY_PREC
    p = _PREC[type(n)]
    if isinstance(n, (And, Or)):  # left-associative
        sym = " & " if isinstance(n, And) else " | "
        return wrap(n.left, p) + sym + wrap(n.right, p + 1), p
    if isinstance(n, Since):  # right-associative
        return wrap(n.left, p + 1) + " S " + wrap(n.right, p), p
    if isinstance(n, Implies):  # right-associative
        return wrap(n.left, p + 1) + " -> " + wrap(n.right, p), p
    if isinstance(n, Iff):  # non-associative
        return wrap(n.left, p + 1) + " <-> " + wrap(n.right, p + 1), p
    raise TypeError(f"unknown formula node {n!r}")
