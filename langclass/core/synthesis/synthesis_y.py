"""Synthesis of LTL[P,Y] formulas from minimal DFAs through the window product B_k.

Let k be the least Y-offset of the language (:func:`langclass.core.algebra.classes.ltl_p_y_delay`) and B_k
the reachable product of the minimal DFA A with the automaton remembering the last ≤ k letters:
a state (q, x) is "A is in q and the last min(k, t) letters read are x". The criterion behind
``ltl_p_y_delay`` is: **no strongly connected component of B_k holds two pairs (p, x), (q, x) with
the same window x and p ≠ q**. So inside a component S the window alone names the state, and a run of
B_k enters every component at most once (the components form a DAG). Both facts give a formula
in the style of the left-deterministic monomials of LTL[P] (construction (1) of
:mod:`langclass.core.synthesis.synthesis`), evaluated at position i about the prefix w_1 ⋯ w_{i−1}:

* ``Win_x(i)`` — "the last min(k, i−1) letters are x" — ⋀_{t ≤ |x|} Y^t x_{|x|+1−t}, and
  ¬Y^{|x|+1}⊤ when |x| < k (then i − 1 = |x| exactly);
* ``Enter_S(j)`` — reading w_j moves B_k from outside S into S — ⋁ over the edges (p, x) →a S with
  (p, x) ∉ S of ``In_{S'}(j) ∧ Win_x(j) ∧ a`` (S' the component of (p, x), earlier in topological
  order);
* ``Leave_S(m)`` — ⋁ over the edges (p, x) →a out of S with (p, x) ∈ S of ``Win_x(m) ∧ a``; while
  the run is in S at m this is exactly "the run leaves S at m", because the window names the state;
* ``In_S(i) = P(Enter_S) ∧ ¬P(P(Enter_S) ∧ Leave_S)`` — entered at a (unique) j < i and no leave at
  any m with j < m < i; for the initial component (the run starts in it) ``In_S = ¬P(Leave_S)``;
  a state (q, x) with |x| < k is reached only after exactly |x| letters, namely x, so there
  ``In = Win_x``.

The language is ⋁ over accepting pairs (q, x) ∈ S of ``In_S ∧ Win_x`` at the readout position N+1.
Only P, Y^t (t ≤ k), letters and Boolean connectives occur, so the result is in LTL[P,Y] with
offsets ≤ k. Every formula is verified: it is compiled back with
:func:`~langclass.core.logic.formulas.formula_to_dfa` and its fingerprint must equal the input's.

Sources: *Disentangling the Expressivity of RoPE*, Cor 4.1 (LTL[P] with Y^k, simulated by
conventional RoPE up to a certified length); the window criterion is the one documented (with
its proof of sufficiency and necessity) at :func:`~langclass.core.algebra.classes.ltl_p_y_delay`, the
Y-dual of Cohen–Perrin–Pin's local R-triviality characterization of TL[X,F] (*On the expressive
power of temporal logic*).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.logic.formulas import BOTTOM, TOP, Formula, Yesterday, conj, disj, formula_to_dfa, fragment, letters, neg, past
from langclass.core.base.limits import DEFAULT_LIMITS, Limits

__all__ = ["synthesize_ltl_p_y", "window_product", "MAX_WINDOW_STATES", "MAX_Y_OFFSET", "SOURCE_LTL_P_Y"]

MAX_WINDOW_STATES = 20_000
"""Cap on the reachable states of the window product B_k built by :func:`synthesize_ltl_p_y`."""

MAX_Y_OFFSET = 12
"""Largest Y-offset k tried by :func:`synthesize_ltl_p_y` (the window formulas hold k·|Σ| Y-atoms)."""

SOURCE_LTL_P_Y = ("Disentangling the Expressivity of RoPE, Cor 4.1 (LTL[P,Y^k]); window product criterion of "
                  "ltl_p_y_delay (Y-dual of Cohen–Perrin–Pin, On the expressive power of temporal logic: "
                  "locally R-trivial syntactic semigroup)")


def window_product(dfa: DFA, k: int, max_states: int = MAX_WINDOW_STATES) -> tuple[list[tuple[int, tuple[int, ...]]], np.ndarray]:
    """The reachable window product B_k of a DFA (breadth-first from (q0, ε)).

    Args:
        dfa: a DFA (used as given; pass the canonical one for the criterion).
        k: window length ≥ 0.
        max_states: cap on the states built.

    Returns:
        ``(states, table)``: ``states[s] = (q, window)`` with the window as a tuple of letter indices
        (oldest first, length min(k, t)); ``table`` ``int64 [len(states), |Σ|]`` the successors.

    Raises:
        LimitExceeded: ``limit="max_window_states"`` past ``max_states``.
    """
    t = dfa.transitions.tolist()
    s = len(dfa.alphabet)
    start = (int(dfa.initial), ())
    index = {start: 0}
    states = [start]
    rows: list[list[int]] = []
    dq = deque([start])
    while dq:
        q, x = dq.popleft()
        row = []
        for a in range(s):
            nxt = (t[q][a], (x + (a,))[-k:] if k else ())
            j = index.get(nxt)
            if j is None:
                if len(states) >= max_states:
                    raise LimitExceeded("max_window_states", max_states,
                                        f"the window product B_{k} has more than {max_states} states")
                j = index[nxt] = len(states)
                states.append(nxt)
                dq.append(nxt)
            row.append(j)
        rows.append(row)
    return states, np.asarray(rows, dtype=np.int64).reshape(len(states), s)


def _verify(formula: Formula, target: DFA, limits: Limits) -> str:
    got = formula_to_dfa(formula, target.alphabet, limits)
    if got.fingerprint() != target.fingerprint():  # a bug in this module, never a user error
        raise RuntimeError(f"synthesized LTL[P,Y] formula is not equivalent to the DFA; counterexample "
                           f"{got.counterexample(target)}")
    return target.fingerprint()


def synthesize_ltl_p_y(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, k: int | None = None):
    """An LTL[P,Y] formula equivalent to ``dfa`` (module docstring), verified by DFA equivalence.

    Args:
        dfa: any complete DFA (minimized here).
        limits: ``max_states`` / ``time_limit_s`` for the delay search and the verification.
        k: the Y-offset to use (default: the least one, :func:`~langclass.core.algebra.classes.ltl_p_y_delay`
            up to :data:`MAX_Y_OFFSET`). A k that fails the window criterion raises UnsupportedError.

    Returns:
        A verified :class:`~langclass.core.synthesis.synthesis.Synthesis` with ``method="window-product"``;
        ``notes`` give k and the number of states and components of B_k.

    Raises:
        UnsupportedError: no k ≤ :data:`MAX_Y_OFFSET` satisfies the criterion (L ∉ LTL[P,Y], or its
            offset is larger than the limit — the message says which is known).
        LimitExceeded: ``max_window_states``; ``max_states`` / ``time_limit_s`` of the verification.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> s = synthesize_ltl_p_y(parse_regex("(a|b)*a", ["a", "b"]))
        >>> s.fragment, s.verified
        ('LTL[P,Y]', True)
    """
    from langclass.core.algebra.classes import ltl_p_y_delay
    from langclass.core.automata.graph import strongly_connected_components
    from .synthesis_result import Synthesis

    A = dfa.canonical()
    deadline = limits.deadline()
    if k is None:
        k = ltl_p_y_delay(A, max_k=min(MAX_Y_OFFSET, max(A.num_states, 1)), max_states=MAX_WINDOW_STATES,
                          deadline=deadline)
        if k is None:
            raise UnsupportedError(
                f"no LTL[P,Y] formula with Y-offsets ≤ {min(MAX_Y_OFFSET, A.num_states)} exists for this language "
                f"(its syntactic semigroup is not locally R-trivial, or the window product exceeds "
                f"{MAX_WINDOW_STATES} states)", source=SOURCE_LTL_P_Y)
    if k > MAX_Y_OFFSET:
        raise LimitExceeded("max_y_offset", MAX_Y_OFFSET, f"Y-offset {k} exceeds {MAX_Y_OFFSET}")
    alpha = A.alphabet
    states, table = window_product(A, k)
    comp = strongly_connected_components(table)
    n_comp = int(comp.max()) + 1
    members: list[list[int]] = [[] for _ in range(n_comp)]
    for st, c in enumerate(comp.tolist()):
        members[c].append(st)
    for c, ms in enumerate(members):  # the criterion: within a component the window names the state
        windows = [states[st][1] for st in ms]
        if len(set(windows)) != len(windows):
            raise UnsupportedError(f"the window criterion fails for k={k}: a component of B_{k} holds two states "
                                   "with the same window", source=SOURCE_LTL_P_Y)

    win_cache: dict[tuple[int, ...], Formula] = {}

    def win(x: tuple[int, ...]) -> Formula:
        f = win_cache.get(x)
        if f is None:
            parts = [Yesterday(letters([alpha[x[len(x) - t]]]), t) for t in range(1, len(x) + 1)]
            if len(x) < k:
                parts.append(neg(Yesterday(TOP, len(x) + 1)))
            f = win_cache[x] = conj(*parts) if parts else TOP
        return f

    in_comp: dict[int, Formula] = {}
    init_comp = int(comp[0])
    for c in sorted(range(n_comp)):  # comp ids are a topological order of the condensation
        deadline.check("synthesize_ltl_p_y")
        enter_terms: dict[int, list[str]] = {}  # source state → letters entering c
        leave_terms: dict[tuple[int, ...], list[str]] = {}  # window in c → letters leaving c
        for st in members[c]:
            for a, r in enumerate(table[st].tolist()):
                if comp[r] != c:
                    leave_terms.setdefault(states[st][1], []).append(alpha[a])
        for c2 in range(c):
            if c2 not in in_comp:
                continue
            for st in members[c2]:
                for a, r in enumerate(table[st].tolist()):
                    if comp[r] == c:
                        enter_terms.setdefault(st, []).append(alpha[a])
        if c != init_comp and not enter_terms:
            continue  # unreachable from the components built so far (cannot happen on a reachable product)
        if len(members[c]) == 1 and len(states[members[c][0]][1]) < k:
            in_comp[c] = win(states[members[c][0]][1])  # a window shorter than k is the whole prefix
            continue
        leave = disj(*(conj(win(x), letters(ls)) for x, ls in sorted(leave_terms.items()))) if leave_terms else BOTTOM
        if c == init_comp:
            in_comp[c] = neg(past(leave)) if leave_terms else TOP
        else:
            enter = disj(*(conj(in_comp[int(comp[st])], win(states[st][1]), letters(ls))
                           for st, ls in sorted(enter_terms.items())))
            entered = past(enter)
            in_comp[c] = conj(entered, neg(past(conj(entered, leave)))) if leave_terms else entered
    accepting = [conj(in_comp[int(comp[st])], win(x)) for st, (q, x) in enumerate(states)
                 if A.accepting[q] and int(comp[st]) in in_comp]
    formula = disj(*accepting) if accepting else BOTTOM
    fp = _verify(formula, A, limits)
    notes = (f"k = {k}", f"window product B_{k}: {len(states)} states, {n_comp} strongly connected components")
    return Synthesis(formula, alpha, "window-product", fragment(formula), (), None, True, fp, SOURCE_LTL_P_Y, notes)
