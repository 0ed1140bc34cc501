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
:func:`~langclass.core.logic.formulas.formula_to_dfa` and must have the input's fingerprint. The formula
then compiles to B-RASP (:func:`~langclass.core.logic.brasp.formula_to_brasp`, *Masked Hard-Attention
Transformers Recognize Exactly the Star-Free Languages*, Lemma 4) and to a masked unique-hard-attention
transformer (ibid. Thm 24) — this module is the automaton → LTL step of that paper's Thm 5
(star-free = LTL, Kamp), done here by local divisors instead of a Krohn–Rhodes cascade.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.logic.formulas import (
    BOTTOM, TOP, And, Atom, Bottom, Formula, Not, Or, Past, Since, Top, Yesterday, conj, disj, formula_to_dfa, fragment, neg,
    past, subformulas,
)
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from langclass.core.automata.smallgraph import reachable

__all__ = ["synthesize_star_free", "transformation_monoid", "local_divisor_formulas", "SynthesisBudget",
           "prove_formula", "disj_balanced", "MAX_STAR_FREE_MONOID", "MAX_STAR_FREE_NODES", "SOURCE_STAR_FREE"]

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


class SynthesisBudget:
    """Node count (``max_star_free_nodes``), deadline and letter-choice strategy of one synthesis.

    ``strategy``: ``"small-divisor"`` cuts at the letter whose local divisor is smallest,
    ``"first"`` at the first letter in name order. Neither is always smaller (measured: Dyck-1 of
    depth 2 104 vs 196 subformulas, of depth 3 > 20 000 vs 809), so :func:`local_divisor_formulas`
    tries the first within :data:`FIRST_TRY_NODES` and falls back to the second."""

    def __init__(self, limits: Limits, strategy: str = "first", max_nodes: int = MAX_STAR_FREE_NODES) -> None:
        self.strategy = strategy
        self.max_nodes = max_nodes
        self.deadline = limits.deadline()
        self.seen: set[Formula] = set()
        self.levels = 0

    def note(self, f: Formula) -> Formula:
        self.seen.add(f)
        if len(self.seen) > self.max_nodes:
            raise LimitExceeded("max_star_free_nodes", self.max_nodes,
                                f"the star-free formula grew past {self.max_nodes} distinct subformulas")
        return f


FIRST_TRY_NODES = 60_000
"""Subformulas the ``small-divisor`` letter order may build before the synthesis retries with the
``first`` order (and the full :data:`MAX_STAR_FREE_NODES`)."""


def _solve(letters: dict[str, Hashable], mul: Mul, one: Hashable, budget: SynthesisBudget) -> dict[Hashable, Formula]:
    """``{m: F_m}`` over the letter names of ``letters`` (name → monoid element); F_m holds at i iff
    the prefix before i evaluates to m. Letters are atoms ``Atom(name)``; the letters of a local
    divisor level get fresh names that never reach the final formula (``lift`` replaces them)."""
    budget.deadline.check("star-free synthesis")
    names = sorted(letters)
    cs = [a for a in names if letters[a] != one]
    if not cs:
        return {one: TOP}
    c = _choose_letter(cs, letters, mul, one, budget.strategy)
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
    lift = block_lift(lambda symbol: block[tau_of[symbol]], closing, not_c, budget)

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
    return {m: budget.note(disj_balanced(fs)) for m, fs in out.items()}


def _choose_letter(cs, letters, mul, one, strategy):
    if len(cs) == 1 or strategy == "first":
        return cs[0]
    if strategy == "small-divisor":
        return min(cs, key=lambda a: (_divisor_size(letters, letters[a], mul), a))
    if strategy == "large-divisor":
        return max(cs, key=lambda a: (_divisor_size(letters, letters[a], mul), a))
    if strategy == "small-rest":
        return min(cs, key=lambda a: (_rest_size(letters, a, mul, one), a))
    raise AssertionError(strategy)


def generated(seeds: Iterable[Hashable], gens: Iterable[Hashable], mul: Mul, max_size: int | None = None) -> set:
    """The closure of ``seeds`` under right multiplication by ``gens`` (breadth first): with ``seeds =
    {1}`` the monoid, with ``seeds = gens`` the semigroup they generate.

    Raises:
        LimitExceeded: ``max_star_free_monoid`` when ``max_size`` is given and more elements appear.
    """
    elems = reachable(seeds, gens, mul, max_size)
    if elems is None:
        raise LimitExceeded("max_star_free_monoid", max_size, f"the transition monoid has more than {max_size} elements")
    return elems


def _rest_size(letters, c, mul, one):
    return len(generated([one], {v for k, v in letters.items() if k != c}, mul))


def _divisor_size(letters: dict[str, Hashable], cc: Hashable, mul: Mul) -> int:
    """|cc·N ∩ N·cc| for the monoid N generated by the letters: the size of the local divisor at cc
    (the letter chosen is the one with the smallest, which keeps the induction shallow)."""
    gens = set(letters.values())
    elems = generated(gens, gens, mul)
    return len({mul(cc, x) for x in elems} & {mul(x, cc) for x in elems})


def local_divisor_formulas(letters: dict[str, Hashable], mul: Mul, one: Hashable, limits: Limits,
                           max_nodes: int = MAX_STAR_FREE_NODES) -> tuple[dict[Hashable, Formula], SynthesisBudget]:
    """``{m: F_m}``: F_m holds at position i iff the letters before i (atoms ``Atom(name)`` of
    ``letters``, name → element of an aperiodic monoid with product ``mul`` and identity ``one``)
    multiply to m — the local divisor induction of the module docstring. Only the elements reached by
    prefixes get a formula.

    ``max_nodes`` bounds the distinct subformulas of each letter order's attempt (default
    :data:`MAX_STAR_FREE_NODES`; the first order also stops at :data:`FIRST_TRY_NODES`).

    Raises:
        LimitExceeded: ``max_star_free_nodes``; TimeLimitExceeded.

    Returns:
        ``({m: F_m}, budget)``; the budget's ``seen`` holds the nodes built, ``strategy`` the letter order used.
    """
    budget = SynthesisBudget(limits, "small-divisor", min(FIRST_TRY_NODES, max_nodes))
    try:
        return _solve(letters, mul, one, budget), budget
    except LimitExceeded as exc:
        if exc.limit != "max_star_free_nodes":
            raise
    budget = SynthesisBudget(limits, "first", max_nodes)
    return _solve(letters, mul, one, budget), budget


def transformation_monoid(A: DFA) -> tuple[dict[str, Elem], Mul, Elem, set[Elem]]:
    """The transition monoid of a canonical DFA as transformations (tuples ``x[q] = q·x``).

    Returns:
        ``(gens, mul, one, elements)``: letter → its transformation, the product (x then y), the
        identity and the set of all elements.

    Raises:
        LimitExceeded: ``max_star_free_monoid``.
    """
    n = A.num_states
    t = A.transitions.tolist()
    one: Elem = tuple(range(n))
    gens = {a: tuple(t[q][i] for q in range(n)) for i, a in enumerate(A.alphabet)}  # names are the symbols

    def mul(x: Elem, y: Elem) -> Elem:  # x then y
        return tuple(y[q] for q in x)

    return gens, mul, one, generated([one], gens.values(), mul, MAX_STAR_FREE_MONOID)


def prove_formula(formula: Formula, A: DFA, limits: Limits) -> tuple[bool, str | None]:
    """Formula → DFA equivalence with the canonical DFA ``A`` within :data:`MAX_PROOF_STATES` states of
    the formula's state automaton: ``(True, None)`` when proved, ``(False, note)`` when the budget ran out.

    Raises:
        RuntimeError: the formula is *not* equivalent (a bug of the synthesis, never a user error).
        LimitExceeded: ``time_limit_s``.
    """
    try:
        got = formula_to_dfa(formula, A.alphabet, replace(limits, max_states=min(limits.max_states, MAX_PROOF_STATES)))
    except LimitExceeded as exc:
        if exc.limit != "max_states":
            raise
        return False, (f"equivalence not proved: the formula's state automaton has more than {MAX_PROOF_STATES} "
                       "states; the construction checks the program against the DFA on all short and random words instead")
    if got.fingerprint() != A.fingerprint():
        raise RuntimeError(f"synthesized formula is not equivalent to the DFA; counterexample {got.counterexample(A)}")
    return True, None


def _aperiodic_element(x: Hashable, mul: Mul) -> bool:
    """x^ω x = x^ω: the powers of x end in a fixed point, not a cycle of length > 1."""
    y = x
    powers = [x]
    while True:
        y = mul(y, x)
        if y in powers:
            return y == powers[-1]
        powers.append(y)


def disj_balanced(fs: list[Formula]) -> Formula:
    """f1 ∨ … ∨ fn as a balanced tree (depth log n, so hashing and printing a long disjunction do not
    recurse n deep), with ⊤/⊥ folding and duplicates removed; ⊥ for none."""
    out: list[Formula] = []
    seen: set[Formula] = set()
    for f in fs:
        if isinstance(f, Top):
            return TOP
        if isinstance(f, Bottom) or f in seen:
            continue
        seen.add(f)
        out.append(f)

    def build(lo: int, hi: int) -> Formula:
        if hi - lo == 1:
            return out[lo]
        mid = (lo + hi) // 2
        return Or(build(lo, mid), build(mid, hi))

    return build(0, len(out)) if out else BOTTOM


def block_lift(atom: Callable[[str], Formula], closing: Formula, not_closing: Formula, budget: "SynthesisBudget"
               ) -> Callable[[Formula, bool], Formula]:
    """The translation (memoized) of a past formula over a block alphabet T into one over Σ: ``lift(f,
    False)`` holds at a position that closes a block (``closing``) iff f holds at the T-position of
    that block, ``lift(f, True)`` at the readout after the last closed block, where no T-letter is
    read. ``atom(symbol)`` is the Σ-formula saying the block just closed has that T-letter;
    ``not_closing`` = ¬``closing``. Used by the local divisor step of the star-free synthesis (the
    blocks end at the letter c) and by the FO[<,MOD] synthesis (blocks of m letters), each new node
    counted by ``budget.note``."""
    memo: dict[tuple[bool, Formula], Formula] = {}

    def lift(f: Formula, top: bool) -> Formula:
        key = (top, f)
        if key not in memo:
            if isinstance(f, Atom):
                r = BOTTOM if top else atom(f.symbol)
            elif isinstance(f, Past):
                r = past(conj(closing, lift(f.arg, False)))
            elif isinstance(f, Yesterday):
                inner = f.arg if f.k == 1 else Yesterday(f.arg, f.k - 1)
                r = Since(not_closing, conj(closing, lift(inner, False)))
            elif isinstance(f, Since):
                r = Since(disj(not_closing, lift(f.left, False)), conj(closing, lift(f.right, False)))
            else:
                r = _boolean(f, top, lift)
            memo[key] = budget.note(r)
        return memo[key]

    return lift


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


def synthesize_star_free(dfa: DFA, limits: Limits = DEFAULT_LIMITS, max_nodes: int = MAX_STAR_FREE_NODES):
    """A past-LTL formula with P, Y, S for a star-free language (module docstring), verified.

    Args:
        dfa: any complete DFA (minimized here).
        limits: ``time_limit_s`` and ``max_states`` (verification).
        max_nodes: most distinct subformulas one letter order may build (``max_star_free_nodes``).

    Returns:
        A :class:`~langclass.core.synthesis.synthesis.Synthesis`, ``method="local-divisors"``; ``verified`` is True
        when formula → DFA equivalence was proved within :data:`MAX_PROOF_STATES` (else a note says so).

    Raises:
        UnsupportedError: the transition monoid is not aperiodic (L is not star-free).
        LimitExceeded: ``max_star_free_monoid``, ``max_star_free_nodes``, ``max_states``, ``time_limit_s``.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> s = synthesize_star_free(parse_regex("(ab|ba)*", ["a", "b"]))
        >>> s.verified, "S" in s.fragment or s.fragment
        (True, True)
    """
    from .synthesis import Synthesis

    A = dfa.canonical()
    gens, mul, one, elems = transformation_monoid(A)
    for x in elems:  # aperiodic: x^ω x = x^ω
        if not _aperiodic_element(x, mul):
            raise UnsupportedError("the language is not star-free (its transition monoid has a non-trivial "
                                   "group: some x^k cycles with period > 1), so it has no LTL[P,Y,S] formula and no "
                                   "masked hard-attention transformer without positions", source=SOURCE_STAR_FREE)
    F_m, budget = local_divisor_formulas(gens, mul, one, limits, max_nodes)
    formula = disj_balanced([f for m, f in F_m.items() if A.accepting[m[A.initial]]])
    notes = [f"transition monoid: {len(elems)} elements", f"{len(subformulas(formula))} distinct subformulas",
             f"letter order: {budget.strategy}"]
    verified, note = prove_formula(formula, A, limits)
    if note:
        notes.append(note)
    return Synthesis(formula, A.alphabet, "local-divisors", fragment(formula), (), None, verified, A.fingerprint(),
                     SOURCE_STAR_FREE, tuple(notes))
