"""The fast algebraic paths of the monoid against the algorithms they replace, on random automata:
Green's relations from kernels and images (vs strong components of both Cayley graphs throughout),
group structure on the listed elements (vs sympy's Schreier–Sims), stable words by candidate
predecessors (vs the reversed Cayley graph) and the stable-semigroup levels by new elements only
(vs the plain level-by-level product)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Limits
from langclass.core.algebra.monoid import stable as stable_mod
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.algebra.monoid.lookup import canonical_labels, table_components
from langclass.core.algebra.monoid.permgroup import PermGroup, is_even, prime_factors, solvable_by_order


def _random_monoids(seed: int, count: int, n_max: int = 7, max_size: int = 20_000):
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        n, k = rng.randint(1, n_max), rng.randint(1, 3)
        table = [[rng.randrange(n) for _ in range(k)] for _ in range(n)]
        if rng.random() < 0.4:  # a permutation letter: non-trivial groups
            perm = list(range(n))
            rng.shuffle(perm)
            for q in range(n):
                table[q][0] = perm[q]
        d = DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if rng.random() < 0.5])
        try:
            M = transition_monoid(d, Limits(max_monoid_size=max_size))
        except LimitExceeded:
            continue
        out.append(M)
    return out


def _green_by_components(M):
    m = M.size
    R, L = table_components(M.right), table_components(M.left)
    nr, nl = int(R.max()) + 1, int(L.max()) + 1
    g = csr_matrix((np.ones(m, dtype=np.int8), (R, nr + L)), shape=(nr + nl, nr + nl))
    _, comp = connected_components(g, directed=False)
    return {"R": R, "L": L, "J": canonical_labels(comp[R]), "H": canonical_labels(R * nl + L)}


def test_green_from_kernels_and_images_equals_strong_components():
    mixed = 0
    for M in _random_monoids(1, 150, n_max=9):
        new, old = M.green, _green_by_components(M)
        for rel in "RLHJ":
            assert (new[rel] == old[rel]).all(), rel
        fast = M._regular_by_images()
        assert fast is not None
        J = old["J"]
        has = np.zeros(int(J.max()) + 1, dtype=bool)
        has[J[M.idempotent]] = True
        assert (fast[0] == has[J]).all()  # regular ⇔ the D-class holds an idempotent
        mixed += bool(fast[0].any() and not fast[0].all())
    assert mixed >= 10  # the induced strong components of the non-regular part were exercised


def test_green_falls_back_to_components_beyond_15_states():
    d = DFA.from_table("ab", [[(q + 1) % 17, 0] for q in range(17)], 0, [0, 3])  # Z17 and the constants
    M = transition_monoid(d)
    assert M._regular_by_images() is None
    new, old = M.green, _green_by_components(M)
    assert all((new[r] == old[r]).all() for r in "RLHJ")


def _sympy_group(M, e, within=None):
    from sympy.combinatorics import Permutation, PermutationGroup

    H = M.green["H"]
    members = np.flatnonzero(H == H[e])
    if within is not None:
        members = members[within[members]]
    points = np.unique(M.elements[e]).astype(np.int64)
    pos = np.full(M.num_states, -1)
    pos[points] = np.arange(points.size)
    gens, perms, group = [], [], None
    for h in members[np.argsort(M.lengths[members], kind="stable")].tolist():
        if h == e:
            continue
        perm = Permutation([int(v) for v in pos[M.elements[h][points]]], size=points.size)
        if group is not None and group.contains(perm):
            continue
        gens.append(h)
        perms.append(perm)
        group = PermutationGroup(perms)
        if group.order() == members.size:
            break
    if group is None:
        return 1, True, True, True, ()
    return group.order(), group.is_abelian, group.is_cyclic, group.is_solvable, tuple(gens)


def test_groups_agree_with_sympy():
    pytest.importorskip("sympy")
    seen = 0
    monoids = _random_monoids(2, 60)
    def full_transformations(n):  # a transposition, an n-cycle and a rank n-1 map generate T_n
        perm, rank = [1, 0] + list(range(2, n)), [0, 0] + list(range(2, n))
        return DFA.from_table("abc", [[perm[q], (q + 1) % n, rank[q]] for q in range(n)], 0, [0])

    a5 = DFA.from_table("ab", [[1, 1], [2, 2], [3, 0], [4, 3], [0, 4]], 0, [0])  # (01234), (012) generate A5
    monoids += [transition_monoid(full_transformations(5)), transition_monoid(a5)]
    for M in monoids:
        for within in (None, M.stable):
            es = np.flatnonzero(M.idempotent & (within if within is not None else True))
            for e in es[:12].tolist():
                g = M.maximal_subgroup(e, within=within)
                assert (g.order, g.abelian, g.cyclic, g.solvable, g.generators) == _sympy_group(M, e, within)
                seen += g.order > 1
    assert seen > 50
    names = {g.name: g.solvable for g in monoids[-2].maximal_subgroups} | {g.name: g.solvable for g in monoids[-1].maximal_subgroups}
    assert names["S5"] is False and names["A5"] is False and names["S4"] is True


def test_permgroup_by_brute_force():
    # S4 listed explicitly; its derived series S4 > A4 > V4 > 1; A5 is perfect
    import itertools

    s4 = np.array(list(itertools.permutations(range(4))))
    G = PermGroup(s4)
    assert G.N == 24 and G.is_solvable(G.greedy_generators(range(24)))
    a5 = np.array([p for p in itertools.permutations(range(5)) if is_even(p)])
    G5 = PermGroup(a5)
    gens = G5.greedy_generators(range(G5.N))
    assert not G5.is_solvable(gens) and not G5.commute(gens)
    z6 = np.array([[(i + s) % 6 for i in range(6)] for s in range(6)])
    assert PermGroup(z6).is_cyclic_abelian()
    v4 = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
    assert not PermGroup(v4).is_cyclic_abelian()
    assert prime_factors(360) == [2, 3, 5] and solvable_by_order(59) and not solvable_by_order(60)
    assert solvable_by_order(3 ** 4 * 5 * 7) and solvable_by_order(2 ** 5 * 3 ** 3)


def test_stable_words_and_levels_equal_the_plain_computations(monkeypatch):
    checked = 0
    for M in _random_monoids(3, 120):
        m, right = M.size, M.right
        mask = np.zeros(m, dtype=bool)
        mask[right[0]] = True
        levels, seen, j = [mask], {mask.tobytes(): 1}, 1
        while True:  # η(Σ^{j+1}) = η(Σ^j)·Σ, every level in full
            nxt = np.zeros(m, dtype=bool)
            nxt[right[np.flatnonzero(mask)].ravel()] = True
            j += 1
            if nxt.tobytes() in seen:
                pre, per = seen[nxt.tobytes()], j - seen[nxt.tobytes()]
                break
            seen[nxt.tobytes()] = j
            levels.append(nxt)
            mask = nxt
        s = per * max(1, -(-pre // per))
        assert M.stability_index == s and (M.stable == levels[s - 1]).all()
        xs = np.flatnonzero(M.stable)[:10].tolist()
        monkeypatch.setattr(stable_mod, "REVERSED_GRAPH_EDGES", 0)  # the candidate enumeration, as for large monoids
        new = [M.stable_word(x) for x in xs]
        monkeypatch.setattr(stable_mod, "REVERSED_GRAPH_EDGES", 1 << 18)
        M.__dict__["_right_predecessors"] = type(M)._right_predecessors.func(M)  # force the reversed graph
        assert new == [M.stable_word(x) for x in xs]
        for x, w in zip(xs, new):
            assert len(w) == s and M.element_of_word(w) == x
        checked += len(xs)
    assert checked > 500
