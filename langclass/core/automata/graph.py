"""Graph structure of a DFA: strongly connected components, periods, partial order, k-automata.

Functions accept a :class:`DFA`, a :class:`KAutomaton`, or a raw successor table (``int`` array
``[n, m]``, ``table[q, j]`` = j-th successor of q): only the transition graph matters.

Sources: R. Tarjan, "Depth-first search and linear graph algorithms" (SIAM J. Comput. 1972) for
the components; the k-automaton is Definition A.8 of "Disentangling the Expressivity of RoPE"
(letters = words of length k, δ^k(q, w₁…w_k) = δ(…δ(q, w₁)…, w_k)); a DFA is *partially ordered*
(PODFA) when its only cycles are self-loops, and PODFA_k is the class of DFAs whose k-automaton is
partially ordered (ibid., Def. A.8 and Thm 3.3).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import gcd
from typing import Any

import numpy as np

from .automaton import DFA
from langclass.core.base.errors import InputError
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from .smallgraph import strong_labels

__all__ = [
    "successor_table",
    "strongly_connected_components",
    "component_members",
    "condensation_edges",
    "is_partially_ordered",
    "component_periods",
    "KAutomaton",
    "k_automaton",
    "k_step_successors",
]


def successor_table(obj: Any) -> np.ndarray:
    """The ``int64`` successor table ``[n, m]`` of a DFA, k-automaton or raw table."""
    t = getattr(obj, "transitions", obj)
    t = np.asarray(t)
    if t.ndim != 2:
        raise ValueError(f"a successor table must be 2-D, got shape {t.shape}")
    return t.astype(np.int64, copy=False)


def strongly_connected_components(obj: Any) -> np.ndarray:
    """Strongly connected components of the transition graph (all states, reachable or not).

    Args:
        obj: a :class:`DFA`, :class:`KAutomaton` or successor table ``[n, m]``.

    Returns:
        ``int64`` array ``[n]`` of component ids ``0..c-1`` numbered in a topological order of the
        condensation: every edge ``q → r`` satisfies ``comp[q] <= comp[r]``. Among the possible
        topological orders, the one given by Tarjan's algorithm started at state 0 (then 1, ...)
        is used, so the numbering is deterministic. Iterative (no recursion limit), O(n·m).

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> strongly_connected_components(parse_regex("a(a|b)*", ["a", "b"])).tolist()
        [0, 2, 1]
    """
    labels = strong_labels([sorted(set(row)) for row in successor_table(obj).tolist()])
    c = max(labels, default=-1) + 1
    # Tarjan completes (labels) components in reverse topological order
    return np.asarray([c - 1 - x for x in labels], dtype=np.int64)


def component_members(comp: np.ndarray) -> list[list[int]]:
    """``members[c]`` = sorted states of component ``c`` (from :func:`strongly_connected_components`)."""
    out: list[list[int]] = [[] for _ in range(int(comp.max()) + 1 if comp.size else 0)]
    for q, c in enumerate(comp.tolist()):
        out[c].append(q)
    return out


def condensation_edges(obj: Any, comp: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Sorted edges ``(c, d)``, ``c != d``, of the condensation DAG (component graph)."""
    t = successor_table(obj)
    comp = strongly_connected_components(t) if comp is None else comp
    src = np.repeat(comp, t.shape[1])
    dst = comp[t.ravel()]
    mask = src != dst
    pairs = np.unique(np.stack([src[mask], dst[mask]], axis=1), axis=0) if mask.any() else np.zeros((0, 2), dtype=np.int64)
    return [(int(a), int(b)) for a, b in pairs.tolist()]


def is_partially_ordered(obj: Any, states: np.ndarray | None = None) -> bool:
    """True iff the only cycles of the transition graph are self-loops (every SCC is one state).

    Args:
        obj: DFA, k-automaton or successor table.
        states: optional boolean mask ``[n]``; only components containing a selected state are
            inspected (the default inspects all states).

    Source: partially ordered DFAs (PODFA), "Disentangling the Expressivity of RoPE", Def. A.8 context;
    for a minimal DFA, partially ordered ⇔ the syntactic monoid is R-trivial (Brzozowski & Fich 1980).
    """
    comp = strongly_connected_components(obj)
    sizes = np.bincount(comp)
    big = sizes[comp] > 1
    if states is not None:
        big &= np.asarray(states, dtype=bool)
    return not bool(big.any())


def component_periods(obj: Any, comp: np.ndarray | None = None) -> np.ndarray:
    """Period of every SCC: the gcd of the lengths of its cycles; ``0`` for a single state without a self-loop.

    Computed by BFS levels inside each component: period = gcd over intra-component edges
    ``u → v`` of ``level(u) + 1 − level(v)`` (Denardo 1977; standard for Markov-chain periods).

    Returns:
        ``int64`` array ``[c]`` indexed by component id.
    """
    t = successor_table(obj)
    comp = strongly_connected_components(t) if comp is None else comp
    members = component_members(comp)
    tl = t.tolist()
    periods = np.zeros(len(members), dtype=np.int64)
    level = [-1] * t.shape[0]
    for c, qs in enumerate(members):
        root = qs[0]
        level[root] = 0
        frontier = [root]
        g = 0
        order = [root]
        while frontier:
            nxt = []
            for u in frontier:
                for v in set(tl[u]):
                    if comp[v] != c:
                        continue
                    if level[v] < 0:
                        level[v] = level[u] + 1
                        nxt.append(v)
                        order.append(v)
            frontier = nxt
        for u in order:
            for v in set(tl[u]):
                if comp[v] == c:
                    g = gcd(g, abs(level[u] + 1 - level[v]))
        periods[c] = g
    return periods


# ------------------------------------------------------------------------------ k-automaton


@dataclass(frozen=True, eq=False)
class KAutomaton:
    """The k-automaton A_k = (Σ^k, Q, q0, F, δ^k) of a DFA ("Disentangling the Expressivity of RoPE", Def. A.8).

    Attributes:
        base: the DFA A.
        k: block length (k ≥ 1).
        letters: the letters of A_k, words of length k as tuples of symbols. All |Σ|^k words in
            shortlex order, or (``distinct=True``) one representative (the shortlex-least word) per
            distinct transformation δ^k(·, w) of Q.
        transitions: ``int32`` ``[n, len(letters)]``; ``transitions[q, j] = δ^k(q, letters[j])``.
        initial, accepting: as in ``base``.
    """

    base: DFA
    k: int
    letters: tuple[tuple[str, ...], ...]
    transitions: np.ndarray
    distinct: bool

    @property
    def initial(self) -> int:
        return self.base.initial

    @property
    def accepting(self) -> np.ndarray:
        return self.base.accepting

    @property
    def num_states(self) -> int:
        return self.base.num_states

    @property
    def num_letters(self) -> int:
        return len(self.letters)

    def as_dfa(self, separator: str | None = None) -> DFA:
        """A_k as a :class:`DFA` whose symbols are the k-letter words joined by ``separator``
        (default ``""`` when every base symbol is one character, else ``" "``).

        Raises:
            AlphabetError: two joined names coincide (choose another separator).
        """
        if separator is None:
            separator = "" if all(len(s) == 1 for s in self.base.alphabet) else " "
        names = tuple(separator.join(w) for w in self.letters)
        return DFA(names, self.transitions, self.initial, self.accepting)


#: Most table entries (states × letters) a k-automaton may hold (≈ 400 MB as int32).
MAX_TABLE_ENTRIES = 100_000_000


def _check_letters(limits: Limits, letters: int, n: int) -> None:
    limits.check("max_k_automaton_letters", letters)
    if letters * n > MAX_TABLE_ENTRIES:
        from langclass.core.base.errors import LimitExceeded

        cap = max(1, MAX_TABLE_ENTRIES // n)
        raise LimitExceeded(
            "max_k_automaton_letters",
            min(cap, limits.max_k_automaton_letters),
            f"a k-automaton of {n} states may have at most {cap} letters (table of {MAX_TABLE_ENTRIES} entries); "
            f"{letters} needed",
        )


def k_automaton(dfa: DFA, k: int, limits: Limits = DEFAULT_LIMITS, *, distinct: bool = False) -> KAutomaton:
    """Build the k-automaton A_k of ``dfa`` eagerly.

    Args:
        dfa: a complete DFA.
        k: block length, ``k >= 1``.
        limits: ``max_k_automaton_letters`` bounds |Σ|^k (all words) or, with ``distinct=True``,
            the number of distinct transformations kept at every step.
        distinct: keep one letter per distinct transformation δ^k(·, w) (the shortlex-least w);
            the transition graph — all that SCCs and partial order depend on — is unchanged,
            and there are at most |transition monoid| of them however large |Σ|^k is.

    Returns:
        :class:`KAutomaton` (DFA-like: ``transitions``, ``initial``, ``accepting``, ``num_states``).

    Raises:
        InputError: ``k`` is not a positive integer.
        LimitExceeded: ``max_k_automaton_letters``.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> a2 = k_automaton(parse_regex("(ab)*", ["a", "b"]), 2)
        >>> a2.as_dfa().alphabet, is_partially_ordered(a2)
        (('aa', 'ab', 'ba', 'bb'), True)
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive integer, not {k!r}", field="k")
    k = int(k)
    t = dfa.transitions.astype(np.int64)
    n, m = t.shape
    if not distinct:
        _check_letters(limits, m**k, n)
        # columns: word w = w_1..w_k (shortlex) ↦ δ^k(·, w); build [n, m^j] iteratively
        cur = np.arange(n, dtype=np.int64)[:, None]  # j = 0: the identity
        for _ in range(k):
            cur = t[cur].reshape(n, -1)  # [n, m^j, m] -> [n, m^(j+1)], new letter varies fastest
        letters = tuple(itertools.product(dfa.alphabet, repeat=k))
        return KAutomaton(dfa, k, letters, np.ascontiguousarray(cur, dtype=np.int32), False)
    # distinct transformations: rows of `funcs` are maps Q → Q (as [count, n]); words kept alongside
    funcs = np.arange(n, dtype=np.int64)[None, :]
    words: list[tuple[int, ...]] = [()]
    for _ in range(k):
        # extend every kept word by every letter: f·a = t[f, a]
        ext = t[funcs][:, :, :]  # [count, n, m]
        _check_letters(limits, len(words) * m, n)
        cand = np.transpose(ext, (0, 2, 1)).reshape(-1, n)  # [count*m, n], (word, letter) order
        cand_words = [w + (a,) for w in words for a in range(m)]
        uniq, first = np.unique(cand, axis=0, return_index=True)
        keep = np.sort(first)  # shortlex-least representative: candidates come in shortlex order
        limits.check("max_k_automaton_letters", len(keep))
        funcs = cand[keep]
        words = [cand_words[i] for i in keep.tolist()]
    letters = tuple(tuple(dfa.alphabet[a] for a in w) for w in words)
    return KAutomaton(dfa, k, letters, np.ascontiguousarray(funcs.T, dtype=np.int32), True)


def k_step_successors(obj: Any, k: int) -> np.ndarray:
    """Boolean ``[n, n]`` matrix R with ``R[p, q]`` iff some word of length exactly ``k`` leads p to q
    (the edge relation of A_k), by repeated squaring of the one-step relation: O(n³ log k), no
    enumeration of Σ^k.

    Raises:
        InputError: ``k`` is not a non-negative integer.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InputError(f"k must be a non-negative integer, not {k!r}", field="k")
    t = successor_table(obj)
    n = t.shape[0]
    step = np.zeros((n, n), dtype=bool)
    step[np.repeat(np.arange(n), t.shape[1]), t.ravel()] = True
    result = np.eye(n, dtype=bool)
    power = step
    k = int(k)
    while k:
        if k & 1:
            result = (result.astype(np.float64) @ power.astype(np.float64)) > 0  # exact: entries ≤ n < 2^53
        k >>= 1
        if k:
            power = (power.astype(np.float64) @ power.astype(np.float64)) > 0
    return result
