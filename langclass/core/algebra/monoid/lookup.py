"""Transformation lookups and graph labels the monoid's closure and Green's relations use.

Three lookup structures map a transformation (an integer row ``[n]``) to its element id: a
direct-address table when n^n ≤ 2^24, packed int64 keys with binary search for n ≤ 15, and a dict
keyed by the row bytes otherwise. :func:`strong_components` and :func:`canonical_labels` give
deterministic class ids.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from langclass.core.automata.smallgraph import SMALL_GRAPH_EDGES, canonical, strong_labels

__all__ = ["canonical_labels", "scatter_first", "strong_components", "table_components", "BytesLookup", "PackedLookup", "DenseLookup"]


def scatter_first(table: np.ndarray, keys: np.ndarray, pos: np.ndarray) -> None:
    """``table[k] = min(table[k], least pos[i] with keys[i] = k)`` for increasing ``pos``, as
    ``np.minimum.at`` does, in O(len(keys)) vectorized steps: the positions are written from the
    last to the first (NumPy writes a 1-D index in order, so the first occurrence remains), then
    any key whose stored position is not its least (an order NumPy does not promise) is repaired
    with ``np.minimum.at`` on those keys alone."""
    keys, pos = keys[::-1], pos[::-1]
    before = table[keys]
    table[keys] = np.minimum(before, pos)
    late = pos < table[keys]
    if late.any():
        np.minimum.at(table, keys[late], pos[late])


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Relabel class ids ``0..c-1`` in order of first occurrence (so ids are deterministic).

    Args:
        labels: ``int`` array ``[m]`` of arbitrary class labels.

    Returns:
        ``int64`` array ``[m]``: equal labels stay equal; the class of element 0 is 0, the next new
        class met in element order is 1, and so on.
    """
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(np.int64)
    lab = labels.ravel().astype(np.int64, copy=False)
    m = lab.size
    lo, hi = int(lab.min()), int(lab.max())
    span = hi - lo + 1
    if span > 4 * m + 1024:  # sparse labels: sort
        _, first, inv = np.unique(lab, return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)
        return rank[inv.ravel()]
    # dense labels: first occurrence of each label in O(m + span), then rank the labels present by it
    off = lab - lo
    first = np.full(span, m, dtype=np.int64)
    scatter_first(first, off, np.arange(m, dtype=np.int64))
    present = np.flatnonzero(first < m)
    rank = np.empty(span, dtype=np.int64)
    rank[present[np.argsort(first[present], kind="stable")]] = np.arange(present.size)
    return rank[off]


def strong_components(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Strongly connected components of a directed graph given by edge arrays (scipy, Tarjan/Pearce;
    plain Python up to :data:`~langclass.core.automata.smallgraph.SMALL_GRAPH_EDGES` edges).

    Returns:
        ``int64`` array ``[num_nodes]`` of canonical component ids (see :func:`canonical_labels`).
    """
    if num_nodes == 0:
        return np.zeros(0, dtype=np.int64)
    if src.size <= SMALL_GRAPH_EDGES:
        succ: list[list[int]] = [[] for _ in range(num_nodes)]
        for a, b in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
            succ[a].append(b)
        return np.asarray(canonical(strong_labels(succ)), dtype=np.int64)
    g = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(num_nodes, num_nodes))
    _, labels = connected_components(g, directed=True, connection="strong")
    return canonical_labels(labels)


def table_components(table: np.ndarray) -> np.ndarray:
    """Strongly connected components of the graph x → table[x, a] (every node has out-degree k), as
    canonical component ids; the CSR matrix is built directly from the table (rows already sorted).

    Args:
        table: ``int`` array ``[m, k]`` with entries in ``0..m-1`` (a right or left Cayley graph).
    """
    m, k = table.shape
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if m * k <= SMALL_GRAPH_EDGES:
        return np.asarray(canonical(strong_labels(table.tolist())), dtype=np.int64)
    index_type = np.int32 if m * max(k, 1) < 2**31 else np.int64
    indptr = np.arange(0, m * k + 1, k, dtype=index_type) if k else np.zeros(m + 1, dtype=index_type)
    g = csr_matrix((np.ones(m * k, dtype=np.int8), table.ravel().astype(index_type), indptr), shape=(m, m))
    _, labels = connected_components(g, directed=True, connection="strong")
    return canonical_labels(labels)


class BytesLookup:
    """Transformation → element id through a dict keyed by the row bytes (any number of states)."""

    def __init__(self, index: dict[bytes, int], dtype) -> None:
        self.index = index
        self.dtype = dtype

    def get_many(self, rows: np.ndarray) -> np.ndarray:
        rows = np.ascontiguousarray(np.asarray(rows).astype(self.dtype))
        if rows.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        void = np.dtype((np.void, rows.shape[1] * rows.dtype.itemsize))
        get = self.index.get
        return np.fromiter((get(b, -1) for b in rows.view(void).ravel().tolist()), dtype=np.int64, count=rows.shape[0])


class PackedLookup:
    """Transformation → element id for n ≤ 15 states: rows packed into int64 keys (4 bits per state),
    looked up by binary search in the sorted keys."""

    def __init__(self, keys: np.ndarray, ids: np.ndarray, n: int) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.ids = ids[order]
        self.n = n

    @staticmethod
    def pack(rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        shifts = (4 * np.arange(rows.shape[1], dtype=np.int64))
        return (rows << shifts).sum(axis=1) if rows.shape[1] else np.zeros(rows.shape[0], dtype=np.int64)

    def get_many(self, rows: np.ndarray) -> np.ndarray:
        k = self.pack(rows)
        pos = np.searchsorted(self.keys, k)
        pos_c = np.minimum(pos, self.keys.size - 1)
        hit = self.keys[pos_c] == k
        return np.where(hit, self.ids[pos_c], -1).astype(np.int64)


class DenseLookup:
    """Transformation → element id for n^n ≤ 2^24: a direct-address table indexed by Σ x[q]·n^q.

    The table holds id + 1 (0 = absent) in int32 and starts as ``np.zeros``: fresh zero pages are
    mapped lazily by the operating system, so only the pages of stored codes are ever touched — an
    8-state DFA with a 40-element monoid costs a few pages, not the 2^24 × 8 bytes (134 MB written)
    of a table filled with -1; a full T8 (every code stored) costs 2^24 × 4 bytes.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.weights = np.asarray([n ** q for q in range(n)], dtype=np.int64)
        self._shifted = np.zeros(max(1, n ** n), dtype=np.int32)

    def code(self, rows: np.ndarray) -> np.ndarray:
        """The codes Σ x[q]·n^q of ``rows`` ([m, n] transformations) as int64, shape [m] (Horner's
        rule on the columns in int32: every code is below n^n ≤ 2^24)."""
        rows = np.asarray(rows)
        m, n = rows.shape
        if n == 0 or m == 0:
            return np.zeros(m, dtype=np.int64)
        acc = rows[:, n - 1].astype(np.int32)
        for q in range(n - 2, -1, -1):
            acc *= n
            acc += rows[:, q]
        return acc.astype(np.int64)

    def insert_new(self, codes: np.ndarray, start: int) -> np.ndarray:
        """Give the distinct codes among ``codes`` (none stored yet) the ids start, start + 1, … in
        the order of their first occurrence, store them, and return the positions of those first
        occurrences (increasing), without sorting (:func:`scatter_first` on the table's own slots,
        which hold 0 for every absent code; O(len(codes)))."""
        codes = np.asarray(codes, dtype=np.int64)
        pos = np.arange(codes.size, dtype=np.int32)
        self._shifted[codes] = 2 ** 31 - 1  # no code is stored yet: mark, then keep the least position
        scatter_first(self._shifted, codes, pos)
        first = np.flatnonzero(self._shifted[codes] == pos)
        self._shifted[codes[first]] = np.arange(start + 1, start + 1 + first.size, dtype=np.int32)
        return first

    def ids(self, codes: np.ndarray) -> np.ndarray:
        """The element ids stored under ``codes`` (int64, -1 where none is)."""
        return self._shifted[codes].astype(np.int64) - 1

    def store(self, codes: np.ndarray, ids: np.ndarray) -> None:
        """Store ``ids`` (< 2^24) under ``codes`` (same shape)."""
        self._shifted[codes] = np.asarray(ids, dtype=np.int64) + 1

    def get_many(self, rows: np.ndarray) -> np.ndarray:
        return self.ids(self.code(rows))
