"""The result of a synthesis: a formula equivalent to a DFA, verified, with how it was built.

Shared by :mod:`langclass.core.synthesis.synthesis` and :mod:`langclass.core.synthesis.synthesis_y` (so neither imports
the other's module to build one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langclass.core.logic.formulas import Formula, formula_size, subformulas

__all__ = ["Synthesis", "MAX_TEXT_NODES"]

MAX_TEXT_NODES = 200_000
"""Formulas whose tree size exceeds this are reported without their text (the DAG is still used)."""


@dataclass(frozen=True)
class Synthesis:
    """A synthesized formula equivalent to a DFA.

    Attributes:
        formula: the formula (a DAG of shared subformulas).
        alphabet: Σ.
        method: ``"monomials"`` | ``"periodic-word"`` | ``"modular-states"``.
        fragment: the formula's fragment (``"LTL[P]"``, ``"LTL[P,MOD]"`` …).
        monomials: for ``"monomials"``, each monomial as text ``{a,b}* c {b}*``; else empty.
        word: for ``"periodic-word"``, the word w of (w)*.
        verified: the formula's DFA has the input's fingerprint (always True when returned).
        fingerprint: the language's fingerprint.
        source: paper and result the construction follows.
    """

    formula: Formula
    alphabet: tuple[str, ...]
    method: str
    fragment: str
    monomials: tuple[str, ...] = ()
    word: tuple[str, ...] | None = None
    verified: bool = False
    fingerprint: str = ""
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str | None:
        """The formula text, or None when its tree size exceeds :data:`MAX_TEXT_NODES`."""
        return self.formula.text() if formula_size(self.formula) <= MAX_TEXT_NODES else None

    def to_dict(self) -> dict:
        size = formula_size(self.formula)
        return {
            "formula": self.text,
            "formula_tree_size": size,
            "formula_distinct_subformulas": len(subformulas(self.formula)),
            "alphabet": list(self.alphabet),
            "method": self.method,
            "fragment": self.fragment,
            "monomials": list(self.monomials),
            "word": None if self.word is None else list(self.word),
            "verified": self.verified,
            "fingerprint": self.fingerprint,
            "source": self.source,
            "notes": list(self.notes),
        }
