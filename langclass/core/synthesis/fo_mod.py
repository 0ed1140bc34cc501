"""FO[<,MOD] from the automaton: the least working modulus and past-LTL formulas with MOD predicates.

**The modulus.** Let η: Σ* → M be the syntactic morphism of L (the transition monoid of the minimal
DFA). For m ≥ 1 write FO[<,MOD_m] for first-order logic with < and the predicates x ≡ r (mod m).
The *m-marking* of a word w = w_1 ⋯ w_n is the word (w_1, 1 mod m) ⋯ (w_n, n mod m) over Σ × Z_m,
and K_m is the set of markings of the words of L (ill-formed marked words are rejected).

    L ∈ FO[<,MOD_m]  ⇔  K_m is star-free  ⇔  the semigroup η((Σ^m)^+) is aperiodic.

*First ⇔.* A sentence of FO[<,MOD_m] for L becomes one of FO[<] for K_m by reading x ≡ r as "the
mark at x is r" and adding that the marks are well formed (the first mark is 1 mod m, each next
mark is one more — a local, first-order condition); conversely a sentence for K_m becomes one for L by
reading Q_(a,r)(x) as Q_a(x) ∧ x ≡ r. FO[<] = star-free (McNaughton & Papert).
*Second ⇔, "⇒".* Let v ≠ ε with |v| ≡ 0 (mod m). A marked context u·_·z with u well formed of any
length fixes the phase at which v is marked; since |v| ≡ 0 the marking of v^k is the k-th power of
one marked word x, and aperiodicity of K_m's syntactic monoid (x^ω = x^{ω+1}) gives
u' v^ω z' ∈ L ⇔ u' v^{ω+1} z' ∈ L for all u', z' ∈ Σ*, i.e. η(v)^ω = η(v)^{ω+1}. "⇐" is the
construction below, which builds a formula of FO[<,MOD_m] (as past LTL with MOD_m atoms, which
FO[<,MOD_m] contains) whenever η((Σ^m)^+) is aperiodic, and verifies it.

With the stability index s (least s ≥ 1 with η(Σ^s) = η(Σ^{2s})), η((Σ^{ks})^+) = η(Σ^s) is the
stable semigroup, so m = s works exactly when L is *quasi-aperiodic* (the stable semigroup has no
non-trivial group) — and quasi-aperiodic = FO[<,MOD] = regular ∩ AC⁰ (Barrington, Compton, Straubing
& Thérien, *Regular languages in NC¹*).

*Which m can be the least.* The levels S_j = η(Σ^j) are eventually periodic, with preperiod i and
period p, and p divides s. With d = gcd(m, p): m works ⇔ d works, so the least working modulus
divides p and :func:`least_modulus` tries the divisors of p in increasing order (p itself works iff s
does; for a DFA that is one cycle of length n these are the divisors of n instead of 1, …, n).
Proof. η((Σ^m)^+) ⊆ η((Σ^d)^+) as d | m, so d working gives m working. Conversely let x ∈
η((Σ^d)^+) be non-aperiodic; then g = x^{ω+1} is too (it generates the non-trivial group ⟨x^ω·x⟩),
and g = x^{1+tq} for every t ≥ 1 (q the period of x) has antecedents of unboundedly large lengths
ℓ ≡ 0 (mod d). For ℓ ≥ i there is ℓ' ≥ i with ℓ' ≡ ℓ (mod p) and m | ℓ' (Chinese remainders, d | ℓ),
and S_ℓ' = S_ℓ ∋ g, so g ∈ η((Σ^m)^+) is non-aperiodic and m does not work.
On the enumerated monoid η((Σ^m)^+) = ⋃ {S_j : j < i + p, m | j} for m | p (S_j = S_{j−p} for j ≥ i + p),
and a semigroup U is aperiodic iff it holds no non-idempotent element of a group H-class (such an
element g has g^{ω+1} = g ≠ g^ω; a non-aperiodic x gives x^{ω+1} ∈ U, one of them).

**The formula** (blocks of length m; positions 1-based, readout at N + 1). Cut w into blocks
B_1 B_2 ⋯ of length m (block k ends at position k·m, the positions with MOD_m^0) and a partial block.
The block values η(B_k) are letters of the finite alphabet T = η(Σ^m), and T* → η((Σ^m)*) is a
morphism into an aperiodic monoid, so the local divisor induction of :mod:`langclass.core.synthesis.starfree`
gives formulas H_n (n ∈ η((Σ^m)*)) over T that hold at T-position k iff η(B_1 ⋯ B_{k−1}) = n. They
are *lifted* to the word: T-position k is the block end k·m, a T-letter there is a Boolean
combination of Y^j atoms (the m letters of the block), and P h ↦ P(MOD_m^0 ∧ h),
Y h ↦ ¬MOD_m^0 S (MOD_m^0 ∧ h), h₁ S h₂ ↦ (¬MOD_m^0 ∨ h₁) S (MOD_m^0 ∧ h₂); read at any position i
the lifted H_n speaks about the blocks that end before i. The prefix before i is those q blocks and
the t = (i − 1) mod m letters after them (Y^1 … Y^t atoms), and i ≡ t + 1 (mod m):

    L = ⋁_{t < m} MOD_m^{(t+1) mod m} ∧ ⋁_{n·y ∈ η(L)} H_n^lift ∧ R_{t,y},

R_{t,y} = "the t letters before i multiply to y" (a shared dynamic programme over M). The result is
verified by formula → DFA equivalence (within the proof budget of the star-free module).

The formula compiles to B-RASP with the MOD_m marks as initial vectors
(:func:`langclass.core.logic.brasp.formula_to_brasp`) and to a masked hard-attention transformer whose
finite-image periodic sinusoidal position embedding supplies the marks (*Masked Hard-Attention
Transformers Recognize Exactly the Star-Free Languages*, Thm 19 and Cor 20 with its §7.5 ReLU read-out
of MOD_m^r from sin/cos of 2πi/m).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.algebra.orbits import divisors
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.logic.formulas import (
    TOP, Atom, Formula, Mod, Yesterday, conj, fragment, neg, subformulas,
)
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from .starfree import (
    MAX_STAR_FREE_MONOID, MAX_STAR_FREE_NODES, _aperiodic_element, block_lift, disj_balanced, generated, local_divisor_formulas, prove_formula, synthesize_star_free,
    transformation_monoid,
)

__all__ = ["ModulusSearch", "least_modulus", "synthesize_fo_mod", "MAX_BLOCK_WORDS", "SOURCE_FO_MOD"]

MAX_BLOCK_WORDS = 4_096
"""Largest |Σ|^m (the words of one block) :func:`synthesize_fo_mod` enumerates."""

SOURCE_FO_MOD = ("Barrington, Compton, Straubing & Thérien, Regular languages in NC¹ (quasi-aperiodic = FO[<,MOD] = "
                 "regular ∩ AC⁰); the modulus criterion η((Σ^m)^+) aperiodic ⇔ L ∈ FO[<,MOD_m] and the block "
                 "construction are this project's (langclass.core.synthesis.fo_mod); Diekert & Gastin, First-order definable "
                 "languages, §7 (local divisors); Masked Hard-Attention Transformers Recognize Exactly the Star-Free "
                 "Languages, Thm 19 and Cor 20 (finite-image / rational sinusoidal PE)")

Elem = tuple[int, ...]


@dataclass(frozen=True)
class ModulusSearch:
    """The least m with L ∈ FO[<,MOD_m].

    Attributes:
        modulus: the least working m (1 = star-free), or None when L is not quasi-aperiodic.
        stability_index: s.
        tried: ``[(m, works)]`` in the order tried (the divisors of the level period p up to the
            answer, or all of them).
        witness: for a failing s, a transformation in η(Σ^s) whose powers cycle (a group element).
    """

    modulus: int | None
    stability_index: int
    tried: tuple[tuple[int, bool], ...]

    def to_dict(self) -> dict:
        return {"modulus": self.modulus, "stability_index": self.stability_index,
                "tried": [{"m": m, "works": ok} for m, ok in self.tried]}


def _levels(gens: dict[str, Elem], mul, one: Elem) -> tuple[int, int, list[frozenset[Elem]]]:
    """(s, p, [η(Σ^1), …, η(Σ^s)]): the sets η(Σ^j) until they repeat (preperiod i, period p;
    s = p·⌈i/p⌉, the least s ≥ 1 with η(Σ^s) = η(Σ^{2s}))."""
    cur = frozenset(gens.values())
    seen = {cur: 1}
    levels = [cur]
    j = 1
    while True:
        cur = frozenset(mul(x, g) for x in cur for g in gens.values())
        j += 1
        if cur in seen:
            pre, per = seen[cur], j - seen[cur]
            break
        seen[cur] = j
        levels.append(cur)
    s = per * max(1, -(-pre // per))  # ≤ pre + per − 1 = j − 1 = len(levels)
    return s, per, levels


def _semigroup_aperiodic(generators: frozenset[Elem], mul) -> bool:
    """Is the semigroup generated by ``generators`` aperiodic?"""
    return all(_aperiodic_element(x, mul) for x in generated(generators, generators, mul))


def _least_modulus_on(monoid: Any) -> ModulusSearch:
    """:func:`least_modulus` on the enumerated transition monoid (element ids instead of tuples):
    for each divisor m of the level period p, η((Σ^m)^+) is the union of the levels η(Σ^j), j < i + p,
    m | j (the monoid computed them for its stability index), and it is aperiodic iff it misses every
    non-idempotent element of a group H-class (module docstring) — no powers are taken."""
    M = monoid
    if M.size > MAX_STAR_FREE_MONOID:
        raise LimitExceeded("max_star_free_monoid", MAX_STAR_FREE_MONOID,
                            f"the transition monoid has more than {MAX_STAR_FREE_MONOID} elements")
    s, p = M.stability_index, M.level_period
    H = M.green["H"]
    group_h = np.zeros(int(H.max()) + 1, dtype=bool)
    group_h[H[M.idempotent]] = True
    bad = group_h[H] & ~M.idempotent  # non-idempotent elements of group H-classes
    J, X = M.level_members
    tried = []
    for m in divisors(p):
        ok = not bad[X[J % m == 0]].any()
        tried.append((m, ok))
        if ok:
            return ModulusSearch(m, s, tuple(tried))
    return ModulusSearch(None, s, tuple(tried))


def least_modulus(dfa: DFA, monoid: Any = None) -> ModulusSearch:
    """The least m ≥ 1 with L ∈ FO[<,MOD_m] (module docstring): the divisors of the period p of the
    levels η(Σ^j) are tried in increasing order (the least working m divides p), m works iff the
    semigroup η((Σ^m)^+) is aperiodic.

    Args:
        dfa: any complete DFA (minimized here).
        monoid: its enumerated :class:`~langclass.core.algebra.monoid.TransitionMonoid` when the caller has
            it (the same answer, computed on element ids; ``analyze`` passes it).

    Returns:
        A :class:`ModulusSearch`; ``modulus`` is None when even m = s fails (L is not quasi-aperiodic,
        so not in FO[<,MOD] and not in AC⁰).

    Raises:
        LimitExceeded: ``max_star_free_monoid`` (the transition monoid is too large).

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> least_modulus(parse_regex("((a|b)(a|b))*a", ["a", "b"])).modulus
        2
    """
    if monoid is not None:
        return _least_modulus_on(monoid)
    A = dfa.canonical()
    gens, mul, one, _ = transformation_monoid(A)
    s, p, levels = _levels(gens, mul, one)
    tried = []
    for m in divisors(p):
        level = levels[m - 1]
        ok = _semigroup_aperiodic(level, mul)
        tried.append((m, ok))
        if ok:
            return ModulusSearch(m, s, tuple(tried))
    return ModulusSearch(None, s, tuple(tried))


def synthesize_fo_mod(dfa: DFA, limits: Limits = DEFAULT_LIMITS, modulus: int | None = None,
                      max_nodes: int = MAX_STAR_FREE_NODES):
    """A past-LTL formula with P, Y, S and MOD_m for a quasi-aperiodic language (module docstring).

    Args:
        dfa: any complete DFA (minimized here).
        limits: ``time_limit_s``, ``max_states`` (verification).
        modulus: the m to use (default: :func:`least_modulus`); must work for L.
        max_nodes: most distinct subformulas the local-divisor induction may build per letter order
            (``max_star_free_nodes``; default :data:`~langclass.core.synthesis.starfree.MAX_STAR_FREE_NODES`).

    Returns:
        A :class:`~langclass.core.synthesis.synthesis_result.Synthesis` with ``method="block-local-divisors"``
        (``"local-divisors"`` when m = 1, i.e. L is star-free), ``verified`` True when formula → DFA
        equivalence was proved within the proof budget; ``notes`` name m and s.

    Raises:
        UnsupportedError: L is not quasi-aperiodic (not in FO[<,MOD], not in AC⁰), or ``modulus``
            does not work for L.
        LimitExceeded: ``max_star_free_monoid``, ``max_block_words``, ``max_star_free_nodes``,
            ``time_limit_s``.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> s = synthesize_fo_mod(parse_regex("((a|b)(a|b))*a", ["a", "b"]))
        >>> s.verified, s.fragment, s.notes[0]
        (True, 'LTL[P,Y,S,MOD]', 'modulus m = 2 (stability index s = 2; tried m = 1, 2)')
    """
    from .synthesis_result import Synthesis

    A = dfa.canonical()
    search = least_modulus(A)
    if modulus is None:
        if search.modulus is None:
            raise UnsupportedError(
                f"the language is not quasi-aperiodic: its stable semigroup η(Σ^{search.stability_index}) contains a "
                "non-trivial group, so it is not in FO[<,MOD] (not in AC⁰) and no masked hard-attention transformer "
                "with a finite-image position embedding recognizes it", source=SOURCE_FO_MOD)
        m = search.modulus
    else:
        m = int(modulus)
        gens, mul, one, _ = transformation_monoid(A)
        if m < 1 or not _semigroup_aperiodic(_levels_upto(gens, mul, m), mul):
            raise UnsupportedError(f"modulus {m} does not work: η((Σ^{m})^+) is not aperiodic", field="modulus",
                                   source=SOURCE_FO_MOD)
    tried = ", ".join(str(t) for t, _ in search.tried)
    head = f"modulus m = {m} (stability index s = {search.stability_index}; tried m = {tried})"
    if m == 1:
        sf = synthesize_star_free(A, limits, max_nodes)
        return Synthesis(sf.formula, sf.alphabet, sf.method, sf.fragment, (), None, sf.verified, sf.fingerprint,
                         sf.source, (head,) + sf.notes)
    k = len(A.alphabet)
    if k ** m > MAX_BLOCK_WORDS:
        raise LimitExceeded("max_block_words", MAX_BLOCK_WORDS,
                            f"blocks of m = {m} letters over {k} letters are {k ** m} words (> {MAX_BLOCK_WORDS})")
    gens, mul, one, elems = transformation_monoid(A)
    end = Mod(m, 0)
    not_end = neg(end)

    # R[t][y]: the t letters before the current position multiply to y (Y^t … Y^1 atoms)
    def window(offsets: list[int]) -> dict[Elem, Formula]:
        """Formulas ``{y: f}``: the letters at Y^{offsets[0]}, …, Y^{offsets[-1]} (oldest first) multiply to y."""
        cur: dict[Elem, Formula] = {one: TOP}
        for off in reversed(offsets):  # prepend the older letter: y = a · z
            nxt: dict[Elem, list[Formula]] = {}
            for a, ga in gens.items():
                at = Atom(a) if off == 0 else Yesterday(Atom(a), off)
                for z, fz in cur.items():
                    nxt.setdefault(mul(ga, z), []).append(conj(at, fz))
            cur = {y: disj_balanced(fs) for y, fs in nxt.items()}
        return cur

    block_of = window(list(range(m - 1, -1, -1)))  # at a block end: the block's m letters (Y^{m−1} … Y^0)
    letters = {f"\x00B{j}": x for j, x in enumerate(sorted(block_of))}
    H, budget = local_divisor_formulas(letters, mul, one, limits, max_nodes)
    lift = block_lift(lambda symbol: block_of[letters[symbol]], end, not_end, budget)

    blocks = {n: lift(h, True) for n, h in H.items()}
    parts = []
    for t in range(m):
        R = window(list(range(t, 0, -1)))
        accept = [conj(fn, fy) for n, fn in blocks.items() for y, fy in R.items() if A.accepting[mul(n, y)[A.initial]]]
        parts.append(conj(Mod(m, (t + 1) % m), disj_balanced(accept)))
    formula = disj_balanced(parts)
    notes = [head, f"block alphabet η(Σ^{m}): {len(letters)} letters", f"transition monoid: {len(elems)} elements",
             f"{len(subformulas(formula))} distinct subformulas"]
    verified, note = prove_formula(formula, A, limits)
    if note:
        notes.append(note)
    return Synthesis(formula, A.alphabet, "block-local-divisors", fragment(formula), (), None, verified, A.fingerprint(),
                     SOURCE_FO_MOD, tuple(notes))


def _levels_upto(gens: dict[str, Elem], mul, m: int) -> frozenset[Elem]:
    """η(Σ^m)."""
    cur = frozenset(gens.values())
    for _ in range(m - 1):
        cur = frozenset(mul(x, g) for x in cur for g in gens.values())
    return cur
