"""SCCs, periods, partial order and k-automata, checked against brute-force reachability."""

from __future__ import annotations

import itertools
from math import gcd

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.automata.graph import (
    component_members,
    component_periods,
    condensation_edges,
    is_partially_ordered,
    k_automaton,
    k_step_successors,
    strongly_connected_components,
)
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex


def reach_matrix(t: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure by Floyd–Warshall (brute force)."""
    n = t.shape[0]
    r = np.eye(n, dtype=bool)
    r[np.repeat(np.arange(n), t.shape[1]), t.ravel()] = True
    for m in range(n):
        r |= r[:, m : m + 1] & r[m : m + 1, :]
    return r


@st.composite
def random_dfas(draw) -> DFA:
    n = draw(st.integers(1, 9))
    k = draw(st.integers(1, 3))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA(tuple("abc"[:k]), np.array(table), draw(st.integers(0, n - 1)), np.array(acc))


@settings(max_examples=120, deadline=None)
@given(random_dfas())
def test_scc_matches_mutual_reachability(d: DFA) -> None:
    comp = strongly_connected_components(d)
    r = reach_matrix(d.transitions)
    mutual = r & r.T
    assert np.array_equal(comp[:, None] == comp[None, :], mutual)
    # ids are topological: edges never go to a smaller id
    for q in range(d.num_states):
        for x in d.transitions[q]:
            assert comp[q] <= comp[x]
    assert sorted(set(comp.tolist())) == list(range(int(comp.max()) + 1))
    assert sum(len(m) for m in component_members(comp)) == d.num_states
    for a, b in condensation_edges(d, comp):
        assert a < b
    assert is_partially_ordered(d) == (np.bincount(comp).max() == 1)


@settings(max_examples=80, deadline=None)
@given(random_dfas())
def test_component_periods_by_brute_force(d: DFA) -> None:
    comp = strongly_connected_components(d)
    periods = component_periods(d, comp)
    t = d.transitions
    n = d.num_states
    for c, members in enumerate(component_members(comp)):
        # gcd of lengths L ≤ 2n of closed walks through the first member inside the component
        q0 = members[0]
        inside = np.zeros(n, dtype=bool)
        inside[members] = True
        g = 0
        cur = {q0}
        for length in range(1, 2 * n + 1):
            cur = {int(r) for q in cur for r in t[q] if inside[r]}
            if q0 in cur:
                g = gcd(g, length)
        assert periods[c] == g


@settings(max_examples=60, deadline=None)
@given(random_dfas(), st.integers(1, 3))
def test_k_automaton_matches_definition(d: DFA, k: int) -> None:
    ak = k_automaton(d, k)
    assert ak.letters == tuple(itertools.product(d.alphabet, repeat=k))
    for j, w in enumerate(ak.letters):
        for q in range(d.num_states):
            assert ak.transitions[q, j] == d.run(w, q)
    dist = k_automaton(d, k, distinct=True)
    # same edge relation, one letter per distinct transformation (shortlex-least word)
    rel = k_step_successors(d, k)
    for a in (ak, dist):
        e = np.zeros_like(rel)
        e[np.repeat(np.arange(d.num_states), a.num_letters), a.transitions.ravel()] = True
        assert np.array_equal(e, rel)
    cols = {tuple(ak.transitions[:, j]) for j in range(ak.num_letters)}
    assert dist.num_letters == len(cols)
    for j, w in enumerate(dist.letters):
        first = min(i for i in range(ak.num_letters) if tuple(ak.transitions[:, i]) == tuple(dist.transitions[:, j]))
        assert ak.letters[first] == w
    assert is_partially_ordered(ak) == is_partially_ordered(dist)


def test_k_automaton_examples() -> None:
    ab = parse_regex("(ab)*", ["a", "b"])
    assert not is_partially_ordered(ab)
    a2 = k_automaton(ab, 2)
    assert is_partially_ordered(a2)  # (ab)* is in PODFA_2 (Disentangling the Expressivity of RoPE, Fig. 5)
    assert a2.as_dfa().alphabet == ("aa", "ab", "ba", "bb")
    # ((a|b)(a|b))*a: A_k never partially ordered (the odd states swap on every block)
    x = parse_regex("((a|b)(a|b))*a", ["a", "b"])
    assert not any(is_partially_ordered(k_automaton(x, k)) for k in range(1, 7))
    with pytest.raises(LimitExceeded) as err:
        k_automaton(ab, 21)
    assert err.value.limit == "max_k_automaton_letters"
    assert k_automaton(ab, 40, distinct=True).num_letters <= 6
    with pytest.raises(LimitExceeded):
        k_automaton(ab, 3, Limits(max_k_automaton_letters=4))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError):
            k_automaton(ab, bad)  # type: ignore[arg-type]


def test_k_step_successors_large_k() -> None:
    d = parse_regex("(aaa)*", ["a"])
    r = k_step_successors(d, 10**9)
    assert r.sum() == 3 and r[0, 10**9 % 3]
