"""Balanced morphisms of a strongly connected component, iterated to a fixed point (exact, polynomial).

For one strongly connected component S of a complete DFA, an *internal edge* is a transition
p -a-> q with p, q ∈ S. Give each internal edge a *label* λ(e). A linear map f: labels → Q is
*balanced* when it sums to 0 along every cycle of S; equivalently f∘λ is a potential difference:
there is π: S → Q with π(q) − π(p) = f(λ(e)) for every internal edge e = p -a-> q. The balanced maps
form the null space of the Parikh (label-count) vectors of the cycles of S, and the cycle space of a
strongly connected graph is spanned by the *fundamental cycles* of any spanning tree (one per
non-tree edge: tree path to p, the edge, tree path back from q) — so one linear system of
|E_S| − |S| + 1 rows, no enumeration of simple cycles. A basis f_1..f_d of that null space gives
the vector potential π = (π_1..π_d): S → Q^d, fixed by π(root) = 0.

The iteration (*Algebraic Decomposition Theory for Transformer Length Generalization*, Yang et al.
2026, the decision procedure of C-RASP ∩ regular, as its public decider does it): level 1 labels
every internal edge by its letter; level k+1 labels the edge p -a-> q by (the class of p under the
potentials of levels 1..k, a). Two states are *separated* once some level's potentials differ.
The partition of S refines at every level until one level does not split any class; since the
labels of the next level depend only on that partition, it is then a fixed point (at most |S|
levels). The iteration also stops once every class is a single state (nothing is left to split).

Arithmetic is exact: the null space is computed by Gauss–Jordan elimination with integral rows
(fractions only for the final basis vectors), each basis vector scaled to a primitive integer
vector, so every morphism value and every potential is an integer.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from fractions import Fraction

from langclass.core.base.errors import LimitExceeded

__all__ = ["Level", "ComponentFixpoint", "component_fixpoint", "nullspace", "CRASP_WORK"]

CRASP_WORK = 20_000_000
"""Budget of the eliminations of one decision (rows × columns × pivots summed over the levels)."""


@dataclass(frozen=True)
class Level:
    """One level of the iteration on a component (states in the component's order).

    Attributes:
        labels: the labels of this level, each ``(class of the source before this level, letter index)``
            (level 1: every class is 0, so a label is a letter).
        morphism: ``[label][coordinate]`` integer values of the basis of the balanced morphisms.
        potentials: ``[state][coordinate]`` integer potentials, 0 at the component's first state.
        classes: class id of every state after this level (ids numbered by first appearance).
    """

    labels: tuple[tuple[int, int], ...]
    morphism: tuple[tuple[int, ...], ...]
    potentials: tuple[tuple[int, ...], ...]
    classes: tuple[int, ...]


@dataclass(frozen=True)
class ComponentFixpoint:
    """The fixed point on one component: ``states`` ascending; ``levels`` in order, the last one the
    first that splits no class or leaves every class a single state (``classes`` of the last level =
    the final partition)."""

    states: tuple[int, ...]
    levels: tuple[Level, ...]

    @property
    def classes(self) -> tuple[int, ...]:
        return self.levels[-1].classes


def nullspace(rows: list[list[int]], ncols: int, budget: list[int] | None = None) -> list[tuple[int, ...]]:
    """A basis of ``{x ∈ Q^ncols : R x = 0}`` as primitive integer vectors (exact Gauss–Jordan over Q).

    The elimination keeps every row integral (a row operation p·r_i − f·r_piv followed by division by
    the row's gcd is an invertible rational row operation), so it is exact without fractions. One basis
    vector per free column of the reduced echelon form, in column order (deterministic).
    ``budget`` (a one-element list) is decreased by the elimination's work.

    Raises:
        LimitExceeded: ``crasp_work`` when the budget runs out.
    """
    m = [list(r) for r in rows if any(r)]
    pivots: list[int] = []
    r = 0
    for c in range(ncols):
        if r >= len(m):
            break
        piv = next((i for i in range(r, len(m)) if m[i][c] != 0), None)
        if piv is None:
            continue
        m[r], m[piv] = m[piv], m[r]
        pr = m[r]
        p = pr[c]
        for i in range(len(m)):
            f = m[i][c]
            if i != r and f != 0:
                row = [p * x - f * y for x, y in zip(m[i], pr)]
                g = 0
                for x in row:
                    g = math.gcd(g, x)
                m[i] = [x // g for x in row] if g > 1 else row
        if budget is not None:
            budget[0] -= len(m) * ncols
            if budget[0] < 0:
                raise LimitExceeded("crasp_work", CRASP_WORK,
                                    f"crasp_work={CRASP_WORK} exceeded while eliminating the cycle equations")
        pivots.append(c)
        r += 1
    piv_set = set(pivots)
    basis = []
    for fc in (c for c in range(ncols) if c not in piv_set):
        # x[fc] = 1, x[pc] = -m[i][fc] / m[i][pc]; scaled by the lcm of the pivots' denominators
        v = [Fraction(0)] * ncols
        v[fc] = Fraction(1)
        for i, pc in enumerate(pivots):
            v[pc] = Fraction(-m[i][fc], m[i][pc])
        den = 1
        for x in v:
            den = den * x.denominator // math.gcd(den, x.denominator)
        ints = [int(x * den) for x in v]
        g = 0
        for x in ints:
            g = math.gcd(g, abs(x))
        basis.append(tuple(x // g for x in ints))
    return basis


def _number(keys: list) -> tuple[int, ...]:
    """Class ids by first appearance of equal keys."""
    ids: dict = {}
    return tuple(ids.setdefault(k, len(ids)) for k in keys)


def component_fixpoint(t: list[list[int]], states: tuple[int, ...], budget: list[int] | None = None) -> ComponentFixpoint:
    """Iterate the balanced morphisms of one strongly connected component to the fixed point.

    Args:
        t: the transition table ``t[q][a]`` of a complete DFA.
        states: the component's states, ascending.
        budget: optional one-element work budget shared by a whole decision (see :data:`CRASP_WORK`).

    Returns:
        the :class:`ComponentFixpoint` (O(|S|) levels, each one null space of |E_S| − |S| + 1 rows).
    """
    pos = {q: i for i, q in enumerate(states)}
    k = len(t[0]) if t else 0
    if len(states) == 1:  # one state: every internal edge is a self-loop, a cycle, so no balanced morphism but 0
        q = states[0]
        labels = tuple((0, a) for a in range(k) if t[q][a] == q)
        return ComponentFixpoint(states, (Level(labels, ((),) * len(labels), ((),), (0,)),))
    edges = [(pos[p], a, pos[t[p][a]]) for p in states for a in range(k) if t[p][a] in pos]  # internal edges
    # spanning tree (BFS from the first state, edges in (state, letter) order)
    parent_edge: list[int | None] = [None] * len(states)
    seen = [False] * len(states)
    seen[0] = True
    order = [0]
    out: list[list[int]] = [[] for _ in states]
    for ei, (p, _, _) in enumerate(edges):
        out[p].append(ei)
    dq = deque([0])
    tree = set()
    while dq:
        p = dq.popleft()
        for ei in out[p]:
            q = edges[ei][2]
            if not seen[q]:
                seen[q] = True
                parent_edge[q] = ei
                tree.add(ei)
                order.append(q)
                dq.append(q)
    classes: tuple[int, ...] = (0,) * len(states)
    levels: list[Level] = []
    while True:
        if budget is not None:
            budget[0] -= len(edges) * (len(set(classes)) * k + 1)
            if budget[0] < 0:
                raise LimitExceeded("crasp_work", CRASP_WORK, f"crasp_work={CRASP_WORK} exceeded by a component of "
                                    f"{len(states)} states")
        lab_of_edge = [(classes[p], a) for p, a, _ in edges]
        labels = list(dict.fromkeys(lab_of_edge))
        li = {lb: i for i, lb in enumerate(labels)}
        # tree-path label counts N_v (root: zero vector)
        path: list[list[int]] = [[0] * len(labels) for _ in states]
        for v in order[1:]:
            ei = parent_edge[v]
            assert ei is not None
            row = list(path[edges[ei][0]])
            row[li[lab_of_edge[ei]]] += 1
            path[v] = row
        cycles = []
        for ei, (p, _, q) in enumerate(edges):
            if ei in tree:
                continue
            row = [x - y for x, y in zip(path[p], path[q])]
            row[li[lab_of_edge[ei]]] += 1
            cycles.append(row)
        basis = nullspace(cycles, len(labels), budget)
        morphism = tuple(tuple(b[i] for b in basis) for i in range(len(labels)))
        potentials = tuple(tuple(sum(c * x for c, x in zip(path[v], b)) for b in basis) for v in range(len(states)))
        new = _number([(classes[v], potentials[v]) for v in range(len(states))])
        levels.append(Level(tuple(labels), morphism, potentials, new))
        if len(set(new)) in (len(set(classes)), len(states)):  # no split, or nothing left to split
            return ComponentFixpoint(states, tuple(levels))
        classes = new
