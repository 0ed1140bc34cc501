"""Groups in the monoid: maximal subgroups H_e as permutation groups on im e, and their structure.

The H-class of an idempotent e is a group acting faithfully on the image of e (J. A. Green, "On the
structure of semigroups", 1951; J.-E. Pin, *Mathematical Foundations of Automata Theory*, ch. V);
its structure (order, abelian, cyclic, solvable) is computed on the listed elements of H_e
(:class:`.permgroup.PermGroup`: products by row gathers, derived series by normal closures; the
order theorems of Feit–Thompson and Burnside first). Solvability
decides ACC⁰ versus NC¹-completeness for languages outside AC⁰ (D. A. M. Barrington, "Bounded-width
polynomial-size branching programs recognize exactly those languages in NC¹", 1989; Barrington &
Thérien, "Finite monoids and the fine structure of NC¹", 1988).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from langclass.core.automata.smallgraph import reachable
from .permgroup import PermGroup, cycle_lcm, is_even, prime_factors, solvable_by_order

__all__ = ["GroupInfo", "GroupsMixin", "nontrivial_groups", "group_label", "group_name", "center_is_trivial", "MAX_GROUPS_REPORTED"]

MAX_GROUPS_REPORTED = 20
"""Groups listed in a monoid summary (largest first)."""

SMALL_GROUP_ORDER = 60
"""Maximal subgroups of fewer elements are analysed in plain Python (``GroupsMixin._small_subgroup``),
larger ones with numpy (:class:`.permgroup.PermGroup`); a test checks both give the same answer."""


@dataclass(frozen=True)
class GroupInfo:
    """A finite group found in the monoid (a maximal subgroup H_e, or a subgroup of the stable semigroup).

    Attributes:
        idempotent: element id of its identity e.
        order: |G|.
        degree: |im e|, the number of points it permutes.
        name: a structural name when it is certain (``"Z2"``, ``"S5"``, ``"A5"``, ``"trivial"``),
            otherwise ``"group of order N"``. Beyond the S_d/A_d of the moved points: a non-solvable
            group of order 60 is A5, and one of order 120 with a trivial centre is S5 (the other
            two non-solvable groups of that order, SL(2,5) and A5×Z2, have a centre of order 2) —
            so S5 is named also when it acts on six points (PGL(2,5)).
        abelian, cyclic, solvable: properties of the group (:class:`.permgroup.PermGroup`).
        generators: element ids of a generating set (shortlex-least elements, added greedily).
        generator_words: the shortlex-least words of the generators.
        permutations: each generator as a permutation of ``points`` (image indices, 0-based).
        points: the states of im e, in increasing order.
    """

    idempotent: int
    order: int
    degree: int
    name: str
    abelian: bool
    cyclic: bool
    solvable: bool
    generators: tuple[int, ...]
    generator_words: tuple[tuple[str, ...], ...]
    permutations: tuple[tuple[int, ...], ...]
    points: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "idempotent": self.idempotent,
            "order": self.order,
            "degree": self.degree,
            "name": self.name,
            "abelian": self.abelian,
            "cyclic": self.cyclic,
            "solvable": self.solvable,
            "generators": list(self.generators),
            "generator_words": [list(w) for w in self.generator_words],
            "permutations": [list(p) for p in self.permutations],
            "points": list(self.points),
        }


def group_label(name: str, order: int) -> str:
    """``"group S5 of order 120"`` for a named group, the name itself when it already states the
    order (``"group of order 120"``, ``"abelian group of order 4"``) — never the order twice.

    >>> group_label("S5", 120), group_label("group of order 120", 120)
    ('group S5 of order 120', 'group of order 120')
    """
    return name if "of order" in name else f"group {name} of order {order}"


def center_is_trivial(G: PermGroup, gens: Any) -> bool:
    """Whether only the identity of ``G`` commutes with every generator in ``gens``."""
    everyone = np.arange(G.perms.shape[0], dtype=np.int64)
    central = np.ones(everyone.size, dtype=bool)
    for g in gens:
        gg = np.full(everyone.size, int(g), dtype=np.int64)
        central &= G.mul(everyone, gg) == G.mul(gg, everyone)
    return int(central.sum()) == 1


def group_name(order: int, perms: list[tuple[int, ...]], abelian: bool, cyclic: bool, solvable: bool,
                center_is_trivial: Any) -> str:
    """The name of :attr:`GroupInfo.name` from the group's order, its generators' permutations and
    properties (``center_is_trivial``: a callable, asked only for a non-solvable group of order 120)."""
    support = sorted({i for p in perms for i, v in enumerate(p) if i != v})
    d = len(support)
    if cyclic:
        return f"Z{order}"
    if order == math.factorial(d):
        return f"S{d}"
    if d >= 3 and order == math.factorial(d) // 2 and all(is_even(p) for p in perms):
        return f"A{d}"
    if abelian:
        return f"abelian group of order {order}"
    if not solvable and order == 60:
        return "A5"  # every non-solvable group of order 60 is A5
    if not solvable and order == 120 and center_is_trivial():
        return "S5"  # non-solvable of order 120: S5, SL(2,5), A5×Z2 — only S5 has a trivial centre
    return f"group of order {order}"


class GroupsMixin:
    """Maximal subgroups of a :class:`~langclass.core.algebra.monoid.TransitionMonoid` (uses its Green's relations)."""

    def maximal_subgroup(self, e: int, *, within: np.ndarray | None = None) -> GroupInfo:
        """The maximal subgroup H_e at an idempotent e, acting faithfully on im e.

        Args:
            e: an idempotent.
            within: optional boolean mask ``[m]`` to intersect with (e.g. :attr:`stable` for the
                maximal subgroup H_e ∩ T of the stable semigroup).

        Raises:
            ValueError: e is not idempotent.
        """
        e = int(e)
        if not self.idempotent[e]:
            raise ValueError(f"element {e} is not idempotent")
        if within is not None:
            H = self.green["H"]
            if np.asarray(within, dtype=bool)[H == H[e]].all():
                within = None  # H_e ⊆ within: the same group
        key = (e, None if within is None else np.packbits(np.asarray(within, dtype=bool)).tobytes())
        cache = self.__dict__.setdefault("_group_cache", {})
        if key not in cache:
            cache[key] = self._maximal_subgroup(e, within)
        return cache[key]

    def _maximal_subgroup(self, e: int, within: np.ndarray | None, *, small_path: bool = True,
                          cyclic_shortcut: bool = True) -> GroupInfo:
        H = self.green["H"]
        members = np.flatnonzero(H == H[e])
        if within is not None:
            members = members[within[members]]
        if small_path and members.size < SMALL_GROUP_ORDER:
            return self._small_subgroup(e, members)
        points = np.unique(self.elements[e]).astype(np.int64)
        pos = np.full(self.num_states, -1, dtype=np.int64)
        pos[points] = np.arange(points.size)
        degree = int(points.size)
        if members.size <= 1:
            return GroupInfo(e, 1, degree, "trivial", True, True, True, (), (), (), tuple(int(p) for p in points))
        first = self._cyclic_by_first_candidate(e, members, pos, points) if cyclic_shortcut else None
        if first is not None:
            return first
        G = PermGroup(pos[self.elements[members][:, points]])
        assert members[G.identity] == e, "H_e is a group with identity e acting faithfully on im e"
        gens = G.greedy_generators(np.argsort(self.lengths[members], kind="stable"))
        order = int(members.size)
        perms = [tuple(int(v) for v in G.perms[i]) for i in gens]
        abelian = G.commute(gens)
        cyclic = abelian and (len(gens) == 1 or G.is_cyclic_abelian())  # one generator: cyclic
        solvable = abelian or solvable_by_order(order) or G.is_solvable(gens)
        name = group_name(order, perms, abelian, cyclic, solvable, lambda: center_is_trivial(G, gens))
        hs = [int(members[i]) for i in gens]
        return GroupInfo(e, order, degree, name, abelian, cyclic, solvable, tuple(hs),
                         tuple(self.word(g) for g in hs), tuple(perms), tuple(int(p) for p in points))

    def _cyclic_by_first_candidate(self, e: int, members: np.ndarray, pos: np.ndarray,
                                   points: np.ndarray) -> GroupInfo | None:
        """The :class:`GroupInfo` of H_e when its shortlex-first element other than e has order |H_e|
        (then H_e is cyclic and the greedy generators are that element alone), else ``None`` — without
        building the group's multiplication on all |H_e| permutations."""
        order = int(members.size)
        cand = members[np.argsort(self.lengths[members], kind="stable")]
        g = int(cand[0]) if int(cand[0]) != e else int(cand[1])
        perm = pos[self.elements[g][points]]
        period = cycle_lcm(perm, range(perm.size))
        if period != order:
            return None
        perms = [tuple(int(v) for v in perm)]
        name = group_name(order, perms, True, True, True, lambda: order == 1)
        return GroupInfo(e, order, int(points.size), name, True, True, True, (g,), (self.word(g),), tuple(perms),
                         tuple(int(p) for p in points))

    def _small_subgroup(self, e: int, members: np.ndarray) -> GroupInfo:
        """:meth:`_maximal_subgroup` for fewer than :data:`SMALL_GROUP_ORDER` members, in plain
        Python (permutations as tuples, a dict index): the same :class:`GroupInfo` — generators
        picked greedily in shortlex order, abelian by pairwise commuting generators, cyclic by the
        exponent — without numpy's per-call overhead, which dominates on a handful of permutations.
        Every group of order < 60 is solvable (A5 is the smallest non-solvable group)."""
        points = sorted(set(self.elements[e].tolist()))
        degree = len(points)
        if members.size <= 1:
            return GroupInfo(e, 1, degree, "trivial", True, True, True, (), (), (), tuple(points))
        pos = {p: i for i, p in enumerate(points)}
        perms = [tuple(pos[v] for v in row) for row in self.elements[members][:, points].tolist()]
        index = {p: i for i, p in enumerate(perms)}
        identity = index[tuple(range(degree))]
        assert int(members[identity]) == e, "H_e is a group with identity e acting faithfully on im e"

        def mul(a: int, b: int) -> int:  # a, then b
            pb = perms[b]
            return index[tuple(pb[x] for x in perms[a])]

        order = len(perms)
        by_length = np.argsort(self.lengths[members], kind="stable").tolist()
        if prime_factors(order) == [order]:  # cyclic of prime order: any element but e generates it, the shortlex-first one is taken
            g = next(i for i in by_length if i != identity)
            name = group_name(order, [perms[g]], True, True, True, lambda: False)
            h = int(members[g])
            return GroupInfo(e, order, degree, name, True, True, True, (h,), (self.word(h),), (perms[g],), tuple(points))
        mask = {identity}
        gens: list[int] = []
        for i in by_length:
            if len(mask) == order:
                break
            if i in mask:
                continue
            gens.append(i)
            mask = reachable(mask, gens, mul)
        assert len(mask) == order, "the candidates do not generate the group"
        abelian = all(mul(a, b) == mul(b, a) for a in gens for b in gens)

        # a finite abelian group is cyclic iff some element's order (the lcm of its cycle lengths) is the group's order
        cyclic = abelian and any(cycle_lcm(np.asarray(p), range(degree)) == order for p in perms)
        gen_perms = [perms[i] for i in gens]
        name = group_name(order, gen_perms, abelian, cyclic, True, lambda: False)
        hs = [int(members[i]) for i in gens]
        return GroupInfo(e, order, degree, name, abelian, cyclic, True, tuple(hs),
                         tuple(self.word(g) for g in hs), tuple(gen_perms), tuple(points))

    @cached_property
    def maximal_subgroups(self) -> list[GroupInfo]:
        """One maximal subgroup per regular D-class (all of a D-class's are isomorphic), first idempotent."""
        J = self.green["J"]
        out = []
        for j in self.regular_d_classes:
            e = int(np.flatnonzero((J == j) & self.idempotent)[0])
            out.append(self.maximal_subgroup(e))
        return out


def nontrivial_groups(M, *, within: np.ndarray | None = None, limit: int = MAX_GROUPS_REPORTED) -> list[GroupInfo]:
    """Non-trivial maximal subgroups, one per regular D-class (largest first), optionally intersected
    with a subsemigroup (``within``: boolean mask ``[m]``, e.g. the stable semigroup).

    Args:
        M: a :class:`~langclass.core.algebra.monoid.TransitionMonoid`.
        within: optional mask to intersect each H-class with.
        limit: at most this many groups (0 = all).
    """
    g = M.green
    J, H = g["J"], g["H"]
    hsize = np.bincount(H)
    cand = M.idempotent & (hsize[H] > 1)
    if within is not None:
        cand &= within
    out: list[GroupInfo] = []
    seen: set[int] = set()
    for e in np.flatnonzero(cand).tolist():
        if J[e] in seen:
            continue
        seen.add(int(J[e]))
        gi = M.maximal_subgroup(e, within=within)
        if gi.order > 1:
            out.append(gi)
    out.sort(key=lambda gi: -gi.order)
    return out[:limit] if limit else out
