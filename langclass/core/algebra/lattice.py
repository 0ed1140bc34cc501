"""The class lattice: stable keys, names, logics, algebras, references, inclusions, and consistency.

Each class of the hierarchy that decides what transformers recognize has a stable key (used in the
API, the database and the CLI) and a :class:`ClassInfo`. :data:`INCLUSIONS` lists the inclusions
L(sub) ⊆ L(sup) that hold for every language; :func:`check_consistency` asserts them on a set of
results (a violation is a bug and raises :class:`LatticeViolation`), and :func:`infer` fills
unknown answers that the known ones imply.

Sources: the inclusions of the theory brief §1 — LTL[P] ⊂ LTL[P,MOD] ⊂ FO[<,MOD]; LTL[P] ⊂ LTL[P,Y]
⊂ star-free ⊂ FO[<,MOD]; LTL[P] ⊂ DA ⊂ star-free; QR ⊂ QDA ⊂ quasi-aperiodic — plus the classical
ones J ⊂ R (Simon 1975), LJ₁ ⊆ LTT ⊆ LR (Brzozowski–Simon 1973, Beauquier–Pin 1989: ACom ⊆ J ⊆ R),
LTT ⊆ aperiodic, DA ⊆ QDA, R ⊆ DA — and the unary temporal family PL/FL/TL(C) for C ∈ {ST, DD, MOD,
MOD⁺} (Place & Zeitoun, "A generic characterization of generalized unary temporal logic and two-variable
first-order logic"): ST ⊆ DD, ST ⊆ MOD ⊆ MOD⁺ and DD ⊆ MOD⁺ give PL(C) ⊆ PL(C') (likewise FL, TL), and
PL(C), FL(C) ⊆ TL(C) (a past or future formula is a formula of both); J-trivial ⊆ L-trivial; LTT, closed
under reversal, lies in LTL[F,X] as in LTL[P,Y].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = [
    "ClassInfo",
    "CLASS_INFO",
    "CLASS_KEYS",
    "INCLUSIONS",
    "ACCEPTANCE_DEPENDENT",
    "LatticeViolation",
    "check_consistency",
    "infer",
    "implied_by",
    "contained_in",
]


@dataclass(frozen=True)
class ClassInfo:
    """Static description of a class.

    Attributes:
        key: stable identifier.
        name: display name.
        logic: the logic (or "—" when the class has no logic of its own here).
        algebra: the algebraic / automaton characterization we decide.
        source: references for the characterization (paper title + theorem, or classical result).
    """

    key: str
    name: str
    logic: str
    algebra: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "name": self.name, "logic": self.logic, "algebra": self.algebra, "source": self.source}


_RoPE = "Disentangling the Expressivity of RoPE"
_PZ = ("Place & Zeitoun, A generic characterization of generalized unary temporal logic and two-variable "
       "first-order logic (CSL 2024), main theorems")

CLASS_INFO: dict[str, ClassInfo] = {
    info.key: info
    for info in [
        ClassInfo("ltl_p", "LTL[P]", "LTL[P] = PFO²[<]",
                  "R-trivial syntactic monoid ⇔ partially ordered minimal DFA",
                  f"Brzozowski & Fich 1980 (partially ordered DFA ⇔ R-trivial); {_RoPE}, Table 3 (PFO²[<] = LTL[P], R)"),
        ClassInfo("ltl_p_mod", "LTL[P,MOD]", "LTL[P,MOD] = PFO²[<,MOD]",
                  "QR: some k-automaton A_k is partially ordered over all states ⇔ the stable semigroup is R-trivial",
                  f"{_RoPE}, Thm 3.3 and Lemma B.1 (QR ⇔ PODFA_k ⇔ PFO²[<,MOD] ⇔ LTL[P,MOD])"),
        ClassInfo("ltl_p_y", "LTL[P,Y]", "past LTL with P and Y",
                  "syntactic semigroup locally R-trivial (eSe R-trivial for every idempotent e; LR = R ∗ D)",
                  "mirror of Cohen, Perrin & Pin 1993, On the expressive power of temporal logic (TL[X,F] ⇔ locally L-trivial); "
                  "Stiffler 1973 (LR = R ∗ D)"),
        ClassInfo("star_free", "star-free", "FO[<] = LTL[S]",
                  "aperiodic syntactic monoid ⇔ counter-free minimal DFA",
                  "Schützenberger 1965 (star-free ⇔ aperiodic); McNaughton & Papert 1971 (FO[<], counter-free); Kamp 1968 (LTL)"),
        ClassInfo("stutter_invariant", "stutter-invariant", "— (with star-free: LTL with non-strict operators)",
                  "η(a) = η(aa) for every letter a ⇔ δ(δ(q,a),a) = δ(q,a) on the minimal DFA",
                  "Peled & Wilke 1997 (stutter-invariant star-free = LTL without next); "
                  "Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages, Thm 18"),
        ClassInfo("fo2", "FO²[<]", "FO²[<] = LTL[P,F]", "DA: (xy)^ω x (xy)^ω = (xy)^ω ⇔ every regular element is idempotent",
                  "Thérien & Wilke 1998 (FO²[<] = DA); Schützenberger 1976 (DA, unambiguous products); "
                  "Tesson & Thérien 2002 (Diamonds are forever: the variety DA)"),
        ClassInfo("fo2_mod", "FO²[<,MOD]", "FO²[<,MOD] = LTL[P,F,MOD]", "QDA: the stable semigroup is in DA",
                  f"Dartois & Paperman 2013 (Two-variable first order logic with modular predicates over words); {_RoPE}, Table 3"),
        ClassInfo("fo_mod", "FO[<,MOD] (regular ∩ AC⁰)", "FO[<,MOD]",
                  "quasi-aperiodic: the stable semigroup η(Σ^s) contains no non-trivial group",
                  "Barrington, Compton, Straubing & Thérien 1992 (Regular languages in NC¹: FO[<,MOD] = quasi-aperiodic = regular ∩ AC⁰)"),
        ClassInfo("piecewise_testable", "piecewise testable", "BΣ₁[<]", "J-trivial syntactic monoid",
                  "Simon 1975 (Piecewise testable events)"),
        ClassInfo("locally_testable", "locally testable", "Boolean combinations of prefix, suffix and factor conditions",
                  "syntactic semigroup locally idempotent and commutative (eSe a semilattice for every idempotent e)",
                  "Brzozowski & Simon 1973; McNaughton 1974 (Algebraic decision procedures for local testability)"),
        ClassInfo("locally_threshold_testable", "locally threshold testable", "FO[+1]",
                  "syntactic semigroup aperiodic and e x f y e z f = e z f y e x f for idempotents e, f",
                  "Thomas 1982 (FO[+1] = LTT); Beauquier & Pin 1989 (Factors of words); Thérien & Weiss 1985 (Graph congruences and wreath products)"),
        ClassInfo("group", "group language", "—", "the syntactic monoid is a group (every letter permutes the states of the minimal DFA)",
                  "classical (Pin, Mathematical Foundations of Automata Theory, ch. XI)"),
        ClassInfo("ltl_p_y_mod", "LTL[P,Y,MOD]", "LTL[P,Y,MOD] = PL(MOD⁺)",
                  "every MOD⁺-orbit e·K_m·e (K_m: elements with an antecedent of length ≡ 0 mod m) is R-trivial, for some m; "
                  "period = the least such m",
                  f"{_PZ}: L ∈ PL(C) ⇔ every C-orbit is R-trivial, for C = MOD⁺"),
        ClassInfo("fo2_succ", "FO²[<,+1]", "FO²[<,+1] = TL(DD) = LTL[P,F,Y,X]",
                  "every DD-orbit e·M·e is in DA (LDA)",
                  f"{_PZ}: L ∈ TL(C) ⇔ every C-orbit is in DA, for C = DD; Thérien & Wilke 1998 (FO²[<,+1] = LDA)"),
        ClassInfo("fo2_succ_mod", "FO²[<,+1,MOD]", "FO²[<,+1,MOD] = TL(MOD⁺)",
                  "every MOD⁺-orbit e·K_m·e is in DA, for some m (QLDA)",
                  f"{_PZ}: L ∈ TL(C) ⇔ every C-orbit is in DA, for C = MOD⁺; Dartois & Paperman 2013 (QLDA)"),
        ClassInfo("ltl_f", "LTL[F]", "LTL[F] = FL(ST) (pure future)", "L-trivial syntactic monoid",
                  f"{_PZ}: L ∈ FL(C) ⇔ every C-orbit is L-trivial, for C = ST (the orbit of 1 is the monoid)"),
        ClassInfo("ltl_f_x", "LTL[F,X]", "LTL[F,X] = FL(DD)", "every DD-orbit e·M·e is L-trivial (locally L-trivial)",
                  f"{_PZ}: L ∈ FL(C) ⇔ every C-orbit is L-trivial, for C = DD; Cohen, Perrin & Pin 1993 (TL[X,F] ⇔ locally L-trivial)"),
        ClassInfo("ltl_f_mod", "LTL[F,MOD]", "LTL[F,MOD] = FL(MOD)",
                  "the MOD-kernel K_m (elements with an antecedent of length ≡ 0 mod m) is L-trivial, for some m",
                  f"{_PZ}: L ∈ FL(C) ⇔ every C-orbit is L-trivial, for C = MOD"),
        ClassInfo("ltl_f_x_mod", "LTL[F,X,MOD]", "LTL[F,X,MOD] = FL(MOD⁺)",
                  "every MOD⁺-orbit e·K_m·e is L-trivial, for some m",
                  f"{_PZ}: L ∈ FL(C) ⇔ every C-orbit is L-trivial, for C = MOD⁺"),
        ClassInfo("crasp", "C-RASP", "C-RASP (counting; causal decoder, NoPE, readout at the last position)",
                  "in every strongly connected component of the minimal DFA, the balanced morphisms iterated to their "
                  "fixed point separate every two states with a different successor on some letter",
                  "Yang et al. 2026, Algebraic Decomposition Theory for Transformer Length Generalization (balanced "
                  "morphisms per component, to the fixed point); Yang & Chiang 2024, Counting Like Transformers: "
                  "Compiling Temporal Counting Logic into Softmax Transformers (C-RASP); the last-letter step and the "
                  "inclusions: docs/crasp.md"),
    ]
}

CLASS_KEYS: tuple[str, ...] = tuple(CLASS_INFO)

INCLUSIONS: tuple[tuple[str, str], ...] = (
    ("ltl_p", "ltl_p_mod"),
    ("ltl_p_mod", "fo_mod"),
    ("ltl_p", "ltl_p_y"),
    ("ltl_p_y", "star_free"),
    ("star_free", "fo_mod"),
    ("ltl_p", "fo2"),
    ("fo2", "star_free"),
    ("ltl_p_mod", "fo2_mod"),
    ("fo2_mod", "fo_mod"),
    ("fo2", "fo2_mod"),
    ("piecewise_testable", "ltl_p"),
    ("locally_testable", "locally_threshold_testable"),
    ("locally_threshold_testable", "ltl_p_y"),
    ("locally_threshold_testable", "star_free"),
    # the unary temporal family (PL/FL/TL over ST ⊆ DD, MOD ⊆ MOD⁺; PL, FL ⊆ TL)
    ("ltl_p_y", "ltl_p_y_mod"),
    ("ltl_p_mod", "ltl_p_y_mod"),
    ("ltl_p_y_mod", "fo2_succ_mod"),
    ("ltl_p_y", "fo2_succ"),
    ("fo2", "fo2_succ"),
    ("fo2_succ", "star_free"),
    ("fo2_succ", "fo2_succ_mod"),
    ("fo2_mod", "fo2_succ_mod"),
    ("fo2_succ_mod", "fo_mod"),
    ("ltl_f", "fo2"),
    ("ltl_f", "ltl_f_x"),
    ("ltl_f", "ltl_f_mod"),
    ("ltl_f_x", "ltl_f_x_mod"),
    ("ltl_f_mod", "ltl_f_x_mod"),
    ("ltl_f_x", "fo2_succ"),
    ("ltl_f_mod", "fo2_mod"),
    ("ltl_f_x_mod", "fo2_succ_mod"),
    ("piecewise_testable", "ltl_f"),
    ("locally_threshold_testable", "ltl_f_x"),
    # counting (docs/crasp.md): P φ is #[j ≤ i] φ ≥ 1 (with the strict past from the count before the
    # position); a C-RASP program's Booleans are eventually constant along u·x^n·v, so it is aperiodic
    ("ltl_p", "crasp"),
    ("crasp", "star_free"),
)
"""Pairs (sub, sup): every language in ``sub`` is in ``sup``."""

ACCEPTANCE_DEPENDENT: frozenset[str] = frozenset()
"""The classes whose membership is *not* a property of the syntactic morphism η: Σ* → M alone.

Every class above is characterized by its syntactic monoid or morphism (a variety, ne- or
lm-variety of languages: see each :class:`ClassInfo`'s ``algebra``), so a language, its complement,
and every language of the same minimal DFA transition structure share its answer; the census
(:mod:`langclass.core.census.run`) classifies such classes once per syntactic monoid. A class whose
answer depends on the accepting states themselves (not closed under complement) belongs here: the
census then decides it for every language. None at present; the census test checks, for every class
of the lattice, that the per-monoid answers equal the per-language ones on every language with at
most three states over two letters."""


class LatticeViolation(AssertionError):
    """An internal contradiction between decided classes (a bug, never a user error)."""


def implied_by(key: str) -> list[str]:
    """All classes that contain ``key`` (transitive closure of :data:`INCLUSIONS`), excluding itself."""
    return _closure(key, upward=True)


def contained_in(key: str) -> list[str]:
    """All classes contained in ``key`` (transitive closure of :data:`INCLUSIONS`), excluding itself."""
    return _closure(key, upward=False)


_contained_in = contained_in


def _closure(key: str, *, upward: bool) -> list[str]:
    out: list[str] = []
    todo = [key]
    while todo:
        k = todo.pop()
        for sub, sup in INCLUSIONS:
            src, dst = (sub, sup) if upward else (sup, sub)
            if src == k and dst not in out:
                out.append(dst)
                todo.append(dst)
    return out


def check_consistency(members: Mapping[str, bool | None], *, period: int | None = None, monoid_size: int | None = None,
                      period_y_mod: int | None = None) -> None:
    """Assert every inclusion on decided answers, plus the side facts below.

    Args:
        members: class key → ``True`` / ``False`` / ``None`` (unknown, skipped).
        period: the least k of LTL[P,MOD] (``None`` when not a member): must be 1 iff LTL[P].
        monoid_size: |M| when known: a star-free group language has the trivial monoid.
        period_y_mod: the least m of LTL[P,Y,MOD] when its decider gave one (``None`` otherwise, e.g.
            a membership implied through the lattice): must be 1 iff LTL[P,Y], and at most the k of
            LTL[P,MOD] (PL(MOD_k) ⊆ PL(MOD_k⁺)).

    Raises:
        LatticeViolation: a decided subclass is ``True`` while a superclass is ``False``, or a side
            fact fails.
    """
    for sub, sup in INCLUSIONS:
        if members.get(sub) is True and members.get(sup) is False:
            raise LatticeViolation(f"inclusion {sub} ⊆ {sup} violated: member of {sub} but not of {sup}")
    qr = members.get("ltl_p_mod")
    if qr is True:
        if period is None or period < 1:
            raise LatticeViolation("a member of LTL[P,MOD] must have a period k ≥ 1")
        if members.get("ltl_p") is not None and (period == 1) != members["ltl_p"]:
            raise LatticeViolation(f"LTL[P] must hold exactly when the least k of LTL[P,MOD] is 1 (k = {period})")
    if qr is False and period is not None:
        raise LatticeViolation("a period was reported for a language outside LTL[P,MOD]")
    if period_y_mod is not None:
        if members.get("ltl_p_y_mod") is not True or period_y_mod < 1:
            raise LatticeViolation("a period m ≥ 1 of LTL[P,Y,MOD] belongs to a member of LTL[P,Y,MOD]")
        if members.get("ltl_p_y") is not None and (period_y_mod == 1) != members["ltl_p_y"]:
            raise LatticeViolation(f"LTL[P,Y] must hold exactly when the least m of LTL[P,Y,MOD] is 1 (m = {period_y_mod})")
        if qr is True and period is not None and period_y_mod > period:
            raise LatticeViolation(f"the least m of LTL[P,Y,MOD] ({period_y_mod}) exceeds the least k of LTL[P,MOD] ({period})")
    if members.get("group") is True and members.get("star_free") is True and monoid_size not in (None, 1):
        raise LatticeViolation("an aperiodic group is trivial, but the monoid has more than one element")


def infer(members: Mapping[str, bool | None]) -> dict[str, tuple[bool, str]]:
    """Answers implied by the decided ones for classes left unknown.

    Returns:
        key → (member, the key that implies it) for every ``None`` entry that an inclusion decides:
        a known member of a subclass puts it in every superclass; a known non-member of a
        superclass excludes it from every subclass.
    """
    out: dict[str, tuple[bool, str]] = {}
    for key, val in members.items():
        if val is not None:
            continue
        for sub in _contained_in(key):
            if members.get(sub) is True:
                out[key] = (True, sub)
                break
        else:
            for sup in implied_by(key):
                if members.get(sup) is False:
                    out[key] = (False, sup)
                    break
    return out


def class_info_dict() -> list[dict[str, Any]]:
    """JSON-ready list of every class with its superclasses (for documentation endpoints)."""
    return [dict(info.to_dict(), superclasses=implied_by(info.key)) for info in CLASS_INFO.values()]
