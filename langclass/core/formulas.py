"""Past linear temporal logic with modular predicates: AST, text syntax, evaluation, and DFAs.

Semantics (*Disentangling the Expressivity of RoPE*, §2.1 Eq. 1 and App. A.1 Eq. 11). A word
w = w_1 ⋯ w_N is read with positions 1 … N; position N + 1 lies *outside* the word and is the
**readout position**: ``w ⊨ φ  ⇔  w, N+1 ⊨ φ``. (In the transformer, BOS sits at position 0 and EOS
at N + 1, so the readout is the EOS token.) At a position i ∈ [1, N+1]:

* ``π_a``  (written ``a``): w_i = a. At the readout position N + 1 no atom holds.
* ``⊤`` / ``⊥`` (``true`` / ``false``), ``¬``, ``∧``, ``∨``, ``→``, ``↔``: the Boolean connectives.
* ``P φ``: ∃ j < i with w, j ⊨ φ — *strict* past, over string positions j ≥ 1 (so ``P ⊤`` holds
  exactly at i > 1, and ``¬P ⊤`` marks position 1).
* ``Y φ``: i > 1 and w, i−1 ⊨ φ; ``Y^k φ``: i > k and w, i−k ⊨ φ (= k-fold ``Y``).
* ``φ S ψ`` (since): ∃ j < i with w, j ⊨ ψ and w, l ⊨ φ for every j < l < i (strict).
* ``MOD(m, r)`` (also ``MOD_m^r``): i ≡ r (mod m), m ≥ 1; r is taken modulo m. At the readout
  position, ``MOD(m, r)`` tests N + 1 ≡ r, so ``MOD(2, 1)`` alone defines (aa)* over {a}.

Examples (over {a, b}): ``P(a & !P true)`` = aΣ* (the first letter is a); ``Y a`` = Σ*a;
``P(b & Y a)`` = Σ*abΣ*; ``P(a & P b)``… ; ``MOD(2,1) & !P((MOD(2,1) & !a) | (MOD(2,0) & !b))`` =
(ab)* (Prop. 3.2 of the same paper).

Text syntax (parsed with lark, LALR(1)); loosest binding first::

    formula := iff
    iff     := imp ( ("<->" | "↔") imp )?            non-associative
    imp     := or  ( ("->" | "→") imp )?              right-associative
    or      := and ( ("|" | "∨") and )*
    and     := since ( ("&" | "∧") since )*
    since   := unary ( "S" since )?                  right-associative, binds tighter than &
    unary   := ("!" | "~" | "¬") unary | "P" unary | "Y" unary | "Y^k" unary | atom
    atom    := "(" formula ")" | "true" | "⊤" | "false" | "⊥"
             | "MOD(" m "," r ")" | "MOD_m^r" | symbol
    symbol  := a word of letters/digits/underscores that is in the alphabet, or a quoted
               string "…" / '…' (needed for symbols such as "P", "+", or ones with spaces)

Keywords (``P``, ``Y``, ``S``, ``MOD``, ``true``, ``false``) are whole words: ``Pa`` is the symbol
"Pa", not ``P a``. An alphabet symbol that collides with a keyword must be quoted.

Errors: :class:`~langclass.core.errors.FormulaSyntaxError` with ``extra['position']`` (0-based offset),
:class:`~langclass.core.errors.UnknownSymbolError` for a symbol outside the alphabet,
:class:`~langclass.core.errors.LimitExceeded` for length/nesting/state limits.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Union

import numpy as np

from .automaton import DFA
from .errors import AlphabetError, FormulaSyntaxError, InputError, LimitExceeded, UnknownSymbolError
from .inputs import check_alphabet, deepest_paren, syntax_problem
from .limits import DEFAULT_LIMITS, Limits

__all__ = [
    "Formula", "Atom", "Top", "Bottom", "Not", "And", "Or", "Implies", "Iff", "Past", "Yesterday", "Since", "Mod",
    "TOP", "BOTTOM", "conj", "disj", "neg", "past", "letters",
    "parse_formula", "formula_to_dfa", "evaluate", "evaluate_batch", "truth_table", "subformulas",
    "operators", "fragment", "formula_depth", "formula_size", "SOURCE",
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

    def text(self) -> str:
        """The formula in the documented text syntax (re-parsable by :func:`parse_formula`)."""
        return _render(self)

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


def _node(cls):
    cls = dataclass(frozen=True, eq=True, repr=True)(cls)
    cls._fields = tuple(f.name for f in cls.__dataclass_fields__.values() if f.init)
    cls.__hash__ = _cached_hash
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


def _render(f: Formula) -> str:
    memo: dict[Formula, tuple[str, int]] = {}
    for n in subformulas(f):
        memo[n] = _render_node(n, memo)
    return memo[f][0]


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


# ------------------------------------------------------------------ parsing
_GRAMMAR = r"""
    start: iff
    ?iff: imp
        | imp IFF imp                -> iff
    ?imp: disj
        | disj IMP imp               -> implies
    ?disj: conj
         | disj OR conj              -> or_
    ?conj: since
         | conj AND since            -> and_
    ?since: unary
          | unary SINCE since        -> since
    ?unary: NOT unary                -> not_
          | PAST unary               -> past
          | YEST unary               -> yest
          | atom
    ?atom: LPAR iff RPAR             -> paren
         | TRUE                      -> true
         | FALSE                     -> false
         | MODKW LPAR INT COMMA INT RPAR -> mod
         | MODSUB                    -> modsub
         | SYMBOL                    -> symbol
         | STRING                    -> symbol

    IFF.3: "<->" | "↔"
    IMP.3: "->" | "→"
    OR.3: "|" | "∨"
    AND.3: "&" | "∧"
    NOT.3: "!" | "~" | "¬"
    LPAR: "("
    RPAR: ")"
    COMMA: ","
    SINCE.2: /S(?!\w)/
    PAST.2: /P(?!\w)/
    YEST.2: /Y(\^[0-9]+)?(?!\w)/
    TRUE.2: /(true|⊤)(?!\w)/
    FALSE.2: /(false|⊥)(?!\w)/
    MODKW.2: /MOD(?!\w)/
    MODSUB.2: /MOD_[0-9]+\^[0-9]+(?!\w)/
    INT.1: /[0-9]+/
    SYMBOL.0: /\w+/
    STRING: /"[^"]*"/ | /'[^']*'/
    %import common.WS
    %ignore WS
"""

_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        from lark import Lark

        _PARSER = Lark(_GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=False, maybe_placeholders=False)
    return _PARSER


_TOKEN_DESCRIPTIONS = {
    "IFF": "'<->'", "IMP": "'->'", "OR": "'|'", "AND": "'&'", "NOT": "'!'", "LPAR": "'('", "RPAR": "')'",
    "COMMA": "','", "SINCE": "'S'", "PAST": "'P'", "YEST": "'Y'", "TRUE": "'true'", "FALSE": "'false'",
    "MODKW": "'MOD'", "MODSUB": "'MOD_m^r'", "INT": "an integer", "SYMBOL": "a symbol", "STRING": "a quoted symbol",
    "$END": "end of formula",
}


def _describe_expected(expected: Iterable[str]) -> str:
    names = sorted({_TOKEN_DESCRIPTIONS.get(e, e) for e in expected})
    if not names:
        return ""
    if len(names) > 6:
        names = names[:6] + ["…"]
    return "; expected " + ", ".join(names)


def parse_formula(text: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> Formula:
    """Parse an LTL formula over ``alphabet`` (syntax and semantics in the module docstring).

    Args:
        text: the formula, e.g. ``"P(b & Y a)"``, ``"MOD(2,1) -> a"``, ``"a S b"``, ``"Y^3 a"``.
        alphabet: the symbols Σ (non-empty, distinct, non-empty strings).
        limits: ``max_regex_length`` bounds the text length, ``max_nesting_depth`` the nesting of
            parentheses and operators, ``max_repetition`` the modulus m of MOD and the offset k of Y^k.

    Returns:
        The :class:`Formula` AST.

    Raises:
        FormulaSyntaxError: the text does not follow the syntax; ``extra`` has ``position``
            (0-based offset), ``line`` and ``column``.
        UnknownSymbolError: a symbol outside ``alphabet`` (with its ``position``).
        AlphabetError: an empty alphabet or a bad symbol.
        LimitExceeded: ``max_regex_length``, ``max_nesting_depth``, ``max_repetition`` or ``max_alphabet``.

    Example:
        >>> parse_formula("P(b & Y a)", ["a", "b"]).text()
        'P (b & Y a)'
    """
    from lark import Token, Tree
    from lark.exceptions import UnexpectedInput

    alpha = check_alphabet(alphabet, limits)
    if not isinstance(text, str):
        raise FormulaSyntaxError("the formula must be a string", field="formula")
    # NFC first (as for regexes): a decomposed symbol such as "e\u0301" is one letter "é";
    # error positions refer to the normalized text.
    text = unicodedata.normalize("NFC", text)
    limits.check("max_regex_length", len(text))
    if not text.strip():
        raise FormulaSyntaxError("the formula is empty (position 0)", field="formula", position=0)
    if deepest_paren(text, limits.max_nesting_depth) is not None:
        raise LimitExceeded("max_nesting_depth", limits.max_nesting_depth,
                            f"the formula nests parentheses deeper than max_nesting_depth={limits.max_nesting_depth}",
                            field="formula")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        p = syntax_problem(text, e)
        if p.kind == "character":
            raise FormulaSyntaxError(
                f"unexpected character {p.char!r} at position {p.position} (line {p.line}, column {p.column})"
                + _describe_expected(p.expected),
                field="formula", position=p.position, line=p.line, column=p.column,
            ) from None
        what = "the formula ends too early" if p.kind == "end" else f"unexpected {p.token!r}"
        raise FormulaSyntaxError(
            f"{what} at position {p.position}" + _describe_expected(p.expected),
            field="formula", position=p.position, line=p.line, column=p.column,
        ) from None

    # iterative conversion (no recursion on deep inputs); operator depth limited as well
    index = {s: s for s in alpha}

    def symbol_of(tok: Token) -> Formula:
        s = tok.value
        if tok.type == "STRING":
            s = s[1:-1]
            if not s:
                raise FormulaSyntaxError(f"empty quoted symbol at position {tok.start_pos}", field="formula",
                                         position=tok.start_pos)
        import unicodedata

        s = unicodedata.normalize("NFC", s)
        if s not in index:
            hint = ""
            if tok.type == "SYMBOL" and len(s) > 1 and s[0] in "PY" and s[1:] in index:
                hint = f" (write '{s[0]} {s[1:]}' for the operator {s[0]} applied to {s[1:]!r})"
            raise UnknownSymbolError(
                f"symbol {s!r} at position {tok.start_pos} is not in the alphabet {list(alpha)}{hint}",
                field="formula", symbol=s, position=tok.start_pos,
            )
        return Atom(s)

    def int_of(tok: Token, what: str, minimum: int) -> int:
        v = int(tok.value)
        if v < minimum:
            raise FormulaSyntaxError(f"{what} must be ≥ {minimum}, got {v} at position {tok.start_pos}",
                                     field="formula", position=tok.start_pos)
        if v > limits.max_repetition:
            raise LimitExceeded("max_repetition", limits.max_repetition,
                                f"{what} {v} at position {tok.start_pos} exceeds max_repetition={limits.max_repetition}",
                                field="formula")
        return v

    def mod_of(m: int, r: int) -> Formula:
        return TOP if m == 1 else Mod(m, r % m)

    results: dict[int, Formula] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[object, bool]] = [(tree.children[0], False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, Token):
            if node.type in ("SYMBOL", "STRING"):
                results[id(node)] = symbol_of(node)
                depth[id(node)] = 1
            continue
        assert isinstance(node, Tree)
        if not done:
            stack.append((node, True))
            for c in node.children:
                if isinstance(c, Tree) or (isinstance(c, Token) and c.type in ("SYMBOL", "STRING")):
                    stack.append((c, False))
            continue
        kids = [c for c in node.children if isinstance(c, Tree) or (isinstance(c, Token) and c.type in ("SYMBOL", "STRING"))]
        sub = [results[id(c)] for c in kids]
        d = 1 + max((depth[id(c)] for c in kids), default=0)
        if d > limits.max_nesting_depth + 1:
            raise LimitExceeded("max_nesting_depth", limits.max_nesting_depth,
                                f"the formula nests operators deeper than max_nesting_depth={limits.max_nesting_depth}",
                                field="formula")
        rule = node.data
        toks = [c for c in node.children if isinstance(c, Token)]
        if rule == "symbol":
            out = symbol_of(node.children[0])
        elif rule == "true":
            out = TOP
        elif rule == "false":
            out = BOTTOM
        elif rule == "paren":
            out = sub[0]
        elif rule == "mod":
            ints = [t for t in toks if t.type == "INT"]
            m = int_of(ints[0], "the modulus m of MOD(m, r)", 1)
            r = int(ints[1].value)
            out = mod_of(m, r)
        elif rule == "modsub":
            tok = node.children[0]
            mm = re.match(r"MOD_([0-9]+)\^([0-9]+)", tok.value)
            m = int_of(Token("INT", mm.group(1), start_pos=tok.start_pos), "the modulus m of MOD_m^r", 1)
            out = mod_of(m, int(mm.group(2)))
        elif rule == "not_":
            out = Not(sub[0])
        elif rule == "past":
            out = Past(sub[0])
        elif rule == "yest":
            tok = node.children[0]
            k = 1
            if "^" in tok.value:
                k = int_of(Token("INT", tok.value.split("^")[1], start_pos=tok.start_pos), "the offset k of Y^k", 1)
            out = Yesterday(sub[0], k)
        elif rule == "and_":
            out = And(sub[0], sub[1])
        elif rule == "or_":
            out = Or(sub[0], sub[1])
        elif rule == "implies":
            out = Implies(sub[0], sub[1])
        elif rule == "iff":
            out = Iff(sub[0], sub[1])
        elif rule == "since":
            out = Since(sub[0], sub[1])
        else:  # pragma: no cover
            raise FormulaSyntaxError(f"unknown construct {rule}", field="formula", position=0)
        results[id(node)] = out
        depth[id(node)] = d
    return results[id(tree.children[0])]


def _check_alphabet(alphabet: Sequence[str]) -> tuple[str, ...]:
    return check_alphabet(alphabet)


def _coerce(formula: Union[str, Formula], alphabet: Sequence[str], limits: Limits) -> tuple[Formula, tuple[str, ...]]:
    alpha = _check_alphabet(alphabet)
    if isinstance(formula, Formula):
        for n in subformulas(formula):
            if isinstance(n, Atom) and n.symbol not in alpha:
                raise UnknownSymbolError(f"symbol {n.symbol!r} is not in the alphabet {list(alpha)}",
                                         field="formula", symbol=n.symbol)
        return formula, alpha
    return parse_formula(formula, alpha, limits), alpha


# ------------------------------------------------------------------ evaluation
def truth_table(formula: Union[str, Formula], alphabet: Sequence[str], words: np.ndarray,
                limits: Limits = DEFAULT_LIMITS) -> dict[Formula, np.ndarray]:
    """Truth values of every subformula at every position of a batch of equal-length words.

    Args:
        formula: a formula or its text.
        alphabet: Σ; ``words`` hold letter indices into it.
        words: ``int`` array ``[B, N]`` (all words of length N; N may be 0).

    Returns:
        ``{subformula: bool array [B, N + 2]}``; column i is position i (column 0 = BOS, always
        False; column N + 1 = the readout position).
    """
    f, alpha = _coerce(formula, alphabet, limits)
    w = np.asarray(words, dtype=np.int64)
    if w.ndim != 2:
        raise InputError("words must be a 2-D array [batch, length] of letter indices", field="words")
    B, N = w.shape
    if w.size and (w.min() < 0 or w.max() >= len(alpha)):
        raise InputError("a letter index is outside the alphabet", field="words")
    pos = np.arange(N + 2)
    string_pos = (pos >= 1) & (pos <= N)
    letter = np.full((B, N + 2), -1, dtype=np.int64)
    letter[:, 1:N + 1] = w
    idx = {s: i for i, s in enumerate(alpha)}
    val: dict[Formula, np.ndarray] = {}
    for n in subformulas(f):
        if isinstance(n, Atom):
            v = letter == idx[n.symbol]
        elif isinstance(n, Top):
            v = np.broadcast_to(string_pos | (pos == N + 1), (B, N + 2)).copy()
        elif isinstance(n, Bottom):
            v = np.zeros((B, N + 2), dtype=bool)
        elif isinstance(n, Mod):
            v = np.broadcast_to((pos % n.m) == n.r, (B, N + 2)).copy()
        elif isinstance(n, Not):
            v = ~val[n.arg]
        elif isinstance(n, And):
            v = val[n.left] & val[n.right]
        elif isinstance(n, Or):
            v = val[n.left] | val[n.right]
        elif isinstance(n, Implies):
            v = ~val[n.left] | val[n.right]
        elif isinstance(n, Iff):
            v = val[n.left] == val[n.right]
        elif isinstance(n, Past):
            a = val[n.arg] & string_pos  # only string positions count as witnesses
            cum = np.logical_or.accumulate(a, axis=1)
            v = np.zeros_like(a)
            v[:, 1:] = cum[:, :-1]
        elif isinstance(n, Yesterday):
            a = val[n.arg]
            v = np.zeros_like(a)
            if n.k < N + 2:
                v[:, n.k + 1:] = a[:, 1:N + 2 - n.k]  # position i > k reads i − k ≥ 1
        elif isinstance(n, Since):
            l, r = val[n.left], val[n.right]
            v = np.zeros_like(l)
            for i in range(2, N + 2):  # S(i) = r(i−1) ∨ (l(i−1) ∧ S(i−1)), S(1) = False
                v[:, i] = r[:, i - 1] | (l[:, i - 1] & v[:, i - 1])
        else:  # pragma: no cover
            raise TypeError(f"unknown node {n!r}")
        v[:, 0] = False
        val[n] = v
    return val


def evaluate_batch(formula: Union[str, Formula], alphabet: Sequence[str], words: np.ndarray,
                   limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """Acceptance ``w, N+1 ⊨ φ`` for a batch ``[B, N]`` of letter-index words: bool array ``[B]``."""
    f, alpha = _coerce(formula, alphabet, limits)
    w = np.asarray(words, dtype=np.int64)
    return truth_table(f, alpha, w, limits)[f][:, w.shape[1] + 1]


def evaluate(formula: Union[str, Formula], word: Sequence[str], alphabet: Sequence[str],
             position: int | None = None, limits: Limits = DEFAULT_LIMITS) -> bool:
    """``w, i ⊨ φ`` for one word (a sequence of symbols, or a str of one-character symbols).

    Args:
        position: i ∈ [1, N+1]; default the readout position N + 1 (acceptance, Eq. 11).

    Raises:
        UnknownSymbolError: a letter outside the alphabet. InputError: position out of range.
    """
    f, alpha = _coerce(formula, alphabet, limits)
    idx = {s: i for i, s in enumerate(alpha)}
    try:
        enc = [idx[s] for s in word]
    except KeyError as e:
        raise UnknownSymbolError(f"symbol {e.args[0]!r} is not in the alphabet {list(alpha)}", symbol=e.args[0]) from None
    N = len(enc)
    i = N + 1 if position is None else int(position)
    if not 1 <= i <= N + 1:
        raise InputError(f"position {i} is outside 1..{N + 1}", field="position")
    table = truth_table(f, alpha, np.asarray([enc], dtype=np.int64).reshape(1, N), limits)
    return bool(table[f][0, i])


# ------------------------------------------------------------------ formula → DFA
def formula_to_dfa(formula: Union[str, Formula], alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> DFA:
    """The canonical minimal complete DFA of L(φ) = {w : w, N+1 ⊨ φ}.

    Construction: a deterministic "past state" automaton. After reading w_1 ⋯ w_t the state holds
    (t mod M, one bit per temporal node giving its truth value at position t + 1), where M is the lcm
    of the moduli of MOD atoms: for ``P ψ`` the bit ∃ j ≤ t ψ(j), for ``ψ1 S ψ2`` its value at t + 1,
    for ``Y^k ψ`` a k-bit shift register of ψ(t), …, ψ(t−k+1) (False before position 1). Reading
    letter a evaluates every subformula at position t + 1 from the bits and a, then updates the bits;
    a state accepts when φ holds at the readout position t + 1 (no letter there). Only reachable
    states are built, then minimized (Hopcroft) and numbered canonically.

    Past LTL evaluated at the last position is deterministic in this way (every past operator is a
    function of the previous position's values), which is why formulas are a third input format.

    Args:
        formula: formula text (see :func:`parse_formula`) or a :class:`Formula`.
        alphabet: Σ.
        limits: parse limits; ``max_states`` bounds the reachable states built; ``time_limit_s``.

    Returns:
        The canonical :class:`~langclass.core.automaton.DFA`.

    Raises:
        FormulaSyntaxError, UnknownSymbolError, AlphabetError: bad input.
        LimitExceeded: ``max_states`` (``limit="max_states"``); TimeLimitExceeded.

    Example:
        >>> formula_to_dfa("MOD(2,1)", ["a"]).num_states   # (aa)*
        2
    """
    f, alpha = _coerce(formula, alphabet, limits)
    deadline = limits.deadline()
    nodes = subformulas(f)
    pos_of = {n: i for i, n in enumerate(nodes)}
    M = 1
    for n in nodes:
        if isinstance(n, Mod):
            M = M * n.m // math.gcd(M, n.m)
            limits.check("max_states", M)
    # bit layout
    slots: dict[Formula, tuple[int, int]] = {}
    nbits = 0
    for n in nodes:
        if isinstance(n, (Past, Since)):
            slots[n] = (nbits, 1)
            nbits += 1
        elif isinstance(n, Yesterday):
            slots[n] = (nbits, n.k)
            nbits += n.k
    k = len(alpha)

    # Breadth-first over the reachable states, a whole frontier at a time: every node is evaluated as
    # a boolean vector over the frontier (numpy), states are deduplicated by their packed bytes.
    sym_index = {a: i for i, a in enumerate(alpha)}

    def values_at(counter_next: np.ndarray, bits: np.ndarray, letter: int) -> list[np.ndarray]:
        """Node values ``[len(nodes)]`` of bool arrays ``[S]`` at the next position, given the states'
        counters ``[S]`` (already advanced) and bits ``[S, nbits]``; ``letter = -1`` at the readout."""
        S = bits.shape[0]
        false = np.zeros(S, dtype=bool)
        true = np.ones(S, dtype=bool)
        v: list[np.ndarray] = [false] * len(nodes)
        for i, n in enumerate(nodes):
            t = type(n)
            if t is Atom:
                v[i] = true if letter >= 0 and sym_index.get(n.symbol) == letter else false
            elif t is Top:
                v[i] = true
            elif t is Bottom:
                v[i] = false
            elif t is Mod:
                v[i] = counter_next % n.m == n.r
            elif t is Not:
                v[i] = ~v[pos_of[n.arg]]
            elif t is And:
                v[i] = v[pos_of[n.left]] & v[pos_of[n.right]]
            elif t is Or:
                v[i] = v[pos_of[n.left]] | v[pos_of[n.right]]
            elif t is Implies:
                v[i] = ~v[pos_of[n.left]] | v[pos_of[n.right]]
            elif t is Iff:
                v[i] = v[pos_of[n.left]] == v[pos_of[n.right]]
            elif t is Past or t is Since:
                v[i] = bits[:, slots[n][0]]
            elif t is Yesterday:
                s0, kk = slots[n]
                v[i] = bits[:, s0 + kk - 1]
        return v

    def step(counter: np.ndarray, bits: np.ndarray, letter: int) -> tuple[np.ndarray, np.ndarray]:
        nxt = (counter + 1) % M
        v = values_at(nxt, bits, letter)
        nb = bits.copy()
        for n, (s0, kk) in slots.items():
            if isinstance(n, Past):
                nb[:, s0] = bits[:, s0] | v[pos_of[n.arg]]
            elif isinstance(n, Since):
                nb[:, s0] = v[pos_of[n.right]] | (v[pos_of[n.left]] & bits[:, s0])
            else:  # shift register: nb[s] = ψ(t+1), nb[s+1] = ψ(t), ...
                nb[:, s0 + 1:s0 + kk] = bits[:, s0:s0 + kk - 1]
                nb[:, s0] = v[pos_of[n.arg]]
        return nxt, nb

    def keys(counter: np.ndarray, bits: np.ndarray) -> list[bytes]:
        packed = np.packbits(bits, axis=1) if nbits else np.zeros((bits.shape[0], 0), dtype=np.uint8)
        both = np.concatenate([counter.astype(">i8").view(np.uint8).reshape(-1, 8), packed], axis=1)
        return [r.tobytes() for r in both]

    counters = [np.zeros(1, dtype=np.int64)]
    bitrows = [np.zeros((1, nbits), dtype=bool)]
    index = {keys(counters[0], bitrows[0])[0]: 0}
    n_states = 1
    root = pos_of[f]
    accepting_parts: list[np.ndarray] = []
    row_parts: list[np.ndarray] = []
    f_counter, f_bits = counters[0], bitrows[0]
    while f_counter.size:
        deadline.check("formula_to_dfa")
        accepting_parts.append(values_at((f_counter + 1) % M, f_bits, -1)[root])
        rows_here = np.empty((f_counter.size, k), dtype=np.int64)
        new_c: list[np.ndarray] = []
        new_b: list[np.ndarray] = []
        for a in range(k):
            nc, nb = step(f_counter, f_bits, a)
            for r, key in enumerate(keys(nc, nb)):
                j = index.get(key)
                if j is None:
                    j = index[key] = n_states
                    n_states += 1
                    if n_states > limits.max_states:
                        raise LimitExceeded("max_states", limits.max_states,
                                            f"the formula's state automaton exceeds max_states={limits.max_states}")
                    new_c.append(nc[r:r + 1])
                    new_b.append(nb[r:r + 1])
                rows_here[r, a] = j
        row_parts.append(rows_here)
        f_counter = np.concatenate(new_c) if new_c else np.zeros(0, dtype=np.int64)
        f_bits = np.concatenate(new_b) if new_b else np.zeros((0, nbits), dtype=bool)
    rows = np.concatenate(row_parts) if row_parts else np.zeros((0, k), dtype=np.int64)
    accepting = np.concatenate(accepting_parts)
    dfa = DFA(alpha, rows.astype(np.int32).reshape(len(rows), k), 0, accepting.astype(bool))
    return dfa.canonical()


def formula_from_mapping(data: Mapping, limits: Limits = DEFAULT_LIMITS) -> tuple[Formula, tuple[str, ...]]:
    """Read ``{"formula": text, "alphabet": [...]}`` (the formula input format of the API).

    Raises:
        InputError: a missing or non-string ``formula``; the errors of :func:`parse_formula`.
    """
    if not isinstance(data, Mapping) or "formula" not in data:
        raise InputError("expected an object with 'formula' and 'alphabet'", field="formula")
    if "alphabet" not in data:
        raise AlphabetError("missing 'alphabet'", field="alphabet")
    alpha = _check_alphabet(data["alphabet"])
    return parse_formula(data["formula"], alpha, limits), alpha
