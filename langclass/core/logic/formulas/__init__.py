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

Errors: :class:`~langclass.core.base.errors.FormulaSyntaxError` with ``extra['position']`` (0-based offset),
:class:`~langclass.core.base.errors.UnknownSymbolError` for a symbol outside the alphabet,
:class:`~langclass.core.base.errors.LimitExceeded` for length/nesting/state limits.

The package: :mod:`.syntax` (AST, constructors, fragments, rendering), :mod:`.parser` (text and
JSON input), :mod:`.semantics` (truth tables, formula → DFA). Every public name is importable from
``langclass.core.logic.formulas``.
"""

from __future__ import annotations

from .parser import _check_alphabet, _coerce, formula_from_mapping, parse_formula  # noqa: F401
from .semantics import evaluate, evaluate_batch, formula_to_dfa, truth_table
from .syntax import (
    BOTTOM,
    KEYWORDS,
    SOURCE,
    TOP,
    And,
    Atom,
    Bottom,
    Formula,
    Iff,
    Implies,
    Mod,
    Not,
    Or,
    Past,
    Since,
    Top,
    Yesterday,
    conj,
    disj,
    formula_depth,
    formula_size,
    fragment,
    letters,
    neg,
    operators,
    past,
    subformulas,
)

__all__ = [
    "Formula", "Atom", "Top", "Bottom", "Not", "And", "Or", "Implies", "Iff", "Past", "Yesterday", "Since", "Mod",
    "TOP", "BOTTOM", "conj", "disj", "neg", "past", "letters",
    "parse_formula", "formula_to_dfa", "evaluate", "evaluate_batch", "truth_table", "subformulas",
    "operators", "fragment", "formula_depth", "formula_size", "formula_from_mapping", "SOURCE", "KEYWORDS",
]
