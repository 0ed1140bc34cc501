"""Residue graphs of a transition monoid: the MOD_m-kernel K_m = η((Σ^m)*) and its Green's relations.

For a modulus m the residue graph has the nodes (x, r) ∈ M × Z_m and the edges (x, r) → (x·a, r + 1
mod m) (node id x·m + r); the nodes (x, 0) reachable from (1, 0) are K_m, and for x, y ∈ K_m,
x·K_m = y·K_m iff (x, 0) and (y, 0) share a strong component (dually on the left Cayley graph). This
module builds those graphs — on all m·|M| nodes, or, for m dividing the period of the levels
η(Σ^j), on the reachable nodes alone — with their breadth-first trees (words of length ≡ 0 mod m)
and components. :mod:`langclass.core.algebra.orbits` proves why and uses them for the C-orbits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from langclass.core.automata.smallgraph import SMALL_GRAPH_EDGES, strong_labels

__all__ = ["Kernel", "StableKernel", "divisors", "residue_table", "reachable_kernel", "reachable_left_components",
           "bfs_and_components", "positions", "csr", "path_letters"]


@dataclass(frozen=True)
class Kernel:
    """The MOD_m-kernel K_m = η((Σ^m)*) with its residue-graph facts, for one modulus m.

    Attributes:
        modulus: m ≥ 1.
        mask: boolean ``[|M|]``: x ∈ K_m.
        pred: ``int64 [|M|·m]``: breadth-first-tree parent of node x·m + r from (1, 0) (``-1`` at
            the root and at unreached nodes); with ``nodes``, indexed by position in ``nodes``.
        table: ``[|M|·m, |Σ|]``: the right residue graph (node x·m + r → (x·a)·m + r+1 mod m); with
            ``nodes``, ``[len(nodes), |Σ|]`` on positions in ``nodes``.
        right_scc / left_scc: ``int64 [|M|]``: component of (x, 0) in the right / left residue
            graph (x R y in K_m ⇔ equal right_scc, for x, y ∈ K_m; dually L; ``left_scc`` is
            computed only when asked for).
        letter: the letter of each node's tree edge when known (K_1: the monoid's own BFS tree; a
            graph on ``nodes``), else ``None`` (read off ``table``).
        nodes: ``None`` (the graph has all |M|·m nodes), or the sorted ids x·m + r of the nodes
            reachable from (1, 0) when the graph was built on them alone (node 0 first).
    """

    modulus: int
    mask: np.ndarray
    pred: np.ndarray
    table: np.ndarray
    right_scc: np.ndarray
    left_scc: np.ndarray | None
    letter: np.ndarray | None = None
    nodes: np.ndarray | None = None

    def word(self, x: int) -> tuple[int, ...]:
        """Letter indices of a shortest word of length ≡ 0 (mod m) whose image is x.

        Raises:
            ValueError: x is not in K_m.
        """
        x = int(x)
        if not self.mask[x]:
            raise ValueError(f"element {x} is not in the MOD_{self.modulus}-kernel")
        node = x * self.modulus
        if self.nodes is not None:
            node = int(np.searchsorted(self.nodes, node))
        out: list[int] = []
        while node != 0:
            u = int(self.pred[node])
            out.append(int(self.letter[node]) if self.letter is not None else self.table[u].tolist().index(node))
            node = u
        out.reverse()
        return tuple(out)


@dataclass(frozen=True)
class StableKernel(Kernel):
    """K_s = {1} ∪ η(Σ^s) at the stable modulus s (η(Σ^{js}) = η(Σ^s) for j ≥ 1), read off the stable
    semigroup without a residue graph: :meth:`word` gives a word of length exactly s (or ε for the
    identity outside η(Σ^s)). Its Green's relations are not computed (``right_scc`` is empty)."""

    monoid: Any = None

    def word(self, x: int) -> tuple[int, ...]:
        x = int(x)
        if not self.mask[x]:
            raise ValueError(f"element {x} is not in the MOD_{self.modulus}-kernel")
        M = self.monoid
        if not M.stable[x]:
            return ()  # the identity, with the empty word
        return tuple(M.dfa.encode(M.stable_word(x)))


def reachable_kernel(M: Any, m: int) -> Kernel:
    """K_m for m dividing the level period p, on the nodes {(1, 0)} ∪ {(x, j mod m) : x ∈ η(Σ^j),
    j < i + p} (:mod:`langclass.core.algebra.orbits`): every node reachable from (1, 0), from the
    levels the monoid computed (:attr:`~langclass.core.algebra.monoid.TransitionMonoid.level_members`).

    Raises:
        AssertionError: the nodes are not closed under the letters (m does not divide p).
    """
    size = M.size
    J, X = M.level_members
    nodes = np.unique(np.concatenate((np.zeros(1, dtype=np.int64), X * m + J % m)))
    x, r = nodes // m, nodes % m
    succ = M.right[x].astype(np.int64) * m + ((r + 1) % m)[:, None]  # [V, |Σ|]
    tab = positions(nodes, succ)
    pred, rscc = bfs_and_components(tab)
    idx = np.flatnonzero(pred >= 0)
    letter = np.full(nodes.size, -1, dtype=np.int64)
    letter[idx] = (tab[pred[idx]] == idx[:, None]).argmax(axis=1)
    at0 = r == 0
    mask = np.zeros(size, dtype=bool)
    mask[x[at0]] = True
    lab = -1 - np.arange(size, dtype=np.int64)  # distinct labels outside K_m (never compared)
    lab[x[at0]] = rscc[at0]
    return Kernel(m, mask, pred, tab, lab, None, letter, nodes)


def reachable_left_components(M: Any, ker: Kernel) -> Kernel:
    """``ker`` (built by :func:`reachable_kernel`) with ``left_scc``: the components of the left
    residue graph (x, r) → (a·x, r + 1) on the same nodes (they are closed under left letters too)."""
    m = ker.modulus
    x, r = ker.nodes // m, ker.nodes % m
    succ = M.left[x].astype(np.int64) * m + ((r + 1) % m)[:, None]
    _, lscc = bfs_and_components(positions(ker.nodes, succ), bfs=False)
    lab = -1 - np.arange(M.size, dtype=np.int64)
    at0 = r == 0
    lab[x[at0]] = lscc[at0]
    return Kernel(ker.modulus, ker.mask, ker.pred, ker.table, ker.right_scc, lab, ker.letter, ker.nodes)


def residue_table(cayley: np.ndarray, modulus: int) -> np.ndarray:
    """``[|M|·m, |Σ|]``: node x·m + r → (cayley[x, a])·m + (r+1 mod m)."""
    m, k = cayley.shape
    dt = np.int32 if m * modulus < 2**31 else np.int64
    nxt_r = ((np.arange(modulus) + 1) % modulus).astype(dt)  # [mod]
    tab = cayley.astype(dt)[:, None, :] * dt(modulus) + nxt_r[None, :, None]  # [m, mod, k]
    return tab.reshape(m * modulus, k)


def divisors(n: int) -> list[int]:
    """The divisors of n ≥ 1, increasing (trial division up to √n)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def csr(tab: np.ndarray) -> csr_matrix:
    """The graph node → tab[node, a] as a sparse matrix."""
    n, k = tab.shape
    index_type = np.int32 if n * max(k, 1) < 2**31 else np.int64
    return csr_matrix((np.ones(n * k, dtype=np.int8), tab.ravel().astype(index_type),
                       np.arange(0, n * k + 1, k, dtype=index_type)), shape=(n, n))


def path_letters(tab: np.ndarray, src: int, dst: int, graph: csr_matrix | None = None) -> list[int]:
    """Letter indices of a shortest path src → dst in the graph node → tab[node, a] (dst reachable;
    ``graph``: the same graph as built by :func:`csr`, when the caller keeps it)."""
    g = graph if graph is not None else csr(tab)
    _, pred = breadth_first_order(g, src, directed=True, return_predecessors=True)
    out: list[int] = []
    v = dst
    while v != src:
        u = int(pred[v])
        assert u >= 0, "the target is reachable"
        out.append(int(np.flatnonzero(tab[u] == v)[0]))
        v = u
    out.reverse()
    return out


def positions(nodes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions in the sorted ``nodes`` of ``ids`` (all of which must be among them)."""
    pos = np.searchsorted(nodes, ids)
    if not (pos < nodes.size).all() or not (nodes[np.minimum(pos, nodes.size - 1)] == ids).all():
        raise AssertionError("the reachable residue nodes are not closed under the letters")
    return pos


def bfs_and_components(tab: np.ndarray, *, bfs: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
    """``(pred, labels)`` of the graph node → tab[node, a]: the breadth-first-tree parents from node 0
    (``-1`` at the root and unreached nodes; ``None`` without ``bfs``) and strong-component labels.
    Plain Python up to :data:`~langclass.core.automata.smallgraph.SMALL_GRAPH_EDGES` edges, scipy above."""
    n, k = tab.shape
    if n * k <= SMALL_GRAPH_EDGES:
        tl = tab.tolist()
        labels = np.asarray(strong_labels(tl), dtype=np.int64)
        if not bfs:
            return None, labels
        pred = [-1] * n
        seen = [False] * n
        seen[0] = True
        dq = deque([0])
        while dq:
            u = dq.popleft()
            for v in tl[u]:
                if not seen[v]:
                    seen[v] = True
                    pred[v] = u
                    dq.append(v)
        return np.asarray(pred, dtype=np.int64), labels
    index_type = np.int32 if n * max(k, 1) < 2**31 else np.int64
    indptr = np.arange(0, n * k + 1, k, dtype=index_type)
    g = csr_matrix((np.ones(n * k, dtype=np.int8), tab.ravel().astype(index_type), indptr), shape=(n, n))
    _, labels = connected_components(g, directed=True, connection="strong")
    if not bfs:
        return None, labels.astype(np.int64)
    _, p = breadth_first_order(g, 0, directed=True, return_predecessors=True)
    p = p.astype(np.int64)
    p[p < 0] = -1
    return p, labels.astype(np.int64)
