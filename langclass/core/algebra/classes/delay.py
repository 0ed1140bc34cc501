"""The Y-offset of an LTL[P,Y] language: the least k with L ∈ R ∗ D_k, from the product with the k-letter window.

The k found is the largest Y-offset the conventional-RoPE construction needs ("Disentangling the
Expressivity of RoPE", Cor 4.1). Two implementations of the product's construction (numpy integer
keys, and a dictionary of tuple windows where the keys would not fit in 62 bits) answer the same.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from langclass.core.automata.automaton import DFA
from langclass.core.base.limits import Deadline
from langclass.core.automata.smallgraph import SMALL_GRAPH_EDGES, strong_labels

__all__ = ["ltl_p_y_delay"]


def ltl_p_y_delay(dfa: DFA, max_k: int | None = None, max_states: int = 200_000, *, min_k: int = 0,
                  deadline: Deadline | None = None) -> int | None:
    """The least k such that L is an LTL[P] property of the k-letter windows: L ∈ R ∗ D_k.

    Criterion: in the product B_k of the minimal DFA with the "last k letters" automaton (reachable
    part), no strongly connected component contains two pairs (p, x), (q, x) with the same window x
    and p ≠ q. (Sufficient: SCCs of B_k, read on window letters, form a partially ordered automaton
    from which the state of A and the window determine acceptance. Necessary: a partially ordered
    automaton over windows is constant on long loops, and equal states plus equal windows give equal
    futures, so p = q in the minimal DFA.) k = 0 is LTL[P] itself; such a k exists iff the syntactic
    semigroup is locally R-trivial (LR = R ∗ D), and this k is the largest Y-offset the
    conventional-RoPE construction needs ("Disentangling the Expressivity of RoPE", Cor 4.1).

    B_k is built breadth-first a whole frontier at a time in numpy: a window of at most k letters is
    the integer of its letters in base |Σ|+1 (digits 1..|Σ|, so shorter windows have leading zeros),
    reading a advances it to (x·(|Σ|+1) + a + 1) mod (|Σ|+1)^k, and a pair (q, x) is the key
    q·(|Σ|+1)^k + x; SCCs by scipy (in plain Python for small products). Where the keys would not fit in 62 bits a dictionary BFS is used.

    Args:
        dfa: any DFA (minimized first).
        max_k: largest k tried (default: the number of states).
        max_states: cap on the states of B_k.
        min_k: smallest k tried (a caller that already ruled out k < min_k continues from there).
        deadline: optional deadline, checked per k and per BFS layer.

    Returns:
        the least k with min_k ≤ k ≤ max_k, or ``None`` if there is none (or the product grew past
        ``max_states``).

    Raises:
        TimeLimitExceeded: the deadline passed.
    """
    A = dfa.canonical()
    n, s = A.num_states, A.num_letters
    t = A.transitions.astype(np.int64)
    max_k = n if max_k is None else max_k
    for k in range(max(0, min_k), max_k + 1):
        if deadline is not None:
            deadline.check("LTL[P,Y] delay")
        W = (s + 1) ** k
        ok = _delay_ok_numpy(t, A.initial, k, W, max_states, deadline) if n * W < 1 << 62 else \
            _delay_ok_dict(t.tolist(), A.initial, k, max_states, deadline)
        if ok is None:
            return None
        if ok:
            return k
    return None


def _delay_ok_numpy(t: np.ndarray, initial: int, k: int, W: int, max_states: int,
                    deadline: Deadline | None) -> bool | None:
    """The B_k criterion of :func:`ltl_p_y_delay` with integer keys q·W + window; None past max_states."""
    n, s = t.shape
    base = s + 1
    letters = np.arange(s, dtype=np.int64)

    def succ(keys: np.ndarray) -> np.ndarray:  # [len(keys), s]
        q, x = np.divmod(keys, W)
        nx = (x[:, None] * base + letters[None, :] + 1) % W if k else np.zeros((keys.size, s), dtype=np.int64)
        return t[q] * W + nx

    seen = np.array([initial * W], dtype=np.int64)  # sorted
    frontier = seen
    while frontier.size:
        if deadline is not None:
            deadline.check("LTL[P,Y] delay")
        cand = np.unique(succ(frontier))
        pos = np.minimum(np.searchsorted(seen, cand), seen.size - 1)
        new = cand[seen[pos] != cand]  # sorted, unique, unseen
        if new.size + seen.size > max_states:
            return None
        seen = np.concatenate([seen, new])
        seen.sort(kind="stable")  # two sorted runs: a linear merge
        frontier = new
    N = seen.size
    dst = np.searchsorted(seen, succ(seen)).ravel()
    if dst.size <= SMALL_GRAPH_EDGES:  # the partition is all that is read: any component labels do
        comp = np.asarray(strong_labels(dst.reshape(N, s).tolist()), dtype=np.int64)
    else:
        src = np.repeat(np.arange(N), s)
        g = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(N, N))
        _, comp = connected_components(g, directed=True, connection="strong")
    q, x = np.divmod(seen, W)
    order = np.lexsort((q, x, comp))  # by SCC, then window, then state
    c, x, q = comp[order], x[order], q[order]
    same = (c[1:] == c[:-1]) & (x[1:] == x[:-1])
    return not (same & (q[1:] != q[:-1])).any()  # no SCC holds (p, x), (q, x) with p ≠ q


def _delay_ok_dict(t: list[list[int]], initial: int, k: int, max_states: int,
                   deadline: Deadline | None) -> bool | None:
    """The B_k criterion of :func:`ltl_p_y_delay` with tuple windows in a dictionary (any k)."""
    m = len(t[0])
    index: dict[tuple[int, tuple[int, ...]], int] = {(initial, ()): 0}
    states = [(initial, ())]
    src: list[int] = []
    dst: list[int] = []
    i = 0
    while i < len(states):
        if deadline is not None and i % 4096 == 0:
            deadline.check("LTL[P,Y] delay")
        q, x = states[i]
        for a in range(m):
            y = (x + (a,))[-k:] if k else ()
            key = (t[q][a], y)
            j = index.get(key)
            if j is None:
                j = index[key] = len(states)
                states.append(key)
                if len(states) > max_states:
                    return None
            src.append(i)
            dst.append(j)
        i += 1
    N = len(states)
    if len(dst) <= SMALL_GRAPH_EDGES:
        comp = np.asarray(strong_labels([dst[i * m:(i + 1) * m] for i in range(N)]), dtype=np.int64)
    else:
        g = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(N, N))
        _, comp = connected_components(g, directed=True, connection="strong")
    seen: dict[tuple[int, tuple[int, ...]], int] = {}
    for (q, x), c in zip(states, comp.tolist()):
        if seen.setdefault((c, x), q) != q:
            return False
    return True
