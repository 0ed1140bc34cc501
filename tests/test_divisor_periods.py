"""The least period / modulus searches over the divisors of the level period p (issue 34).

The orbit engine and ``least_modulus`` try only the divisors of the period p of the levels η(Σ^j)
(P(m) ⇔ P(gcd(m, p)), proved in langclass.core.algebra.orbits and langclass.core.synthesis.fo_mod).
Here they are checked against the searches they replaced, kept as the oracle: every m = 1, …, s in
order, on residue graphs with all m·|M| nodes, and η((Σ^m)^+) closed by products with every power
taken. The pieces that make long cycles fast are checked against their slow counterparts too: the
residue graph on its reachable nodes, witness steps read off paths, the ω-exponent read off the
transformation, and the cyclic-group shortcut.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from langclass.core.algebra import orbits
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.algebra.orbits import GAPS, SIDES, OrbitEngine, divisors, unary_temporal
from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.synthesis.fo_mod import least_modulus
from langclass.core.synthesis.starfree import _aperiodic_element


@st.composite
def dfas(draw, n_max: int = 6, k_max: int = 3):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    if draw(st.booleans()):  # a permutation letter: groups, periods > 1
        perm = draw(st.permutations(range(n)))
        for q in range(n):
            table[q][0] = perm[q]
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if acc[q]]).canonical()


def _small_monoid(A: DFA, cap: int = 300):
    """The monoid, for the draws whose monoid the oracles (products of all pairs) handle quickly."""
    M = transition_monoid(A)
    assume(M.size <= cap)
    return M


class FullGraphEngine(OrbitEngine):
    """The engine with every residue graph on all m·|M| nodes and the least-t witness steps."""

    def _reachable_only(self, modulus: int) -> bool:
        return False


def old_least_period(M, gap: str, side: str) -> int | None:
    """The search before issue 34: decide at the stable modulus s, then try m = 1, 2, …, s − 1."""
    eng = FullGraphEngine(M, work_budget=10**9)
    s = M.stability_index if gap in ("MOD", "MOD+") else 1
    if eng.check(gap, side, s)[1] is not None:
        return None
    for m in range(1, s):
        if eng.check(gap, side, m)[1] is None:
            return m
    return s


def old_least_modulus(M) -> int | None:
    """The FO[<,MOD_m] search before issue 34: m = 1, …, s, η((Σ^m)^+) as the union of the levels
    η(Σ^{jm}) walked on the Cayley graph, every element's powers taken."""
    right = M.right.tolist()
    letters = range(M.dfa.num_letters)
    for m in range(1, M.stability_index + 1):
        cur, seen, union = M.level(m), set(), set()
        while cur not in seen:
            seen.add(cur)
            union |= cur
            for _ in range(m):
                cur = frozenset(right[x][a] for x in cur for a in letters)
        if all(_aperiodic_element(x, M.multiply) for x in union):
            return m
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas())
def test_least_periods_equal_the_search_over_every_m(A):
    M = _small_monoid(A)
    assert M.stability_index % M.level_period == 0
    eng = OrbitEngine(M)
    for gap in GAPS:
        for side in SIDES:
            v = unary_temporal(M, gap, side, engine=eng)
            want = old_least_period(M, gap, side)
            assert v.period == want, (gap, side, A.to_canonical_dict())
            if want is not None:
                assert M.level_period % want == 0  # the least one divides p


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas())
def test_least_modulus_equals_the_search_over_every_m(A):
    M = _small_monoid(A)
    want = old_least_modulus(M)
    got = least_modulus(A, M)
    assert got.modulus == want
    assert least_modulus(A).modulus == want  # the tuple closure, over the divisors too
    assert [m for m, _ in got.tried] == divisors(M.level_period)[:len(got.tried)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas())
def test_reachable_residue_graph_equals_the_full_one(A):
    M = _small_monoid(A)
    full = FullGraphEngine(M, work_budget=10**9)
    part = OrbitEngine(M, work_budget=10**9)
    part._reachable_only = lambda m: m > 1 and M.level_period % m == 0  # whatever the sizes
    for m in divisors(M.level_period)[1:]:
        kf, kp = full.kernel(m, left=True), part.kernel(m, left=True)
        assert kp.nodes is not None and kf.nodes is None
        assert (kf.mask == kp.mask).all()
        K = np.flatnonzero(kf.mask)
        for a, b in ((kf.right_scc[K], kp.right_scc[K]), (kf.left_scc[K], kp.left_scc[K])):
            assert (np.equal.outer(a, a) == np.equal.outer(b, b)).all()  # the same partition of K_m
        for x in K.tolist():
            w = kp.word(x)
            assert len(w) % m == 0 and M.element_of_word([M.dfa.alphabet[i] for i in w]) == x


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas())
def test_witness_steps_read_off_paths_are_witnesses(A):
    M = _small_monoid(A)
    saved = orbits.PATH_FACTOR
    orbits.PATH_FACTOR = 0  # every step by a path of the residue graph
    try:
        for gap in GAPS:
            for side in SIDES:
                v = unary_temporal(M, gap, side, engine=OrbitEngine(M))
                assert v.member == (old_least_period(M, gap, side) is not None)
                w = v.witness
                if w is None:
                    continue
                orbit = set(next(o.elements for o in v.orbits if o.idempotent == w.idempotent))
                if w.relation == "R":
                    assert M.multiply(w.x, w.u) == w.y and M.multiply(w.y, w.v) == w.x
                elif w.relation == "L":
                    assert M.multiply(w.u, w.x) == w.y and M.multiply(w.v, w.y) == w.x
                else:
                    assert M.multiply(w.x, w.y) == w.u and M.product(w.u, w.x, w.u) == w.v != w.u
                assert {w.x, w.y} <= orbit and (w.relation == "DA" or {w.u, w.v} <= orbit)
    finally:
        orbits.PATH_FACTOR = saved


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(n_max=7))
def test_omega_exponent_equals_repeated_products(A):
    M = _small_monoid(A)
    for x in range(M.size):
        p, y = 1, x
        while not M.idempotent[y]:
            y = M.multiply(y, x)
            p += 1
        assert M.omega_exponent(x) == p


@pytest.mark.parametrize("cycles", [(61,), (7, 11), (64,), (5, 12), (3, 4, 5)])
def test_cyclic_shortcut_equals_the_permutation_group(cycles):
    """Letter a: disjoint cycles of the given lengths (a cyclic group of order their lcm, ≥ 60 so
    the numpy path runs); letter b: a transposition inside the first cycle for the non-cyclic ones."""
    n = sum(cycles)
    a, start = [], 0
    for c in cycles:
        a += [start + (i + 1) % c for i in range(c)]
        start += c
    rows = [[a[q]] for q in range(n)]
    A = DFA.from_table("a", rows, 0, [0, cycles[0]] if len(cycles) > 1 else [0]).canonical()
    M = transition_monoid(A)
    e = 0
    got = M._maximal_subgroup(e, None, small_path=False)
    assert got == M._maximal_subgroup(e, None, small_path=False, cyclic_shortcut=False)
    assert got.cyclic and got.name == f"Z{got.order}"


def test_a_non_cyclic_group_is_not_taken_for_cyclic():
    # S5 on the first five states (a 5-cycle and a transposition): the shortcut must decline
    a = [1, 2, 3, 4, 0]
    b = [1, 0, 2, 3, 4]
    A = DFA.from_table("ab", [[a[q], b[q]] for q in range(5)], 0, [0]).canonical()
    M = transition_monoid(A)
    got = M._maximal_subgroup(0, None, small_path=False)
    assert got == M._maximal_subgroup(0, None, small_path=False, cyclic_shortcut=False)
    assert got.name == "S5" and not got.cyclic


@pytest.mark.parametrize("n", [1000, 210])
def test_one_cycle_classifies_with_every_class_decided(n):
    """(a^n)*: the group Z_n, periods n (only the divisors of n are tried); the bench prints the time."""
    d = DFA.from_table("a", [[(q + 1) % n] for q in range(n)], 0, [0])
    r = analyze(d)
    assert all(c.member is not None for c in r.classes.values()), [k for k, c in r.classes.items() if c.member is None]
    assert r.classes["ltl_p_mod"].period == n and r.classes["ltl_p_y_mod"].period == n
    assert r.classes["fo_mod"].member and not r.classes["star_free"].member
    assert least_modulus(r.dfa, r.monoid).modulus == n
    assert r.monoid.level_period == n == r.monoid.stability_index


@pytest.mark.parametrize("regex, period, p", [("(ababab)*", 3, 6), ("(ababababab)*", 5, 10)])
def test_a_proper_divisor_of_p_is_the_least_period(regex, period, p):
    """(ab)^{3j}: Y checks the alternation, so LTL[P,Y,MOD] needs only MOD_3 while the levels have
    period 6 (and LTL[P,MOD], blind to neighbours, needs 6) — found among the divisors of p, and
    equal to the old search over every m."""
    from langclass.core.ingest.parse import parse_regex

    M = transition_monoid(parse_regex(regex, ["a", "b"]).canonical())
    assert M.level_period == p
    v = unary_temporal(M, "MOD+", "past")
    assert v.member and v.period == period == old_least_period(M, "MOD+", "past")
    w = unary_temporal(M, "MOD", "past")
    assert w.period == p == old_least_period(M, "MOD", "past")


class NoLiftEngine(FullGraphEngine):
    """The engine that builds the residue graph of s for every non-member's witness."""

    def _lift(self, *args):
        return None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas())
def test_lifted_witnesses_equal_the_residue_graph_of_s(A):
    """A violation found at p is carried to s by the lifting (module docstring of orbits): it never
    falls back on these draws, its orbits are those of the residue graph of s, its words have length
    ≡ 0 (mod s) and spell its elements, and the relation holds."""
    M = _small_monoid(A)
    lifted_eng, full_eng = OrbitEngine(M), NoLiftEngine(M, work_budget=10**9)
    fell_back = []
    orig = lifted_eng._lift

    def spy(*args):
        got = orig(*args)
        if got is None:
            fell_back.append(args)
        return got

    lifted_eng._lift = spy
    for gap in ("MOD", "MOD+"):
        for side in SIDES:
            v, w = unary_temporal(M, gap, side, engine=lifted_eng), unary_temporal(M, gap, side, engine=full_eng)
            assert (v.member, v.period, v.modulus) == (w.member, w.period, w.modulus)
            if v.member:
                continue
            assert [o.elements for o in v.orbits] == [o.elements for o in w.orbits]
            x = v.witness
            names = ("x", "y", "u", "v")
            for name in names:
                z = getattr(x, name)
                word = v.kernel.word(z)
                assert len(word) % v.modulus == 0 and M.element_of_word([M.dfa.alphabet[a] for a in word]) == z
            if x.relation == "R":
                assert M.multiply(x.x, x.u) == x.y and M.multiply(x.y, x.v) == x.x != x.y
            elif x.relation == "L":
                assert M.multiply(x.u, x.x) == x.y and M.multiply(x.v, x.y) == x.x != x.y
            else:
                assert M.multiply(x.x, x.y) == x.u and M.product(x.u, x.x, x.u) == x.v != x.u
    assert not fell_back
