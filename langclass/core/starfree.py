"""Past-LTL (P, Y, S) formulas for star-free languages from their automata: the local divisor induction.

For an aperiodic monoid M, a morphism φ: Σ* → M and every m ∈ M this module builds a past formula
F_m that holds at position i exactly when φ(w_1 ⋯ w_{i−1}) = m (read at the readout position
N + 1 it decides φ(w) = m, so L = ⋁_{m ∈ φ(L)} F_m). The induction on (|M|, |Σ|) is the local
divisor technique of Diekert and Gastin (*First-order definable languages*, §7; Diekert and
Kufleitner, *A survey on the local divisor technique*), written here for past operators:

* if every letter maps to 1, then φ(u) = 1 for every prefix: F_1 = ⊤;
* else pick a letter c with φ(c) ≠ 1. In an aperiodic monoid φ(c) is then not a unit, so the
  *local divisor* M_c = φ(c)M ∩ Mφ(c) with the product xφ(c) ∘ φ(c)y = xφ(c)y is a monoid
  (identity φ(c)) with fewer elements. Cut a prefix at its c's: u = u_0 c u_1 c ⋯ c u_k with
  u_t ∈ (Σ∖c)*. Then φ(u) = φ(u_0) · ψ(τ_1 ⋯ τ_{k−1}) · φ(u_k), where τ_t = φ(u_t) is a letter of
  the finite alphabet T = φ((Σ∖c)*) and ψ: T* → M_c, ψ(τ) = φ(c)τφ(c), so
  φ(c u_1 c ⋯ u_{k−1} c) = ψ(τ_1 ⋯ τ_{k−1});
* formulas G_x (x ∈ T) for the blocks come from the induction on Σ∖c (same monoid, one letter
  fewer) and formulas H_n (n ∈ M_c) for the block sequence from the induction on M_c. Both are
  *relativized*: a block formula is read on the segment after the last c (``rel``: every past
  operator is guarded by ¬c, e.g. P g ↦ ¬c S (¬c ∧ g), Y g ↦ Y(¬c ∧ g)), and a formula over T is
  read on the c-positions that close a block (``lift``: the T-position t is the (t+1)-th c, a
  T-letter there is the value of the block before it, P h ↦ P(c ∧ Pc ∧ h), Y h ↦ ¬c S (c ∧ Pc ∧ h),
  h₁ S h₂ ↦ (¬c ∨ h₁) S (c ∧ Pc ∧ h₂));
* F_m = (¬P c ∧ G_m) ∨ ⋁_{x·n·y = m} (P c ∧ P(c ∧ ¬P c ∧ G_x on u_0) ∧ H_n ∧ G_y on u_k).

Every result is verified: the formula is compiled back with
:func:`~langclass.core.formulas.formula_to_dfa` and must have the input's fingerprint. The formula
then compiles to B-RASP (:func:`~langclass.core.brasp.formula_to_brasp`, *Masked Hard-Attention
Transformers Recognize Exactly the Star-Free Languages*, Lemma 4) and to a masked unique-hard-attention
transformer (ibid. Thm 24) — this module is the automaton → LTL step of that paper's Thm 5
(star-free = LTL, Kamp), done here by local divisors instead of a Krohn–Rhodes cascade.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace

from .automaton import DFA
from .errors import LimitExceeded, UnsupportedError
from .formulas import (
    BOTTOM, TOP, And, Atom, Bottom, Formula, Not, Or, Past, Since, Top, Yesterday, conj, disj, formula_to_dfa, fragment, neg,
    past, subformulas,
)
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["synthesize_star_free", "MAX_STAR_FREE_MONOID", "MAX_STAR_FREE_NODES", "SOURCE_STAR_FREE"]

MAX_STAR_FREE_MONOID = 2_000
"""Largest transition monoid :func:`synthesize_star_free` works on."""

MAX_STAR_FREE_NODES = 200_000
"""Largest number of distinct subformulas built by :func:`synthesize_star_free`."""

MAX_PROOF_STATES = 20_000
"""States of the formula's automaton explored to prove equivalence with the DFA; past it the result
says ``verified=False`` and the construction's word checks are the evidence."""

SOURCE_STAR_FREE = ("Diekert & Gastin, First-order definable languages, §7 (local divisors: aperiodic ⇒ LTL), "
                    "written with past operators; Masked Hard-Attention Transformers Recognize Exactly the Star-Free "
                    "Languages, Thm 5 (star-free = LTL), Lemma 4 and Thm 24 (LTL → B-RASP → transformer)")

Elem = tuple[int, ...]
Mul = Callable[[Hashable, Hashable], Hashable]


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.deadline = limits.deadline()
        self.seen: set[Formula] = set()
        self.levels = 0

    def note(self, f: Formula) -> Formula:
        self.seen.add(f)
        if len(self.seen) > MAX_STAR_FREE_NODES:
            raise LimitExceeded("max_star_free_nodes", MAX_STAR_FREE_NODES,
                                f"the star-free formula grew past {MAX_STAR_FREE_NODES} distinct subformulas")
        return f


def _solve(letters: dict[str, Hashable], mul: Mul, one: Hashable, budget: _Budget) -> dict[Hashable, Formula]:
    """``{m: F_m}`` over the letter names of ``letters`` (name → monoid element); F_m holds at i iff
    the prefix before i evaluates to m. Letters are atoms ``Atom(name)``; the letters of a local
    divisor level get fresh names that never reach the final formula (``lift`` replaces them)."""
    budget.deadline.check("star-free synthesis")
    names = sorted(letters)
    cs = [a for a in names if letters[a] != one]
    if not cs:
        return {one: TOP}
    c = cs[0]
    cc = letters[c]
    is_c = Atom(c)
    not_c = neg(is_c)
    seen_c = past(is_c)
    G = _solve({a: letters[a] for a in names if a != c}, mul, one, budget)
    # ---- the local divisor M_c: a ∘ b = x_a · b where x_a · cc = a (well defined)
    rep: dict[Hashable, Hashable] = {cc: one}

    def mul_c(a: Hashable, b: Hashable) -> Hashable:
        r = mul(rep[a], b)
        if r not in rep:
            rep[r] = mul(rep[a], rep[b])
        return r

    budget.levels += 1
    t_letters: dict[str, Hashable] = {}
    tau_of: dict[str, Hashable] = {}
    for j, tau in enumerate(G):
        x = mul(cc, tau)
        e = mul(x, cc)
        rep.setdefault(e, x)
        name = f"\x00T{budget.levels}.{j}"
        t_letters[name] = e
        tau_of[name] = tau
    memo_rel: dict[tuple[bool, Formula], Formula] = {}

    def rel(f: Formula, top: bool) -> Formula:
        """f read on the segment after the last c before the current position (which is the readout
        of f when ``top``, a position inside the segment otherwise)."""
        key = (top, f)
        if key not in memo_rel:
            if isinstance(f, Past):
                r = Since(not_c, conj(not_c, rel(f.arg, False)))
            elif isinstance(f, Yesterday):
                inner = f.arg if f.k == 1 else Yesterday(f.arg, f.k - 1)
                r = Yesterday(conj(not_c, rel(inner, False)), 1)
            elif isinstance(f, Since):
                r = Since(conj(not_c, rel(f.left, False)), conj(not_c, rel(f.right, False)))
            else:
                r = _boolean(f, top, rel)
            memo_rel[key] = budget.note(r)
        return memo_rel[key]

    block = {x: rel(g, True) for x, g in G.items()}  # value of the segment since the last c (or the start)
    H = _solve(t_letters, mul_c, cc, budget)
    closing = conj(is_c, seen_c)  # a c-position that closes a block (T-positions 1, 2, …)
    memo_lift: dict[tuple[bool, Formula], Formula] = {}

    def lift(f: Formula, top: bool) -> Formula:
        """f over T read at the T-position of the current c-position (its readout when ``top``)."""
        key = (top, f)
        if key not in memo_lift:
            if isinstance(f, Atom):  # a T-letter: the value of the block before this c
                r = BOTTOM if top else block[tau_of[f.symbol]]
            elif isinstance(f, Past):
                r = past(conj(closing, lift(f.arg, False)))
            elif isinstance(f, Yesterday):
                inner = f.arg if f.k == 1 else Yesterday(f.arg, f.k - 1)
                r = Since(not_c, conj(closing, lift(inner, False)))
            elif isinstance(f, Since):
                r = Since(disj(not_c, lift(f.left, False)), conj(closing, lift(f.right, False)))
            else:
                r = _boolean(f, top, lift)
            memo_lift[key] = budget.note(r)
        return memo_lift[key]

    mids = {n: lift(h, True) for n, h in H.items()}
    first = {x: past(conj(is_c, neg(seen_c), b)) for x, b in block.items()}
    out: dict[Hashable, list[Formula]] = {}
    for m, g in G.items():
        out.setdefault(m, []).append(conj(neg(seen_c), g))
    for x, fx in first.items():
        for n, fn in mids.items():
            xn = mul(x, n)
            for y, fy in block.items():
                out.setdefault(mul(xn, y), []).append(conj(seen_c, fx, fn, fy))
    return {m: budget.note(disj(*fs)) for m, fs in out.items()}


def _boolean(f: Formula, top: bool, rec) -> Formula:
    """The Boolean cases of a translation: letters are false at a readout position."""
    if isinstance(f, (Top, Bottom)):
        return f
    if isinstance(f, Atom):
        return BOTTOM if top else f
    if isinstance(f, Not):
        return neg(rec(f.arg, top))
    if isinstance(f, And):
        return conj(*(rec(g, top) for g in f.children))
    if isinstance(f, Or):
        return disj(*(rec(g, top) for g in f.children))
    raise AssertionError(f"unexpected node {type(f).__name__}")  # the synthesis builds no other node


def synthesize_star_free(dfa: DFA, limits: Limits = DEFAULT_LIMITS):
    """A past-LTL formula with P, Y, S for a star-free language (module docstring), verified.

    Args:
        dfa: any complete DFA (minimized here).
        limits: ``time_limit_s`` and ``max_states`` (verification).

    Returns:
        A :class:`~langclass.core.synthesis.Synthesis`, ``method="local-divisors"``; ``verified`` is True
        when formula → DFA equivalence was proved within :data:`MAX_PROOF_STATES` (else a note says so).

    Raises:
        UnsupportedError: the transition monoid is not aperiodic (L is not star-free).
        LimitExceeded: ``max_star_free_monoid``, ``max_star_free_nodes``, ``max_states``, ``time_limit_s``.

    Example:
        >>> from langclass.core.parse import parse_regex
        >>> s = synthesize_star_free(parse_regex("(ab|ba)*", ["a", "b"]))
        >>> s.verified, "S" in s.fragment or s.fragment
        (True, True)
    """
    from .synthesis import Synthesis

    A = dfa.canonical()
    n = A.num_states
    t = A.transitions.tolist()
    one: Elem = tuple(range(n))
    gens = {a: tuple(t[q][i] for q in range(n)) for i, a in enumerate(A.alphabet)}  # names are the symbols

    def mul(x: Elem, y: Elem) -> Elem:  # x then y
        return tuple(y[q] for q in x)

    elems = {one}
    frontier = [one]
    while frontier:
        nxt = []
        for x in frontier:
            for g in gens.values():
                y = mul(x, g)
                if y not in elems:
                    elems.add(y)
                    nxt.append(y)
                    if len(elems) > MAX_STAR_FREE_MONOID:
                        raise LimitExceeded("max_star_free_monoid", MAX_STAR_FREE_MONOID,
                                            f"the transition monoid has more than {MAX_STAR_FREE_MONOID} elements")
        frontier = nxt
    for x in elems:  # aperiodic: x^ω x = x^ω
        y = x
        powers = [x]
        while True:
            y = mul(y, x)
            if y in powers:
                if y != powers[-1]:
                    raise UnsupportedError("the language is not star-free (its transition monoid has a non-trivial "
                                           "group: some x^k cycles with period > 1), so it has no LTL[P,Y,S] formula and no "
                                           "masked hard-attention transformer without positions", source=SOURCE_STAR_FREE)
                break
            powers.append(y)
    budget = _Budget(limits)
    F_m = _solve(gens, mul, one, budget)
    formula = disj(*(f for m, f in F_m.items() if A.accepting[m[A.initial]])) if F_m else BOTTOM
    notes = [f"transition monoid: {len(elems)} elements", f"{len(subformulas(formula))} distinct subformulas"]
    try:  # equivalence proof: the formula's state automaton, within its own state budget
        got = formula_to_dfa(formula, A.alphabet, replace(limits, max_states=min(limits.max_states, MAX_PROOF_STATES)))
    except LimitExceeded as exc:
        if exc.limit != "max_states":
            raise
        verified = False
        notes.append(f"equivalence not proved: the formula's state automaton has more than {MAX_PROOF_STATES} states; "
                     "the construction checks the program against the DFA on all short and random words instead")
    else:
        if got.fingerprint() != A.fingerprint():  # a bug in this module, never a user error
            raise RuntimeError(f"star-free synthesis is not equivalent to the DFA; counterexample {got.counterexample(A)}")
        verified = True
    return Synthesis(formula, A.alphabet, "local-divisors", fragment(formula), (), None, verified, A.fingerprint(),
                     SOURCE_STAR_FREE, tuple(notes))
