"""Synthesis of LTL[P] and LTL[P,MOD] formulas from minimal DFAs, checked by DFA equivalence.

Three constructions, tried in this order by :func:`synthesize`:

1. **Partially ordered DFA → LTL[P]** (:func:`synthesize_ltl_p`). A minimal DFA whose only cycles are
   self-loops accepts the union, over the paths q0 → q1 → … → qn (qn accepting, consecutive states
   distinct) of its self-loop-free graph, of the *left-deterministic monomials*
   Σ0* A1 Σ1* ⋯ An Σn*, where Σi is the set of self-loop letters of qi and Ai the letters leading
   from q_{i−1} to q_i (so Ai ∩ Σ_{i−1} = ∅). Each monomial is an LTL[P] formula by induction:
   φ0 = ¬P(¬Σ0) and φk = P(Ak ∧ φ_{k−1}) ∧ ¬P(¬Σk ∧ P(Ak ∧ φ_{k−1})), read at a position i as
   "w_1 ⋯ w_{i−1} ∈ Σ0* A1 ⋯ Ak Σk*". Left-determinism makes the position j of the Ak-letter unique,
   which is what the second conjunct needs. (Theory brief §3; Lodaya–Pandya–Shah / Li & Cotterell
   for LTL[P] = R-trivial = PODFA, as cited in *Disentangling the Expressivity of RoPE*, Table 3.)
2. **(w1 ⋯ wm)* → LTL[P,MOD]** (:func:`synthesize_periodic_word`): *Disentangling the Expressivity of
   RoPE*, Prop. 3.2, MOD_m^0 ∧ ∀i ⋀_j (MOD_m^j(i) ⇒ π_{w_j}(i)), written at the readout position
   N+1 as ``MOD(m,1) & !P(⋁_j (MOD(m,j) & ¬w_j))`` (position i ≡ j (mod m) must carry w_j, with
   w_0 := w_m; N ≡ 0 (mod m) ⇔ N + 1 ≡ 1).
3. **QR DFA → LTL[P,MOD]** (:func:`synthesize_ltl_p_mod`): when every strongly connected component of
   the minimal DFA is a single state or a simple cycle (the linear-time test for "some k-automaton is
   partially ordered", *Disentangling the Expressivity of RoPE*, Thm 3.3 (3)⇔(5)), a formula
   In_q(i) = "the state after w_1 ⋯ w_{i−1} is q" is built per state, in topological order of the
   components. A run enters each component at most once; for a cycle of length d entered at position
   j in state c, the state before position i is c advanced (i−1−j) mod d steps, as long as each
   letter in between is the cycle letter of its state. The entry position is unique, so splitting it
   by residue ρ = j mod d and using MOD(d, ·) gives the same P/¬P(… ∧ P …) pattern as (1).

Every result is verified: the formula is compiled back with
:func:`~langclass.core.logic.formulas.formula_to_dfa` and its canonical fingerprint must equal the input's.
Languages outside LTL[P,MOD] (a component that is not a simple cycle) go on to the LTL[P,Y]
synthesis of :mod:`langclass.core.synthesis.synthesis_y`; outside both, :class:`~langclass.core.base.errors.UnsupportedError`
names the missing classes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.logic.formulas import (
    BOTTOM, TOP, Formula, Mod, conj, disj, formula_to_dfa, fragment, letters, neg, past,
)
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from .synthesis_result import MAX_TEXT_NODES, Synthesis

__all__ = [
    "Synthesis", "synthesize", "synthesize_ltl_p", "synthesize_periodic_word", "synthesize_ltl_p_mod",
    "is_partially_ordered", "periodic_word", "MAX_MONOMIALS", "MAX_TEXT_NODES",
]

MAX_MONOMIALS = 10_000
"""Cap on the number of monomials (paths q0 → accepting state) of :func:`synthesize_ltl_p`."""


SOURCE_MONOMIALS = ("Theory brief §3 (partially ordered DFA = union of left-deterministic monomials); "
                    "Disentangling the Expressivity of RoPE, Table 3 / App. A.6 (LTL[P] = PFO²[<] = R-trivial)")
SOURCE_PROP_3_2 = "Disentangling the Expressivity of RoPE, Prop. 3.2"
SOURCE_QR = "Disentangling the Expressivity of RoPE, Thm 3.3 ((3) A_k partially ordered ⇒ (5) LTL[P,MOD])"


# ----------------------------------------------------------------------- helpers
def _self_loop_free_order(dfa: DFA) -> list[int] | None:
    """A topological order of the states of the self-loop-free graph, or None if it has a cycle."""
    n = dfa.num_states
    t = dfa.transitions
    succ = [sorted({int(r) for r in t[q] if int(r) != q}) for q in range(n)]
    indeg = [0] * n
    for q in range(n):
        for r in succ[q]:
            indeg[r] += 1
    order = [q for q in range(n) if indeg[q] == 0]
    head = 0
    while head < len(order):
        q = order[head]
        head += 1
        for r in succ[q]:
            indeg[r] -= 1
            if indeg[r] == 0:
                order.append(r)
    return order if len(order) == n else None


def is_partially_ordered(dfa: DFA) -> bool:
    """The minimal DFA of L has no cycle other than self-loops (⇔ L ∈ LTL[P], syntactic monoid R-trivial)."""
    return _self_loop_free_order(dfa.canonical()) is not None


def _not_letters(alphabet: Sequence[str], allowed: set[str]) -> Formula:
    """"The current letter is not in ``allowed``" as a positive disjunction (valid at string positions)."""
    return letters([a for a in alphabet if a not in allowed])


def _set_text(symbols: Sequence[str]) -> str:
    return "{" + ",".join(symbols) + "}"


def _verify(formula: Formula, dfa: DFA, limits: Limits) -> str:
    target = dfa.canonical()
    got = formula_to_dfa(formula, target.alphabet, limits)
    if got.fingerprint() != target.fingerprint():  # a bug in this module, never a user error
        raise RuntimeError(f"synthesized formula is not equivalent to the DFA; counterexample {got.counterexample(target)}")
    return target.fingerprint()


def _cycle_certificate(dfa: DFA) -> dict:
    """Two distinct states p, q with words u: p → q and v: q → p (why the DFA is not partially ordered)."""
    from langclass.core.automata.graph import strongly_connected_components

    comp = strongly_connected_components(dfa)
    for c in np.unique(comp):
        members = np.flatnonzero(comp == c)
        if members.size > 1:
            p, q = int(members[0]), int(members[1])
            return {"p": p, "q": q, "u": list(_path(dfa, p, q)), "v": list(_path(dfa, q, p))}
    return {}


def _path(dfa: DFA, src: int, dst: int) -> tuple[str, ...]:
    """A shortest non-empty word leading from ``src`` to ``dst`` (``dst`` reachable from ``src``)."""
    from collections import deque

    t = dfa.transitions.tolist()
    prev: dict[int, tuple[int | None, int]] = {}
    dq: deque[int] = deque()
    for a, r in enumerate(t[src]):
        if r not in prev:
            prev[r] = (None, a)
            dq.append(r)
    while dq and dst not in prev:
        q = dq.popleft()
        for a, r in enumerate(t[q]):
            if r not in prev:
                prev[r] = (q, a)
                dq.append(r)
    word: list[str] = []
    q: int | None = dst
    while q is not None:
        p, a = prev[q]
        word.append(dfa.alphabet[a])
        q = p
    return tuple(reversed(word))


# ----------------------------------------------------------------------- (1) LTL[P]
def synthesize_ltl_p(dfa: DFA, limits: Limits = DEFAULT_LIMITS) -> Synthesis:
    """An LTL[P] formula for a partially ordered minimal DFA: a union of left-deterministic monomials.

    Args:
        dfa: any complete DFA (minimized here).
        limits: ``max_states`` / ``time_limit_s`` for the verification.

    Returns:
        A verified :class:`Synthesis` with ``method="monomials"`` and the monomials as text.

    Raises:
        UnsupportedError: the minimal DFA has a cycle through two states (L ∉ LTL[P]); ``extra``
            carries the certificate (states p, q and words u: p→q, v: q→p).
        LimitExceeded: ``limit="max_monomials"`` when there are more than :data:`MAX_MONOMIALS` paths.

    Example:
        >>> from langclass.core.automata.automaton import DFA
        >>> a_sigma = DFA.from_table("ab", [[1, 2], [1, 1], [2, 2]], 0, [1])
        >>> synthesize_ltl_p(a_sigma).monomials
        ('a {a,b}*',)
    """
    A = dfa.canonical()
    order = _self_loop_free_order(A)
    if order is None:
        raise UnsupportedError(
            "the minimal DFA is not partially ordered (it has a cycle through two states), so the language "
            "is not in LTL[P] and no LTL[P] formula exists",
            certificate=_cycle_certificate(A), source=SOURCE_MONOMIALS,
        )
    alpha = A.alphabet
    n = A.num_states
    t = A.transitions.tolist()
    loops = [[a for i, a in enumerate(alpha) if t[q][i] == q] for q in range(n)]
    edge_letters: dict[tuple[int, int], list[str]] = {}
    for q in range(n):
        for i, a in enumerate(alpha):
            r = t[q][i]
            if r != q:
                edge_letters.setdefault((q, r), []).append(a)
    # count accepting paths (DP over the DAG) before building anything
    count = [0] * n
    for q in reversed(order):
        count[q] = int(A.accepting[q]) + sum(count[r] for (p, r) in edge_letters if p == q)
        if count[q] > MAX_MONOMIALS:
            raise LimitExceeded("max_monomials", MAX_MONOMIALS,
                                f"the partially ordered DFA has more than {MAX_MONOMIALS} accepting paths (monomials)")
    deadline = limits.deadline()
    phis: list[Formula] = []
    texts: list[str] = []

    def loop_text(q: int) -> str:
        return f"{_set_text(loops[q])}*" if loops[q] else ""

    def phi0(q: int) -> Formula:
        return TOP if len(loops[q]) == len(alpha) else neg(past(_not_letters(alpha, set(loops[q]))))

    # DFS over paths from the initial state, sharing prefix formulas
    stack: list[tuple[int, Formula, list[str]]] = [(0, phi0(0), [loop_text(0)] if loops[0] else [])]
    while stack:
        deadline.check("synthesize_ltl_p")
        q, phi, parts = stack.pop()
        if A.accepting[q]:
            phis.append(phi)
            texts.append(" ".join(parts) if parts else "ε")
        for (p, r), lets in sorted(edge_letters.items(), reverse=True):
            if p != q or count[r] == 0:
                continue
            entry = conj(letters(lets), phi)
            here = past(entry)
            if len(loops[r]) < len(alpha):
                here = conj(here, neg(past(conj(_not_letters(alpha, set(loops[r])), past(entry)))))
            label = lets[0] if len(lets) == 1 else "(" + "|".join(lets) + ")"
            stack.append((r, here, parts + [label] + ([loop_text(r)] if loops[r] else [])))
    formula = disj(*phis) if phis else BOTTOM
    fp = _verify(formula, A, limits)
    return Synthesis(formula, alpha, "monomials", fragment(formula), tuple(texts), None, True, fp, SOURCE_MONOMIALS)


# ----------------------------------------------------------------------- (2) (w)*
def periodic_word(dfa: DFA) -> tuple[str, ...] | None:
    """The word w with L = (w)* (w non-empty), or None when L is not of that form.

    L = (w)* forces ε ∈ L and w to be the unique shortest non-empty word of L; the candidate is then
    confirmed by comparing canonical fingerprints with the DFA of (w)*.
    """
    A = dfa.canonical()
    if not A.accepting[0]:
        return None
    # shortest non-empty accepted word: BFS from the successors of q0
    from collections import deque

    t = A.transitions.tolist()
    parent: dict[int, tuple[int, int]] = {}
    start_letters: dict[int, int] = {}
    dq: deque[int] = deque()
    seen: set[int] = set()
    for i in range(A.num_states and len(A.alphabet)):
        r = t[0][i]
        if r not in seen:
            seen.add(r)
            start_letters[r] = i
            dq.append(r)
    found = None
    while dq:
        q = dq.popleft()
        if A.accepting[q]:
            found = q
            break
        for i, r in enumerate(t[q]):
            if r not in seen:
                seen.add(r)
                parent[r] = (q, i)
                dq.append(r)
    if found is None:
        return None
    word: list[int] = []
    q = found
    while q in parent:
        p, i = parent[q]
        word.append(i)
        q = p
    word.append(start_letters[q])
    w = tuple(A.alphabet[i] for i in reversed(word))
    m = len(w)
    k = len(A.alphabet)
    rows = []
    for s in range(m):  # states 0..m-1 track the position in w, m is the sink
        rows.append([(s + 1) % m if A.alphabet[i] == w[s] else m for i in range(k)])
    rows.append([m] * k)
    star = DFA.from_table(A.alphabet, rows, 0, [0])
    return w if star.fingerprint() == A.fingerprint() else None


def synthesize_periodic_word(dfa: DFA, limits: Limits = DEFAULT_LIMITS) -> Synthesis:
    """The LTL[P,MOD] formula of *Disentangling the Expressivity of RoPE*, Prop. 3.2, for L = (w1 ⋯ wm)*.

    Raises:
        UnsupportedError: L is not (w)* for a non-empty word w.
    """
    A = dfa.canonical()
    w = periodic_word(A)
    if w is None:
        raise UnsupportedError("the language is not of the form (w1…wm)* for a non-empty word", source=SOURCE_PROP_3_2)
    m = len(w)
    alpha = A.alphabet
    bad = disj(*(conj(Mod(m, j) if m > 1 else TOP, _not_letters(alpha, {w[(j - 1) % m]})) for j in range(m)))
    formula = conj(Mod(m, 1) if m > 1 else TOP, neg(past(bad)))
    fp = _verify(formula, A, limits)
    return Synthesis(formula, alpha, "periodic-word", fragment(formula), (), w, True, fp, SOURCE_PROP_3_2)


# ----------------------------------------------------------------------- (3) QR
def _cycle_components(A: DFA):
    """Components in topological order with their cycle structure; raises UnsupportedError if one is
    neither a single state nor a simple cycle."""
    from langclass.core.automata.graph import strongly_connected_components

    comp = strongly_connected_components(A)
    t = A.transitions.tolist()
    alpha = A.alphabet
    comps: list[dict] = []
    for c in range(int(comp.max()) + 1):
        members = [int(q) for q in np.flatnonzero(comp == c)]
        succ: dict[int, int] = {}
        lam: dict[int, list[str]] = {}
        for q in members:
            inside = {t[q][i] for i in range(len(alpha)) if comp[t[q][i]] == c}
            if len(inside) > 1:
                r1, r2 = sorted(inside)[:2]
                raise UnsupportedError(
                    f"no LTL[P,MOD] formula exists: in the minimal DFA, state {q} has edges to two states "
                    f"{r1} and {r2} of its own strongly connected component, which is therefore not a simple "
                    "cycle, so no k-automaton is partially ordered (the language is outside LTL[P,MOD])",
                    certificate={"state": q, "successors": [r1, r2], "component": members}, source=SOURCE_QR,
                )
            succ[q] = inside.pop() if inside else q
            lam[q] = [a for i, a in enumerate(alpha) if comp[t[q][i]] == c]
        comps.append({"members": members, "succ": succ, "letters": lam, "d": len(members)})
    return comp, comps


def synthesize_ltl_p_mod(dfa: DFA, limits: Limits = DEFAULT_LIMITS) -> Synthesis:
    """An LTL[P,MOD] formula for a DFA whose components are single states or simple cycles.

    See the module docstring, construction (3). For a partially ordered DFA the result is an LTL[P]
    formula (every period is 1).

    Raises:
        UnsupportedError: some component is not a simple cycle (L ∉ LTL[P,MOD]), with a certificate.
    """
    A = dfa.canonical()
    alpha = A.alphabet
    comp, comps = _cycle_components(A)
    t = A.transitions.tolist()
    deadline = limits.deadline()
    inq: dict[int, Formula] = {}

    def mod(d: int, r: int) -> Formula:
        return TOP if d == 1 else Mod(d, r % d)

    for c, info in enumerate(comps):  # topological order: predecessors first
        deadline.check("synthesize_ltl_p_mod")
        members, succ, lam, d = info["members"], info["succ"], info["letters"], info["d"]

        def advance(q: int, s: int) -> int:
            for _ in range(s):
                q = succ[q]
            return q

        # entries into the component: state c0 ∈ C entered from p ∉ C on letters A
        entries: dict[int, list[Formula]] = {}
        for p in range(A.num_states):
            if comp[p] == c or p not in inq:
                continue
            for q in members:
                lets = [a for i, a in enumerate(alpha) if t[p][i] == q]
                if lets:
                    entries.setdefault(q, []).append(conj(inq[p], letters(lets)))
        terms: dict[int, list[Formula]] = {q: [] for q in members}
        sources: list[tuple[int, Formula | None]] = [(c0, disj(*fs)) for c0, fs in sorted(entries.items())]
        if 0 in members:
            sources.append((0, None))  # the run starts in q0 ("entered" at position 0)
        for c0, enter in sources:
            for rho in (range(d) if enter is not None else [0]):
                bad_sets = [[a for a in alpha if a not in set(lam[advance(c0, s)])] for s in range(d)]
                common = [a for a in alpha if all(a in b for b in bad_sets)]  # bad at every residue
                bad = disj(letters(common),
                           *(conj(mod(d, rho + 1 + s), letters([a for a in bad_sets[s] if a not in common]))
                             for s in range(d)))
                if enter is None:
                    stay = neg(past(bad))
                else:
                    e = conj(enter, mod(d, rho))
                    stay = conj(past(e), neg(past(conj(bad, past(e)))))
                for s in range(d):
                    terms[advance(c0, s)].append(conj(stay, mod(d, rho + 1 + s)))
        for q in members:
            inq[q] = disj(*terms[q])
    formula = disj(*(inq[q] for q in range(A.num_states) if A.accepting[q] and q in inq))
    fp = _verify(formula, A, limits)
    return Synthesis(formula, alpha, "modular-states", fragment(formula), (), None, True, fp, SOURCE_QR)


# ----------------------------------------------------------------------- dispatcher
def synthesize(dfa: DFA, limits: Limits = DEFAULT_LIMITS) -> Synthesis:
    """The best known formula for L(dfa): LTL[P] monomials, else Prop. 3.2 for (w)*, else the
    modular state formulas for LTL[P,MOD], else the window-product formula for LTL[P,Y]
    (:func:`langclass.core.synthesis.synthesis_y.synthesize_ltl_p_y`); verified by DFA equivalence.

    Raises:
        UnsupportedError: L is in neither LTL[P,MOD] nor LTL[P,Y] — the message names both missing
            classes and ``extra['certificate']`` carries the LTL[P,MOD] certificate.
        LimitExceeded: ``max_monomials``, ``max_window_states``, ``max_states``, ``time_limit_s``.
    """
    A = dfa.canonical()
    if _self_loop_free_order(A) is not None:
        try:
            return synthesize_ltl_p(A, limits)
        except LimitExceeded as e:
            if e.limit != "max_monomials":
                raise
            return synthesize_ltl_p_mod(A, limits)  # state formulas: polynomial as a DAG
    if periodic_word(A) is not None:
        return synthesize_periodic_word(A, limits)
    try:
        return synthesize_ltl_p_mod(A, limits)
    except UnsupportedError as not_mod:
        from .synthesis_y import synthesize_ltl_p_y

        try:
            return synthesize_ltl_p_y(A, limits)
        except UnsupportedError as not_y:
            raise UnsupportedError(
                f"no formula for soft attention: the language is outside LTL[P,MOD] ({not_mod.detail}) and "
                f"outside LTL[P,Y] ({not_y.detail})", certificate=not_mod.extra.get("certificate"),
                source=f"{SOURCE_QR}; {not_y.extra.get('source', '')}",
            ) from None
