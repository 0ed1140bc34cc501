"""The plain-Python paths for small inputs against the numpy paths they stand in for (two
algorithms that must agree), on random automata: minimization to the canonical DFA, the closure that enumerates monoids of at most
``SMALL_MONOID`` elements, Green's relations of monoids with Cayley graphs of at most
``SMALL_GRAPH_EDGES`` edges, products by walking the right Cayley graph, the least modulus on the enumerated monoid, the stable-semigroup levels and stable words,
the maximal idempotents of the semigroup, maximal subgroups of fewer than
``SMALL_GROUP_ORDER`` elements, and the limits an analysis record reports (read where ``analyze``
puts its errors, against the walk over the whole record)."""

from __future__ import annotations

import random

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from langclass.app.usecases.service import analysis_limits_hit, limits_hit
from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.algebra.classes import Context
from langclass.core.algebra.classes import context as context_mod
from langclass.core.base.errors import LimitExceeded
from langclass.core.synthesis.fo_mod import least_modulus
from langclass.core.base.limits import Limits
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.algebra.monoid.closure import SMALL_MONOID
from langclass.core.algebra.monoid.groups import SMALL_GROUP_ORDER
from langclass.core.algebra.monoid import stable as stable_mod
from langclass.core.algebra.monoid.lookup import canonical_labels
from langclass.core.automata.smallgraph import SMALL_GRAPH_EDGES


def _random_dfas(seed: int, count: int, n_max: int = 6):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n, k = rng.randint(1, n_max), rng.randint(1, 3)
        table = [[rng.randrange(n) for _ in range(k)] for _ in range(n)]
        if rng.random() < 0.5:  # a permutation letter: non-trivial groups
            perm = list(range(n))
            rng.shuffle(perm)
            for q in range(n):
                table[q][0] = perm[q]
        out.append(DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if rng.random() < 0.5]))
    return out


def test_small_maximal_subgroups_equal_the_numpy_path():
    seen_orders: set[int] = set()
    for dfa in _random_dfas(1, 300):
        try:
            M = transition_monoid(dfa, Limits(max_monoid_size=20_000))
        except LimitExceeded:
            continue
        H = M.green["H"]
        for e in np.flatnonzero(M.idempotent).tolist():
            for within in (None, M.stable):
                members = np.flatnonzero(H == H[e]) if within is None else np.flatnonzero((H == H[e]) & within)
                if members.size >= SMALL_GROUP_ORDER:
                    continue
                small = M._maximal_subgroup(e, within)
                assert small == M._maximal_subgroup(e, within, small_path=False)
                seen_orders.add(small.order)
    assert {1, 2, 3, 4, 6} <= seen_orders  # trivial, cyclic and non-abelian (S3) groups were compared


def test_analysis_limits_hit_equals_the_walk_over_the_record():
    limits = [Limits(), Limits(max_monoid_size=30), Limits(max_monoid_size=200, max_states=12),
              Limits(max_monoid_entries=100, max_k_automaton_letters=4)]
    hit = 0
    for i, dfa in enumerate(_random_dfas(2, 240, n_max=7)):
        record = analyze(dfa, limits[i % len(limits)]).to_dict()
        assert analysis_limits_hit(record) == limits_hit(record)
        hit += bool(limits_hit(record))
    assert hit >= 20


def test_small_closure_equals_the_numpy_closure():
    sizes = []
    for dfa in _random_dfas(3, 300, n_max=7):
        for limits in (Limits(max_monoid_size=20_000), Limits(max_monoid_size=40)):
            try:
                fast = transition_monoid(dfa, limits)
            except LimitExceeded as err:
                try:
                    transition_monoid(dfa, limits, small_path=False)
                except LimitExceeded as err2:
                    assert err.to_dict() == err2.to_dict()
                    continue
                raise AssertionError("only the small path raised") from None
            slow = transition_monoid(dfa, limits, small_path=False)
            for name in ("elements", "parent", "last_letter", "lengths", "right"):
                a, b = getattr(fast, name), getattr(slow, name)
                assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all() and not a.flags.writeable, name
            assert (fast.identity_in_semigroup, fast.identity_word_plus) == (slow.identity_in_semigroup, slow.identity_word_plus)
            assert (fast._lookup._shifted == slow._lookup._shifted).all()
            sizes.append(fast.size)
    assert min(sizes) == 1 and any(s > SMALL_MONOID for s in sizes) and sum(s <= SMALL_MONOID for s in sizes) > 200


def _components(table: np.ndarray) -> np.ndarray:
    m, k = table.shape
    g = csr_matrix((np.ones(m * k, dtype=np.int8), (np.repeat(np.arange(m), k), table.ravel())), shape=(m, m))
    return canonical_labels(connected_components(g, directed=True, connection="strong")[1])


def test_small_green_equals_scipy_components():
    checked = 0
    for dfa in _random_dfas(4, 300):
        try:
            M = transition_monoid(dfa, Limits(max_monoid_size=SMALL_GRAPH_EDGES))
        except LimitExceeded:
            continue
        if M.right.size > SMALL_GRAPH_EDGES:
            continue
        R, L = _components(M.right), _components(M.left)
        nr, nl = int(R.max()) + 1, int(L.max()) + 1
        bip = csr_matrix((np.ones(M.size, dtype=np.int8), (R, nr + L)), shape=(nr + nl, nr + nl))
        J = canonical_labels(connected_components(bip, directed=False)[1][R])
        green = M.green
        assert list(green) == ["R", "L", "H", "J"]
        for name, want in (("R", R), ("L", L), ("H", canonical_labels(R * nl + L)), ("J", J)):
            assert green[name].dtype == np.int64 and (green[name] == want).all() and not green[name].flags.writeable, name
        checked += 1
    assert checked > 200


def test_products_on_the_cayley_graph_equal_the_composed_transformations():
    rng = random.Random(5)
    for dfa in _random_dfas(5, 120):
        M = transition_monoid(dfa, Limits(max_monoid_size=20_000))
        assert M._small_tables is not None or M.size > 4096
        for _ in range(20):
            x, y = rng.randrange(M.size), rng.randrange(M.size)
            assert M.multiply(x, y) == M.id_of(M.compose(x, y))
            assert M.element_of_word(M.word(y)) == y and len(M.word(y)) == M.lengths[y]


def test_least_modulus_on_the_monoid_equals_the_tuple_closure():
    found = set()
    for dfa in _random_dfas(6, 300, n_max=5):
        M = transition_monoid(dfa, Limits(max_monoid_size=20_000))
        if 300 < M.size <= 2_000:
            continue  # the tuple closure takes seconds on these (products of all pairs of a level)
        try:
            want = least_modulus(dfa)
        except LimitExceeded as err:
            try:
                least_modulus(dfa, M)
            except LimitExceeded as err2:
                assert err.to_dict() == err2.to_dict()
                continue
            raise AssertionError("only the tuple closure raised") from None
        assert least_modulus(dfa, M) == want
        found.add(want.modulus)
    assert {None, 1, 2} <= found


def test_small_stable_levels_and_words_equal_the_numpy_path(monkeypatch):
    pairs = []
    for dfa in _random_dfas(7, 200):
        try:
            pairs.append((transition_monoid(dfa, Limits(max_monoid_size=400)), dfa))
        except LimitExceeded:
            continue
    small = stable_mod.SMALL_STABLE_EDGES
    monkeypatch.setattr(stable_mod, "SMALL_STABLE_EDGES", 0)
    checked = 0
    for fast, dfa in pairs:
        if fast.right.size > small:
            continue
        slow = transition_monoid(dfa, Limits(max_monoid_size=400))
        assert slow._small_levels is None
        monkeypatch.undo()
        assert fast._small_levels is not None
        a, b = fast._stable, slow._stable
        assert a[:3] == b[:3] and len(a[3]) == len(b[3]) and all((x == y).all() for x, y in zip(a[3], b[3]))
        for x in np.flatnonzero(fast.stable).tolist():
            assert fast.stable_word(x) == slow.stable_word(x)
        for j in range(1, a[0] + 1):
            assert fast.level(j) == slow.level(j)
        monkeypatch.setattr(stable_mod, "SMALL_STABLE_EDGES", 0)
        checked += 1
    assert checked > 150


def test_small_canonical_dfa_equals_the_numpy_minimization():
    rng = random.Random(8)
    merged = 0
    for _ in range(400):
        n, k = rng.randint(1, 24), rng.randint(1, 3)
        dfa = DFA.from_table("abc"[:k], [[rng.randrange(n) for _ in range(k)] for _ in range(n)], rng.randrange(n),
                             [q for q in range(n) if rng.random() < rng.choice([0.1, 0.5])])
        fast, slow = dfa._canonical_small(), dfa._canonical_numpy()
        assert fast == slow and fast.transitions.dtype == slow.transitions.dtype and fast.fingerprint() == slow.fingerprint()
        assert fast.canonical() is fast
        merged += fast.num_states < dfa.num_states
    assert merged > 200


def test_small_maximal_idempotents_equal_the_numpy_path(monkeypatch):
    compared = several = 0
    for dfa in _random_dfas(9, 1000, n_max=5):
        try:
            M = transition_monoid(dfa, Limits(max_monoid_size=5_000))
        except LimitExceeded:
            continue
        A = M.dfa
        fast = Context(A, M, Limits(), Limits().deadline())
        if fast.semigroup_idempotents.size > context_mod.SMALL_IDEMPOTENTS or M.identity_in_semigroup:
            continue
        want = fast.maximal_idempotents
        monkeypatch.setattr(context_mod, "SMALL_IDEMPOTENTS", 0)
        slow = Context(A, M, Limits(), Limits().deadline())
        got = slow.maximal_idempotents
        monkeypatch.undo()
        assert want.dtype == got.dtype and want.tolist() == got.tolist()
        compared += 1
        several += want.size > 1
    assert compared > 100 and several >= 10


def test_dense_lookup_stores_ids_and_answers_minus_one_for_absent_codes():
    """DenseLookup keeps id + 1 over a zero table: id 0 is found, an absent code is -1."""
    from langclass.core.algebra.monoid.lookup import DenseLookup

    table = DenseLookup(3)
    rows = np.array([[0, 1, 2], [1, 1, 1], [2, 0, 1]], dtype=np.uint8)
    table.store(table.code(rows), np.arange(3))
    assert table.get_many(rows).tolist() == [0, 1, 2]
    assert table.get_many(np.array([[0, 0, 0], [2, 2, 2]])).tolist() == [-1, -1]
    assert table.ids(np.array([0, 26])).dtype == np.int64
