"""Every minimal complete DFA with n states over k letters, each once: the enumeration under the census.

A minimal complete DFA is initially connected, and an initially connected DFA has exactly one
breadth-first numbering (states numbered in the order a breadth-first search from the initial state
meets them, letters in alphabet order — the numbering of
:meth:`~langclass.core.automata.automaton.DFA.canonical`). In that numbering, reading the transition
table row by row (state 0 letter 0, state 0 letter 1, ...), new states appear in increasing order
and each state appears before its own row is read. :func:`bfs_tables` generates exactly those
tables, each once (those extending a prefix, for a shard of the census: :func:`table_prefixes`);
each accepting set that makes the DFA minimal gives one language, and two different (table,
accepting set) pairs never give the same language (the minimal DFA is unique up to isomorphism,
and the numbering removes the isomorphism).

Minimality is decided for all ``2^n`` accepting sets of a batch of tables at once
(:func:`minimal_masks`, numpy): states p, q are distinguishable iff they differ in acceptance or
some letter leads them to a distinguishable pair; the least fixpoint of that rule on all pairs is
the complement of the Myhill–Nerode equivalence, so the DFA is minimal iff every pair of distinct
states is distinguishable. :func:`is_minimal` (Moore's refinement, one DFA) is the reference the
tests compare it with, and :data:`PUBLISHED` the counts from the literature.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["PUBLISHED", "PUBLISHED_SOURCES", "bfs_tables", "table_prefixes", "is_minimal", "minimal_masks",
           "minimal_dfas"]

PUBLISHED: dict[int, dict[int, int]] = {
    1: {1: 2, 2: 4, 3: 12, 4: 30, 5: 78, 6: 180, 7: 432, 8: 978},
    2: {1: 2, 2: 24, 3: 1028, 4: 56014, 5: 3705306, 6: 286717796},
    3: {1: 2, 2: 112, 3: 41928, 4: 2006604},
}
"""``PUBLISHED[k][n]``: languages whose minimal complete DFA has exactly n states over k letters."""

PUBLISHED_SOURCES: dict[int, str] = {
    1: "OEIS A059412 (Domaratzki, Kisman & Shallit, On the number of distinct languages accepted by finite "
       "automata with n states, J. Automata, Languages and Combinatorics 7 (2002), §6, f_1(n))",
    2: "OEIS A129622 (Domaratzki, Kisman & Shallit 2002, §6, f_2(n); a(7) by Almeida, Moreira & Reis 2007)",
    3: "A. O'Dwyer, Counting distinct n-state DFAs (2024-07-27): at most 1, 2, 3, 4 states over 3 letters: "
       "2, 114, 42042, 2048646 languages (differences 2, 112, 41928, 2006604)",
}
"""Where each column of :data:`PUBLISHED` comes from."""


def bfs_tables(n: int, k: int, prefix: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """Every transition table (flattened, ``t[q*k + a]``) of an initially connected DFA with states
    ``0..n-1`` numbered breadth-first from state 0, among those that start with ``prefix``.

    Each table is produced once; with ``prefix=()`` these are all initially connected DFAs up to
    isomorphism (for k = 2: 1, 12, 216, 5248, 160675 tables, n = 1..5). A prefix that no table
    extends yields nothing."""
    total = n * k
    table = [0] * total
    seen = 1
    for p, v in enumerate(prefix):
        if p // k >= seen or v > seen or v >= n:
            return
        table[p] = v
        seen += v == seen
    if n - seen > total - len(prefix):
        return

    def rec(p: int, seen: int) -> Iterator[tuple[int, ...]]:
        if p == total:
            if seen == n:
                yield tuple(table)
            return
        if p // k >= seen:  # the row's state has not been reached: not initially connected
            return
        # states still to discover must each be found by some later position
        if n - seen > total - p:
            return
        for v in range(min(seen + 1, n)):
            table[p] = v
            yield from rec(p + 1, seen + (v == seen))

    yield from rec(len(prefix), seen)


def table_prefixes(n: int, k: int, depth: int) -> list[tuple[int, ...]]:
    """The prefixes of length ``depth`` of the tables of :func:`bfs_tables` (in their order)."""
    total = n * k
    out: list[tuple[int, ...]] = []
    cur = [0] * depth

    def rec(p: int, seen: int) -> None:
        if p == total:
            if seen == n:
                out.append(tuple(cur))
            return
        if p // k >= seen or n - seen > total - p:
            return
        if p == depth:
            out.append(tuple(cur))
            return
        for v in range(min(seen + 1, n)):
            cur[p] = v
            rec(p + 1, seen + (v == seen))

    rec(0, 1)
    return out


def is_minimal(table: tuple[int, ...], accepting: int, n: int, k: int) -> bool:
    """Moore's refinement on an initially connected DFA: minimal iff it ends with n classes.

    ``accepting`` is a bit mask (bit q = state q accepts). One DFA at a time (the reference that
    :func:`minimal_masks` is tested against)."""
    cls = [(accepting >> q) & 1 for q in range(n)]
    count = len(set(cls))
    while True:
        sig = [(cls[q], *(cls[table[q * k + a]] for a in range(k))) for q in range(n)]
        ids: dict[tuple[int, ...], int] = {}
        new = [ids.setdefault(s, len(ids)) for s in sig]
        if len(ids) == n:
            return True
        if len(ids) == count:
            return False
        cls, count = new, len(ids)


def minimal_masks(tables: np.ndarray, n: int, k: int) -> np.ndarray:
    """Which accepting sets make each table a minimal DFA, for a batch of tables at once.

    Args:
        tables: ``int [t, n*k]`` flattened transition tables (``tables[i, q*k + a]`` = q·a).
        n, k: states and letters.

    Returns:
        ``bool [t, 2^n]``: entry ``[i, m]`` is true iff table i with accepting set m (bit q = state
        q accepts) has n pairwise distinguishable states. Memory ``t · 2^n · n²`` bytes; the caller
        batches (:func:`run_shard` uses 2^20 / (2^n·n²) tables per batch).
    """
    t = tables.shape[0]
    masks = 1 << n
    if n == 1:
        return np.ones((t, masks), dtype=bool)
    T = tables.reshape(t, n, k).astype(np.int64)
    bits = (np.arange(masks)[:, None] >> np.arange(n)[None, :]) & 1  # [2^n, n]
    D = np.broadcast_to((bits[:, :, None] != bits[:, None, :]).reshape(1, masks, n * n), (t, masks, n * n)).copy()
    # pair (p, q) goes to (p·a, q·a): flattened index [t, k, n*n]
    succ = (T[:, :, None, :] * n + T[:, None, :, :]).reshape(t, n * n, k).transpose(0, 2, 1)
    for _ in range(n * n):
        new = D.copy()
        for a in range(k):
            new |= np.take_along_axis(D, np.broadcast_to(succ[:, a][:, None, :], D.shape), axis=2)
        if np.array_equal(new, D):
            break
        D = new
    off = ~np.eye(n, dtype=bool).ravel()
    return D[:, :, off].all(axis=2)


def minimal_dfas(n: int, k: int, *, initial_rejecting_only: bool = False) -> Iterator[tuple[tuple[int, ...], int]]:
    """``(table, accepting mask)`` of every minimal complete DFA with exactly n states over k
    letters, breadth-first numbered (each language once), one DFA at a time."""
    for table in bfs_tables(n, k):
        for mask in range(1 << n):
            if initial_rejecting_only and mask & 1:
                continue
            if is_minimal(table, mask, n, k):
                yield table, mask
