"""Transition monoid: closure, shortlex words, Cayley graphs, Green's relations, ω-powers, stable
semigroup, groups, limits — each against an independent brute force (and libsemigroups)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Limits
from langclass.core.algebra.monoid import transition_monoid


@st.composite
def dfas(draw, n_max: int = 5, k_max: int = 3):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if acc[q]]).canonical()


def brute_monoid(dfa: DFA):
    """All transformations of words, each with its shortlex-least word, by enumerating words in shortlex order."""
    A = dfa.canonical()
    n = A.num_states
    first: dict[tuple, tuple] = {tuple(range(n)): ()}
    plus: dict[tuple, tuple] = {}
    length = 0
    frontier = [((), tuple(range(n)))]
    while frontier:
        length += 1
        nxt = []
        for w, x in frontier:  # frontier is in shortlex order, so (w, a) extensions are too
            for a, sym in enumerate(A.alphabet):
                y = tuple(int(A.transitions[q, a]) for q in x)
                wa = w + (sym,)
                plus.setdefault(y, wa)
                if y not in first:
                    first[y] = wa
                    nxt.append((wa, y))
        frontier = nxt
    return first, plus


def mul(x, y):
    return tuple(y[q] for q in x)


@settings(max_examples=150, deadline=None)
@given(dfas())
def test_closure_elements_and_shortlex_words(dfa):
    M = transition_monoid(dfa)
    first, plus = brute_monoid(dfa)
    assert M.size == len(first)
    got = {tuple(int(v) for v in M.elements[x]): M.word(x) for x in range(M.size)}
    assert got == first
    assert M.word(0) == ()
    assert M.identity_in_semigroup == (tuple(range(dfa.num_states)) in plus)
    if M.identity_in_semigroup:
        assert M.identity_word_plus == plus[tuple(range(dfa.num_states))]
    assert M.semigroup_size == len(plus)
    # Cayley graphs
    for x in range(M.size):
        ex = tuple(int(v) for v in M.elements[x])
        for a in range(dfa.num_letters):
            g = tuple(int(v) for v in M.elements[M.letter_ids[a]])
            assert tuple(M.elements[M.right[x, a]]) == mul(ex, g)
            assert tuple(M.elements[M.left[x, a]]) == mul(g, ex)
        assert M.element_of_word(M.word(x)) == x


@settings(max_examples=100, deadline=None)
@given(dfas(n_max=4))
def test_green_relations_idempotents_and_omega(dfa):
    M = transition_monoid(dfa)
    assume(M.size <= 40)  # the brute force below is cubic; hypothesis draws others in place of the larger ones
    els = [tuple(int(v) for v in M.elements[x]) for x in range(M.size)]
    idx = {e: i for i, e in enumerate(els)}
    rideal = [frozenset(mul(x, m) for m in els) for x in els]
    lideal = [frozenset(mul(m, x) for m in els) for x in els]
    jideal = [frozenset(mul(mul(u, x), v) for u in els for v in els) for x in els]
    g = M.green
    for i in range(M.size):
        for j in range(M.size):
            assert (g["R"][i] == g["R"][j]) == (rideal[i] == rideal[j])
            assert (g["L"][i] == g["L"][j]) == (lideal[i] == lideal[j])
            assert (g["J"][i] == g["J"][j]) == (jideal[i] == jideal[j])
            assert (g["H"][i] == g["H"][j]) == (rideal[i] == rideal[j] and lideal[i] == lideal[j])
    for i, x in enumerate(els):
        assert bool(M.idempotent[i]) == (mul(x, x) == x)
        y = x
        while mul(y, y) != y:
            y = mul(y, x)
        assert M.omega[i] == idx[y]
        assert bool(M.group_element[i]) == (mul(x, y) == x)
        assert bool(M.regular[i]) == any(mul(mul(x, m), x) == x for m in els)


@settings(max_examples=100, deadline=None)
@given(dfas(n_max=5))
def test_stability_index_and_stable_words(dfa):
    M = transition_monoid(dfa)
    letters = [tuple(int(v) for v in M.elements[a]) for a in M.letter_ids]
    levels = [frozenset(letters)]
    s = None
    while s is None:
        levels.append(frozenset(mul(x, g) for x in levels[-1] for g in letters))
        for c in range(1, len(levels) // 2 + 1):
            if levels[c - 1] == levels[2 * c - 1]:
                s = c
                break
    assert M.stability_index == s
    T = {M.id_of(np.asarray(x)) for x in levels[s - 1]}
    assert set(np.flatnonzero(M.stable).tolist()) == T
    for x in sorted(T)[:10]:
        w = M.stable_word(x)
        assert len(w) == s and M.element_of_word(w) == x


def test_size_paths_packed_and_bytes_lookup():
    rng = random.Random(11)
    for n in (9, 12, 20):  # 9..15: packed int64 keys; 20: bytes keys
        table = [[(q + 1) % n, 0 if q % 3 else q + 1 - (q + 1) // n * n] for q in range(n)]  # cycle and a partial reset
        d = DFA.from_table("ab", table, 0, [0, n // 2]).canonical()
        M = transition_monoid(d, Limits(max_monoid_size=200_000))
        first, _ = brute_monoid(d) if M.size < 20_000 else (None, None)
        if first is not None:
            assert M.size == len(first)
            for x in range(0, M.size, max(1, M.size // 50)):
                assert first[tuple(int(v) for v in M.elements[x])] == M.word(x)
        ids = M.ids_of(M.elements[::7])
        assert (ids == np.arange(0, M.size, 7)).all()
        const = np.zeros(d.num_states, dtype=int) + 10**6 % d.num_states  # a constant map: in M or not
        got = M.id_of(const)
        assert got is None or (M.elements[got] == const).all()
        if first is not None:
            assert (got is not None) == (tuple(int(v) for v in const) in first)
        assert M.id_of(M.elements[M.size // 2]) == M.size // 2


def test_full_transformation_monoid_t5():
    """T5 from a transposition, a 5-cycle and a rank-4 map: |T5| = 5^5, 196 idempotents, Bell(5) = 52
    R-classes, 2^5 − 1 = 31 L-classes, 5 J-classes, maximal subgroups S1..S5."""
    n = 5
    t = [[[1, 0, 2, 3, 4][q], [1, 2, 3, 4, 0][q], [0, 0, 2, 3, 4][q]] for q in range(n)]
    d = DFA.from_table("abc", t, 0, [0, 3])
    M = transition_monoid(d)
    assert M.size == 3125 and int(M.idempotent.sum()) == 196
    g = M.green
    assert int(g["R"].max()) + 1 == 52 and int(g["L"].max()) + 1 == 31 and int(g["J"].max()) + 1 == 5
    orders = sorted(gi.order for gi in M.maximal_subgroups)
    assert orders == [1, 2, 6, 24, 120]
    s5 = max(M.maximal_subgroups, key=lambda gi: gi.order)
    assert s5.name == "S5" and not s5.solvable


def test_groups_named_and_solvability():
    s5 = DFA.from_table("ab", [[1, 1], [0, 2], [2, 3], [3, 4], [4, 0]], 0, [0])  # (0 1), (0 1 2 3 4)
    M = transition_monoid(s5)
    assert M.size == 120
    G = M.maximal_subgroup(0)
    assert (G.order, G.name, G.solvable, G.cyclic) == (120, "S5", False, False)
    # the group elements replay: generator words act as the recorded permutations on im e
    for w, p in zip(G.generator_words, G.permutations):
        assert [s5.run(w, q) for q in G.points] == [G.points[i] for i in p]
    a5 = DFA.from_table("ab", [[1, 1], [2, 2], [0, 3], [3, 4], [4, 0]], 0, [0])  # (0 1 2), (0 1 2 3 4)
    M = transition_monoid(a5)
    G = M.maximal_subgroup(0)
    assert (G.order, G.name, G.solvable) == (60, "A5", False)
    r = analyze(s5)
    assert r.classes["fo_mod"].member is False
    assert r.beyond["all_groups_solvable"] is False and "NC¹" in r.beyond["complexity"]
    z3 = DFA.from_table("ab", [[1, 0], [2, 1], [0, 2]], 0, [0])
    G = transition_monoid(z3).maximal_subgroup(0)
    assert (G.order, G.name, G.solvable, G.cyclic) == (3, "Z3", True, True)


def test_libsemigroups_agrees_on_random_dfas():
    ls = pytest.importorskip("libsemigroups_pybind11")
    ls.ReportGuard(False)
    rng = random.Random(3)
    for _ in range(60):
        n, k = rng.randint(1, 6), rng.randint(1, 3)
        d = DFA.from_table("abc"[:k], [[rng.randrange(n) for _ in range(k)] for _ in range(n)], 0,
                           [q for q in range(n) if rng.random() < 0.5]).canonical()
        M = transition_monoid(d)
        nn = d.num_states
        if nn < 2:
            continue
        gens = [ls.Transf([int(d.transitions[q, a]) for q in range(nn)]) for a in range(d.num_letters)]
        S = ls.FroidurePin(gens)
        assert S.size() == M.semigroup_size
        assert S.contains_one() == M.identity_in_semigroup
        assert S.number_of_idempotents() == int((M.idempotent & M.in_semigroup).sum())
        ids = {M.id_of(np.asarray(list(x.images()))) for x in S.current_elements()}
        assert None not in ids and len(ids) == S.size()
        assert ids == set(np.flatnonzero(M.in_semigroup).tolist())


def test_limits_named_and_polynomial_classes_still_answered():
    n = 6
    t = [[[1, 0, 2, 3, 4, 5][q], [1, 2, 3, 4, 5, 0][q], [0, 0, 2, 3, 4, 5][q]] for q in range(n)]
    d = DFA.from_table("abc", t, 0, [0, 3])
    with pytest.raises(LimitExceeded) as ei:
        transition_monoid(d, Limits(max_monoid_size=1000))
    assert ei.value.limit == "max_monoid_size" and ei.value.to_dict()["limit"] == "max_monoid_size"
    r = analyze(d, Limits(max_monoid_size=1000))
    assert "error" in r.monoid_summary and r.monoid_summary["error"]["limit"] == "max_monoid_size"
    for key in ("ltl_p", "ltl_p_mod", "stutter_invariant", "group"):
        assert r.classes[key].member is not None
    # a counter is found on the DFA without the monoid
    assert r.classes["star_free"].member is False and r.classes["star_free"].method == "automaton"
    # and the lattice propagates it to the subclasses
    assert r.classes["fo2"].member is False and r.classes["fo2"].method == "lattice"
    assert r.classes["fo_mod"].member is None and r.classes["fo_mod"].error["limit"] == "max_monoid_size"
    # an over-cap LTL[P] language: its superclasses are implied
    chain = DFA.from_table("ab", [[min(q + 1, 39), q] for q in range(40)], 0, [39])
    r = analyze(chain, Limits(max_monoid_size=30))
    assert r.classes["ltl_p"].member and r.classes["star_free"].member and r.classes["star_free"].method == "lattice"
    assert r.encodings["soft"]["encoding"] == "nope" and r.encodings["hard"]["encoding"] is not None


def test_describe_pages_and_shape():
    d = DFA.from_table("ab", [[1, 0], [1, 2], [2, 2]], 0, [1])
    M = transition_monoid(d)
    desc = M.describe(offset=1, limit=2)
    assert desc["size"] == M.size and len(desc["elements"]) == 2 and desc["elements"][0]["id"] == 1
    assert sum(dc["size"] for dc in desc["d_classes"]) == M.size
    assert desc["counts"]["J"] == len(desc["d_classes"])
    for el in M.describe(0, 1000)["elements"]:
        assert M.element_of_word(el["word"]) == el["id"]
    with pytest.raises(ValueError):
        M.describe(-1, 3)


def test_power_and_products():
    d = DFA.from_table("a", [[1], [2], [3], [4], [2]], 0, [3])  # a^n: tail 2, cycle 3
    M = transition_monoid(d)
    a = int(M.letter_ids[0])
    for p in range(0, 9):
        assert M.power(a, p) == M.element_of_word("a" * p)
    e = M.omega[a]
    assert M.power(a, M.omega_exponent(a)) == e and M.idempotent[e]
    assert M.product(a, a, a) == M.element_of_word("aaa")
    assert list(itertools.islice((M.word(x) for x in range(M.size)), 3)) == [(), ("a",), ("a", "a")]


@settings(max_examples=80, deadline=None)
@given(dfas(n_max=5))
def test_group_elements_detect_aperiodicity(dfa):
    M = transition_monoid(dfa)
    assert M.nontrivial_group_elements.any() == M.aperiodic_violators.any()
    for sub in (M.stable, M.in_semigroup):
        assert (M.nontrivial_group_elements & sub).any() == (M.aperiodic_violators & sub).any()
    for x in range(min(M.size, 30)):
        assert M.idempotent_of_group(x) == M.omega[x]


def test_canonical_labels_and_table_components_agree_with_the_sorting_definitions():
    """canonical_labels' O(m) first-occurrence ranking equals the np.unique definition (dense and
    sparse labels, negative offsets); table_components equals strong_components on the edge list."""
    from langclass.core.algebra.monoid.lookup import canonical_labels, strong_components, table_components

    def by_sorting(labels):
        _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)
        return rank[inv.ravel()]

    rng = np.random.default_rng(5)
    for m, span, shift in ((1, 1, 0), (50, 7, -3), (1000, 40, 10**6), (500, 10**9, 0), (3000, 2500, -7)):
        lab = rng.integers(0, span, size=m) + shift
        assert np.array_equal(canonical_labels(lab), by_sorting(lab))
    for m, k in ((1, 1), (30, 2), (400, 3), (2000, 1)):
        table = rng.integers(0, m, size=(m, k))
        table[np.arange(m - 1), 0] = np.arange(1, m)  # a path keeps some components large
        src = np.repeat(np.arange(m), k)
        assert np.array_equal(table_components(table), strong_components(m, src, table.ravel()))


def test_scatter_first_and_insert_new_equal_the_sorting_definitions():
    """scatter_first equals np.minimum.at (also on a table that already holds smaller values), and
    DenseLookup.insert_new numbers distinct codes in order of first occurrence, as np.unique's
    return_index sorted by position does; DenseLookup.code equals Σ x[q]·n^q."""
    from langclass.core.algebra.monoid.lookup import DenseLookup, scatter_first

    rng = np.random.default_rng(11)
    for m, span in ((1, 1), (40, 3), (1000, 50), (5000, 20_000)):
        keys = rng.integers(0, span, size=m)
        pos = np.arange(m, dtype=np.int64)
        init = rng.integers(0, 2 * m, size=span)
        want, got = init.copy(), init.copy()
        np.minimum.at(want, keys, pos)
        scatter_first(got, keys, pos)
        assert np.array_equal(got, want)
    for n, m in ((1, 3), (3, 50), (5, 2000), (7, 4000)):
        table = DenseLookup(n)
        rows = rng.integers(0, n, size=(m, n)).astype(np.uint8)
        codes = table.code(rows)
        assert np.array_equal(codes, rows.astype(np.int64) @ np.asarray([n ** q for q in range(n)]))
        table.store(codes[:1], np.zeros(1, dtype=np.int64))  # one code known already
        miss = np.flatnonzero(table.ids(codes) < 0)
        first = table.insert_new(codes[miss], 1)
        u, idx = np.unique(codes[miss], return_index=True)
        assert np.array_equal(first, np.sort(idx))
        assert np.array_equal(table.ids(codes[miss][first]), np.arange(1, 1 + first.size))
        assert (table.ids(codes) >= 0).all()
