"""Graph routines in plain Python for small graphs, giving exactly the answers of scipy's csgraph calls.

On a graph of a few dozen edges — the transition graph of a small minimal DFA, the Cayley graphs of
a small monoid — setting up a ``scipy.sparse`` matrix and validating it for ``scipy.sparse.csgraph``
costs tens of microseconds per call, far more than the traversal itself; the analysis of one small
language makes dozens of such calls. The callers (:class:`langclass.core.algebra.classes.Context`,
:mod:`langclass.core.algebra.monoid.lookup`, :mod:`langclass.core.algebra.monoid.green`) use these functions for
graphs of at most :data:`SMALL_GRAPH_EDGES` edges and scipy above.

* :func:`strong_labels` — strongly connected components (R. Tarjan, "Depth-first search and linear
  graph algorithms", SIAM J. Comput. 1972), iterative; the callers only use the partition (or
  relabel it canonically), never scipy's label values.
* :func:`canonical` — class ids in order of first occurrence (as
  :func:`langclass.core.algebra.monoid.lookup.canonical_labels`).
* :func:`connected_labels` — connected components of an undirected graph (union–find).
* :func:`reachable` — the nodes reachable from some seeds in an implicit graph ``x → mul(x, g)`` (a
  right Cayley graph: the closure of the seeds under right multiplication by the generators).
* :func:`bfs_tree` — ``scipy.sparse.csgraph.breadth_first_order`` on the graph scipy builds from an
  edge list: the out-neighbours of a node are visited in increasing order, each once (scipy's CSR
  matrix sorts and merges duplicate edges), so the BFS order and the predecessors are scipy's.

``tests/test_smallgraph.py`` checks each against scipy on random graphs (hypothesis).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence

__all__ = ["SMALL_GRAPH_EDGES", "strong_labels", "canonical", "connected_labels", "bfs_tree", "reachable"]

SMALL_GRAPH_EDGES = 256
"""Graphs of at most this many edges go through the plain-Python routines of this module; larger
ones through ``scipy.sparse.csgraph`` (same answers; the choice is only about speed)."""


def strong_labels(succ: Sequence[Sequence[int]]) -> list[int]:
    """Strongly connected components of the graph with out-neighbour lists ``succ`` (nodes ``0..n-1``).

    Returns:
        ``n`` component ids in ``0..c-1``; a component gets its id when Tarjan's iterative DFS
        (roots in increasing order) completes it, so sink components come first. O(n + edges).
    """
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    comp = [-1] * n
    counter = 0
    c = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, iter(succ[root]))]
        while work:
            v, it = work[-1]
            descended = False
            for w in it:
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(succ[w])))
                    descended = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if descended:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = c
                    if w == v:
                        break
                c += 1
    return comp


def canonical(labels: Sequence[int]) -> list[int]:
    """Relabel classes ``0, 1, …`` in order of first occurrence (the class of item 0 is 0)."""
    ids: dict[int, int] = {}
    return [ids.setdefault(x, len(ids)) for x in labels]


def connected_labels(num_nodes: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Connected components of the undirected graph on ``0..num_nodes-1`` with ``edges``: the least
    node of its component for every node (union–find with path halving)."""
    parent = list(range(num_nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb
    return [find(x) for x in range(num_nodes)]


def bfs_tree(succ: Sequence[Sequence[int]], src: int) -> tuple[list[int], list[int]]:
    """Breadth-first search from ``src``, visiting the out-neighbours of each node in increasing
    order (as ``scipy.sparse.csgraph.breadth_first_order`` does on a CSR matrix with sorted indices).

    Args:
        succ: out-neighbour lists, each sorted increasingly without repeats.
        src: the start node.

    Returns:
        ``(order, pred)``: the nodes reached in BFS order (``src`` first) and the BFS-tree parent
        of every node (``-1`` for ``src`` and for nodes not reached).
    """
    pred = [-1] * len(succ)
    seen = [False] * len(succ)
    seen[src] = True
    order = [src]
    i = 0
    while i < len(order):
        p = order[i]
        i += 1
        for c in succ[p]:
            if not seen[c]:
                seen[c] = True
                pred[c] = p
                order.append(c)
    return order, pred


def reachable(seeds: Iterable[Hashable], gens: Iterable[Hashable], mul: Callable[[Hashable, Hashable], Hashable],
              max_size: int | None = None) -> set | None:
    """The nodes reachable from ``seeds`` along the edges ``x → mul(x, g)``, ``g`` in ``gens``
    (breadth first): with ``seeds = {1}`` the monoid the generators generate, with ``seeds = gens``
    the semigroup, with a subgroup as ``seeds`` (in a finite group) the subgroup generated by it and
    ``gens``. ``None`` as soon as more than ``max_size`` nodes are found."""
    gens = list(gens)
    found = set(seeds)
    frontier = list(found)
    while frontier:
        nxt = []
        for x in frontier:
            for g in gens:
                y = mul(x, g)
                if y not in found:
                    found.add(y)
                    nxt.append(y)
                    if max_size is not None and len(found) > max_size:
                        return None
        frontier = nxt
    return found
