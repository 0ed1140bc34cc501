"""LTL[P,Y,MOD] through the marked alphabet: the least modulus, its evidence, and formulas with MOD atoms.

**The marked language.** For m ≥ 1 the *m-marking* of w = w_1 ⋯ w_N is the word
(w_1, 1 mod m)(w_2, 2 mod m) ⋯ (w_N, N mod m) over Σ × Z_m (a position carries its index mod m, as
``MOD(m, r)`` reads it), and K_m is the set of markings of the words of L: the marked words that are
*valid* (first mark 1 mod m, each next mark one more) and whose letters spell a word of L.
:func:`marked_dfa` builds its DFA (the states (q, N mod m) of the minimal DFA of L, and a sink for
invalid marks). Write LTL[P,Y,MOD_m] for past LTL with P, Y and the atoms MOD(m, r).

**Theorem.** For m ≥ 1, with η: Σ* → M the syntactic morphism of L and U_m = η((Σ^m)⁺) the
elements of the nonempty words of length ≡ 0 (mod m):

    L ∈ LTL[P,Y,MOD_m]  ⇔  K_m ∈ LTL[P,Y]  ⇔  U_m is locally R-trivial (eU_me R-trivial ∀ e = e² ∈ U_m).

*First ⇔ (translation).* A formula ψ for L becomes one for K_m: replace each atom a by
⋁_r (a, r) and MOD(m, r) by mark_r ∨ (¬mark ∧ (Y mark_{r−1} ∨ (¬Y⊤ ∧ [r ≡ 1]))), where mark_r =
⋁_a (a, r) and mark = ⋁_r mark_r (at a string position the mark is the position mod m; at the
readout N + 1, where no atom holds, N + 1 ≡ r iff the last mark is r − 1, or N = 0 and r ≡ 1), and
conjoin validity, ¬P(¬Y⊤ ∧ ¬mark_1) ∧ ¬P(Y⊤ ∧ ⋁_r (mark_r ∧ ¬Y mark_{r−1})): an LTL[P,Y] formula.
Conversely, a formula φ for K_m gives φ' for L by replacing the atom (a, r) with a ∧ MOD(m, r): at
every position i the atoms of φ on marking(w) and of φ' on w agree (both false at N + 1), the
operators are the same, so w ⊨ φ' ⇔ marking(w) ⊨ φ ⇔ w ∈ L.
*Second ⇔, "⇐".* The semigroup S_m = {(p, η(w), q) : w ∈ Σ⁺, p the first mark, q ≡ p + |w| − 1}
∪ {0}, with (p, x, q)(q + 1, y, r) = (p, xy, r) and every other product 0, recognizes K_m (a valid
marked word maps to (first mark, η(w), last mark), an invalid one to 0; accept (1, x, q) with
x ∈ η(L)). Its idempotents other than 0 are E = (p, e, p − 1) with e = e² ∈ U_m, and E·S_m·E =
{(p, y, p − 1) : y ∈ eU_me} ∪ {0} ≅ eU_me ∪ {0}. So U_m locally R-trivial ⇒ S_m locally R-trivial ⇒
the syntactic semigroup of K_m, a quotient of a subsemigroup of S_m, is too (LR is a pseudovariety)
⇒ K_m ∈ LTL[P,Y] (LR = LTL[P,Y], :func:`~langclass.core.algebra.classes.decide_ltl_p_y`).
*"⇒".* Let x ≠ y be R-equivalent in eU_me (x = y·t, y = x·t′ with t, t′ ∈ eU_me) and let u·_·z
separate them in M. With p = |u| + 1 mod m, mark words of x, y, e, t, t′ (all of length ≡ 0) from
phase p: their images X, Y, Ē, … in the syntactic semigroup of K_m satisfy X = Y·T, Y = X·T′,
Ē X Ē = X, Ē Y Ē = Y, so X and Y are R-equivalent in the local monoid at the idempotent Ē — and
distinct, since marking(u)·X·marking(z) ∈ K_m ⇔ u·x·z ∈ L differs for Y. So K_m ∉ LR.

**Which m work.** Write W = {m : L ∈ LTL[P,Y,MOD_m]}.

* L ∈ LTL[P,Y,MOD] ⇔ W ≠ ∅ (a formula uses finitely many moduli m_i; each MOD(m_i, r) is a
  disjunction of MOD(lcm, r′)).
* W is closed under multiples: U_{km} ⊆ U_m, eU_{km}e ⊆ eU_me, and R-equivalence in the smaller
  monoid implies it in the larger.
* With s the stability index (least s ≥ 1 with η(Σ^s) = η(Σ^{2s})), U_{ks} = η(Σ^s) = T for every
  k ≥ 1. So if m ∈ W then ms ∈ W and U_{ms} = T = U_s: **s ∈ W iff W ≠ ∅**, i.e. LTL[P,Y,MOD] = QLR
  (T locally R-trivial), and **the least working modulus is at most s**.

:func:`ltl_p_y_mod_search` decides K_m ∈ LTL[P,Y] with the specialized decider of LTL[P,Y] (local
R-triviality of K_m's syntactic semigroup, on K_m's own transition monoid). It first asks m = s:
if K_s ∉ LTL[P,Y], no m works and the K_s witness is the evidence; else it tries m = 1, 2, …, s − 1
in order and stops at the first success (the least m need not divide s, so every m < s is tried).
Before any K_m it looks for a non-trivial group in T (``stable_group_first``): LR semigroups are
aperiodic (a group element x of H_e lies in eSe and is R-equivalent to e there, so x = e) and
T ⊆ U_m for every m, so such a group rules out every m at once — the cheap answer for a language
that is not even quasi-aperiodic (not in FO[<,MOD] ⊇ LTL[P,Y,MOD]), whose s can be large while K_s's
monoid has up to s²·|M| elements. The :class:`MarkedSearch` holds the LTL[P,Y] witness of every
failing K_m tried and the certificate of the working one (or the group element), and
:func:`replay_marked_search` re-checks all of it from the DFA alone (s recomputed from the levels
η(Σ^j), each K_m rebuilt, each record replayed on K_m).

**Formulas** (:func:`synthesize_ltl_p_y_mod`): the window-product synthesis of LTL[P,Y]
(:func:`~langclass.core.synthesis.synthesis_y.synthesize_ltl_p_y`) applied to K_m, then each marked
atom (a, r) replaced by a ∧ MOD(m, r) (the translation above), verified by formula → DFA equivalence.
The result compiles to soft attention with periodic RoPE of period m (MOD) and recency heads (Y),
exact at every length (docs/recency.md; *Disentangling the Expressivity of RoPE*, Lemma 3.2 /
App. C.3 for MOD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.core.algebra.classes import REGISTRY, Context, decide_ltl_p_y
from langclass.core.algebra.classes.base import Evidence
from langclass.core.algebra.classes.evidence import Separation
from langclass.core.algebra.classes.local import LocalMonoids, LocalRWitness
from langclass.core.algebra.classes.replaykit import Checker, ReplayError
from langclass.core.algebra.local_da import stability_index_of
from langclass.core.algebra.monoid import TransitionMonoid, transition_monoid
from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from langclass.core.logic.formulas import (
    And, Atom, Bottom, Formula, Iff, Implies, Mod, Not, Or, Past, Since, Top, Yesterday, conj, formula_to_dfa,
    fragment, subformulas,
)
from .synthesis_result import Synthesis
from .synthesis_y import synthesize_ltl_p_y

__all__ = ["MARK", "MARKED_WORK", "marked_alphabet", "marked_dfa", "MarkedTry", "StableGroup", "MarkedSearch",
           "ltl_p_y_mod_search",
           "replay_marked_search", "unmark_formula", "synthesize_ltl_p_y_mod", "SOURCE_LTL_P_Y_MOD"]

MARK = "@"
"""The marked letter (a, r) is named ``f"{a}{MARK}{r}"`` (decoded by splitting at the last ``MARK``:
r has digits only, so the names are distinct for distinct pairs)."""

SOURCE_LTL_P_Y_MOD = ("the marked-alphabet criterion L ∈ LTL[P,Y,MOD_m] ⇔ K_m ∈ LTL[P,Y] ⇔ η((Σ^m)⁺) locally "
                      "R-trivial, least m ≤ s (langclass.core.synthesis.marked_y_mod); LTL[P,Y] = LR (Y-dual of "
                      "Cohen–Perrin–Pin, On the expressive power of temporal logic); Disentangling the Expressivity "
                      "of RoPE, Lemma 3.2 / App. C.3 (MOD with periodic RoPE) and docs/recency.md (Y at all lengths)")


def marked_alphabet(alphabet: tuple[str, ...], m: int) -> tuple[tuple[str, ...], dict[str, tuple[str, int]]]:
    """Σ × Z_m as names: ``(names, decode)`` with names in the order (a, 0), (a, 1), …, (b, 0), …
    and ``decode[name] = (a, r)``."""
    names = tuple(f"{a}{MARK}{r}" for a in alphabet for r in range(m))
    decode = {f"{a}{MARK}{r}": (a, r) for a in alphabet for r in range(m)}
    return names, decode


def marked_dfa(dfa: DFA, m: int) -> DFA:
    """The canonical minimal DFA of K_m, the m-marked language of L(dfa) (module docstring).

    Args:
        dfa: any complete DFA (minimized first).
        m: the modulus, m ≥ 1.

    Returns:
        The canonical DFA of K_m over :func:`marked_alphabet` (at most n·m + 1 states before
        minimization, n the states of the minimal DFA of L).

    Raises:
        ValueError: m < 1 (a programming error).
    """
    if m < 1:
        raise ValueError(f"the modulus must be ≥ 1, got {m}")
    A = dfa.canonical()
    n, k = A.num_states, A.num_letters
    names, _ = marked_alphabet(A.alphabet, m)
    sink = n * m
    t = np.full((n * m + 1, k * m), sink, dtype=np.int64)
    base = A.transitions.astype(np.int64)
    for phase in range(m):  # state q·m + phase: A in q after a number of letters ≡ phase (mod m)
        nxt = (phase + 1) % m  # the mark of the next position
        for a in range(k):
            t[np.arange(n) * m + phase, a * m + nxt] = base[:, a] * m + nxt
    acc = np.zeros(n * m + 1, dtype=bool)
    acc[:n * m] = np.repeat(A.accepting, m)
    return DFA(names, t, A.initial * m, acc).canonical()


@dataclass(frozen=True)
class MarkedTry(Evidence):
    """The LTL[P,Y] answer for K_m: its certificate (member) or witness (non-member), in marked words."""

    m: int
    member: bool
    certificate: LocalMonoids | None
    witness: LocalRWitness | None


@dataclass(frozen=True)
class StableGroup(Evidence):
    """A word x of length s whose element lies in a non-trivial group of T = η(Σ^s): x^ω·x ≠ x^ω."""

    CHECK = "|x| = s (recomputed), and x^ω·x ≠ x^ω: the context separates them"
    x: tuple[str, ...]
    context: Separation


@dataclass(frozen=True)
class MarkedSearch(Evidence):
    """The search of :func:`ltl_p_y_mod_search`.

    Attributes:
        modulus: the least m with K_m ∈ LTL[P,Y] (= L ∈ LTL[P,Y,MOD_m]); ``None``: no m works, so L
            is not in LTL[P,Y,MOD].
        stability_index: s.
        tries: a member's m = 1, 2, …, modulus (only the last succeeds); a non-member's single failing
            try m = s, or none when ``group`` answers.
        group: a non-trivial group in T (then no K_m was built), else ``None``.
    """

    CHECK = ("s is the stability index (recomputed from the DFA); each K_m tried is rebuilt from the DFA and its "
             "LTL[P,Y] witness (or, for the modulus, its certificate) replayed on K_m: a member tried m = 1, …, "
             "modulus in order, a non-member m = s, or shows a non-trivial group in η(Σ^s)")
    modulus: int | None
    stability_index: int
    tries: tuple[MarkedTry, ...]
    group: StableGroup | None = None

    @property
    def member(self) -> bool:
        """L ∈ LTL[P,Y,MOD]."""
        return self.modulus is not None


MARKED_WORK = 1_000_000
"""Most elements the transition monoids of the marked languages K_m of one search may have, summed over
the m tried and bounded before each is built by m²·|M| + 2 (the elements of K_m's monoid are the
identity, the zero and (first mark, η(w), last mark) triples); beyond it ``LimitExceeded("marked_work")``."""


def _try(A: DFA, m: int, limits: Limits, deadline: Deadline) -> MarkedTry:
    limits.check("max_states", A.num_states * m + 1)
    K = marked_dfa(A, m)
    r = decide_ltl_p_y(Context(K, transition_monoid(K, limits, deadline=deadline), limits, deadline))
    return MarkedTry(m, True, r.certificate, None) if r.member else MarkedTry(m, False, None, r.witness)


def ltl_p_y_mod_search(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, monoid: TransitionMonoid | None = None,
                       deadline: Deadline | None = None, stable_group_first: bool = True) -> MarkedSearch:
    """The least m with L ∈ LTL[P,Y,MOD_m], by deciding K_m ∈ LTL[P,Y] (module docstring): m = s first,
    then m = 1, …, s − 1 for a member.

    Args:
        dfa: any complete DFA (minimized here).
        limits: ``max_states`` (the DFA of K_m, n·m + 1 states, checked before it is built),
            ``max_monoid_size`` / ``max_monoid_entries`` (each K_m's monoid), ``time_limit_s``.
        monoid: the transition monoid of the minimal DFA when the caller has it (for s).
        deadline: a deadline shared with the caller (default: a new one from ``limits``).
        stable_group_first: answer a language whose T holds a non-trivial group without building any
            K_m (the same answer; False decides it on K_s, for tests).

    Returns:
        A :class:`MarkedSearch`.

    Raises:
        LimitExceeded: ``marked_work`` (:data:`MARKED_WORK`, checked before each K_m), ``max_states``,
            ``max_monoid_size``, ``max_monoid_entries``; TimeLimitExceeded.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> ltl_p_y_mod_search(parse_regex("((a|b)(a|b))*(a|b)a", ["a", "b"])).modulus
        2
    """
    deadline = deadline if deadline is not None else limits.deadline()
    A = dfa.canonical()
    M = monoid if monoid is not None else transition_monoid(A, limits, deadline=deadline)
    s = M.stability_index
    if stable_group_first:
        bad = np.flatnonzero(M.nontrivial_group_elements & M.stable)
        if bad.size:
            g = int(bad[0])
            e = M.power(g, M.omega_exponent(g))
            sep = Context(A, M).element_context(M.multiply(e, g), e)
            return MarkedSearch(None, s, (), StableGroup(tuple(M.stable_word(g)), sep))
    spent = 0

    def attempt(m: int) -> MarkedTry:
        nonlocal spent
        deadline.check("LTL[P,Y,MOD] marked alphabet")
        spent += m * m * M.size + 2
        if spent > MARKED_WORK:
            raise LimitExceeded("marked_work", MARKED_WORK,
                                f"the transition monoids of the marked languages K_1 … K_{m} may have {spent} elements "
                                f"in all (> {MARKED_WORK}; stability index s = {s}, |M| = {M.size})")
        return _try(A, m, limits, deadline)

    last = attempt(s)
    if not last.member:
        return MarkedSearch(None, s, (last,))
    tries: list[MarkedTry] = []
    for m in range(1, s):
        t = attempt(m)
        tries.append(t)
        if t.member:
            return MarkedSearch(m, s, tuple(tries))
    return MarkedSearch(s, s, tuple(tries) + (last,))


def replay_marked_search(dfa: DFA, search: MarkedSearch | dict[str, Any]) -> None:
    """Re-check a :class:`MarkedSearch` (or its ``to_dict()`` record) on the DFA alone.

    Raises:
        ReplayError: malformed, or a check fails (the message names it).
    """
    try:
        ev = search if isinstance(search, MarkedSearch) else MarkedSearch.from_dict(search, "search")
    except ValueError as err:
        raise ReplayError(f"ltl_p_y_mod: malformed evidence: {err}") from None
    A = dfa.canonical()
    s = stability_index_of(A)
    if ev.stability_index != s:
        raise ReplayError(f"the stability index is {s}, not {ev.stability_index}")
    if ev.group is not None:
        if ev.modulus is not None or ev.tries:
            raise ReplayError("a group in η(Σ^s) answers a non-member alone")
        chk = Checker(A)
        x = list(ev.group.x)
        if len(x) != s:
            raise ReplayError(f"the group element's word has length {len(x)}, not s = {s}")
        omega = chk.omega(x)
        chk.check_context(ev.group.context, chk.cat(omega, x), omega)
        return
    if ev.modulus is None:
        if [(t.m, t.member) for t in ev.tries] != [(s, False)]:
            raise ReplayError(f"a non-member shows the failing K_s, s = {s} (or a group in η(Σ^s))")
    else:
        if [t.m for t in ev.tries] != list(range(1, ev.modulus + 1)) or ev.modulus > s:
            raise ReplayError(f"a member tries m = 1, 2, …, modulus in order, modulus ≤ s = {s}")
        if any(t.member for t in ev.tries[:-1]) or not ev.tries[-1].member:
            raise ReplayError("only the last try, the modulus, succeeds")
    dec = REGISTRY["ltl_p_y"]
    for t in ev.tries:
        chk = Checker(marked_dfa(A, t.m))
        try:
            if t.member:
                if t.certificate is None or t.witness is not None:
                    raise ReplayError("a working modulus carries the LTL[P,Y] certificate of K_m")
                dec.replay_yes(chk, t.certificate)
            else:
                if t.witness is None or t.certificate is not None:
                    raise ReplayError("a failing modulus carries the LTL[P,Y] witness of K_m")
                dec.replay_no(chk, t.witness)
        except (AssertionError, KeyError) as err:  # a ReplayError, or a marked letter outside K_m's alphabet
            raise ReplayError(f"m = {t.m}: the LTL[P,Y] evidence of K_{t.m} does not replay: {err}") from None


def unmark_formula(formula: Formula, m: int, decode: dict[str, tuple[str, int]]) -> Formula:
    """φ' from φ: every marked atom (a, r) becomes a ∧ MOD(m, r) (MOD(1, 0) = ⊤ is dropped); the rest
    of the DAG is rebuilt node by node (module docstring, first ⇔)."""
    out: dict[Formula, Formula] = {}
    for n in subformulas(formula):
        if isinstance(n, Atom):
            a, r = decode[n.symbol]
            out[n] = Atom(a) if m == 1 else conj(Atom(a), Mod(m, r))
        elif isinstance(n, (Top, Bottom, Mod)):
            out[n] = n
        elif isinstance(n, Not):
            out[n] = Not(out[n.arg])
        elif isinstance(n, Past):
            out[n] = Past(out[n.arg])
        elif isinstance(n, Yesterday):
            out[n] = Yesterday(out[n.arg], n.k)
        elif isinstance(n, (And, Or, Implies, Iff, Since)):
            out[n] = type(n)(out[n.left], out[n.right])
        else:  # pragma: no cover
            raise TypeError(f"unknown node {n!r}")
    return out[formula]


def synthesize_ltl_p_y_mod(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, modulus: int | None = None) -> Synthesis:
    """An LTL[P,Y,MOD] formula for L(dfa) through the marked alphabet (module docstring), verified.

    Args:
        dfa: any complete DFA (minimized here).
        limits: as :func:`ltl_p_y_mod_search`, and ``max_states`` / ``time_limit_s`` of the verification.
        modulus: the m to use (default: the least, :func:`ltl_p_y_mod_search`); K_m must be in LTL[P,Y].

    Returns:
        A verified :class:`~langclass.core.synthesis.synthesis_result.Synthesis`, ``method="marked-window-product"``,
        whose atoms are a ∧ MOD(m, r) (plain letters when m = 1); ``notes`` name m, s and the
        moduli tried, then the notes of the LTL[P,Y] synthesis of K_m.

    Raises:
        UnsupportedError: L is not in LTL[P,Y,MOD] (no m ≤ s works), or ``modulus`` does not work.
        LimitExceeded: as :func:`ltl_p_y_mod_search`; ``max_window_states`` / ``max_y_offset`` of the
            LTL[P,Y] synthesis; ``max_states`` / ``time_limit_s`` of the verification.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> s = synthesize_ltl_p_y_mod(parse_regex("(ab|ba)*", ["a", "b"]))
        >>> s.fragment, s.verified, s.notes[0]
        ('LTL[P,Y,MOD]', True, 'modulus m = 2 (stability index s = 4; least working modulus 2)')
    """
    deadline = limits.deadline()
    A = dfa.canonical()
    search = ltl_p_y_mod_search(A, limits, deadline=deadline)
    if modulus is None:
        if search.modulus is None:
            raise UnsupportedError(
                f"the language is not in LTL[P,Y,MOD]: for no m ≤ s = {search.stability_index} (the stability index) "
                "is its m-marked language in LTL[P,Y] (η((Σ^m)⁺) is not locally R-trivial)", source=SOURCE_LTL_P_Y_MOD)
        m = search.modulus
    else:
        m = int(modulus)
        if m < 1:
            raise UnsupportedError(f"modulus {m} must be ≥ 1", field="modulus", source=SOURCE_LTL_P_Y_MOD)
        if not _try(A, m, limits, deadline).member:
            raise UnsupportedError(f"modulus {m} does not work: the {m}-marked language is not in LTL[P,Y]",
                                   field="modulus", source=SOURCE_LTL_P_Y_MOD)
    head = f"modulus m = {m} (stability index s = {search.stability_index}; least working modulus {search.modulus})"
    K = marked_dfa(A, m)
    _, decode = marked_alphabet(A.alphabet, m)
    inner = synthesize_ltl_p_y(K, limits)
    formula = unmark_formula(inner.formula, m, decode)
    got = formula_to_dfa(formula, A.alphabet, limits)
    if got.fingerprint() != A.fingerprint():  # a bug in this module, never a user error
        raise RuntimeError(f"the unmarked LTL[P,Y,MOD] formula is not equivalent to the DFA; counterexample "
                           f"{got.counterexample(A)}")
    notes = (head, f"{m}-marked language: {K.num_states} states over {len(K.alphabet)} marked letters") + inner.notes
    return Synthesis(formula, A.alphabet, "marked-window-product", fragment(formula), (), None, True, A.fingerprint(),
                     SOURCE_LTL_P_Y_MOD, notes)
