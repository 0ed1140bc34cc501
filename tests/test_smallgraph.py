"""The plain-Python small-graph routines give scipy's answers (hypothesis), and the whole analysis of a
small language is the same whichever of the two the callers use."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from langclass.core.automata import smallgraph
from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.algebra.classes import context as context_mod
from langclass.core.algebra.classes import delay as delay_mod
from langclass.core.algebra.classes import ltl_p_y_delay
from langclass.core.algebra.monoid import green as green_mod
from langclass.core.algebra.monoid import lookup as lookup_mod


@st.composite
def graphs(draw, n_max: int = 12, e_max: int = 40):
    n = draw(st.integers(1, n_max))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=e_max))
    return n, edges


def _scipy_graph(n, edges):
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    return csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))


def _partition(labels) -> list[int]:
    return smallgraph.canonical(list(labels))


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_strong_and_connected_components_are_scipys(g):
    n, edges = g
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        succ[a].append(b)
    _, strong = connected_components(_scipy_graph(n, edges), directed=True, connection="strong")
    ours = smallgraph.strong_labels(succ)
    assert _partition(ours) == _partition(strong) and sorted(set(ours)) == list(range(max(ours) + 1))
    _, weak = connected_components(_scipy_graph(n, edges), directed=False)
    assert _partition(smallgraph.connected_labels(n, edges)) == _partition(weak)


@settings(max_examples=300, deadline=None)
@given(graphs(), st.data())
def test_bfs_tree_is_scipys_breadth_first_order(g, data):
    n, edges = g
    src = data.draw(st.integers(0, n - 1))
    succ = [sorted({b for a, b in edges if a == q}) for q in range(n)]
    order, pred = smallgraph.bfs_tree(succ, src)
    s_order, s_pred = breadth_first_order(_scipy_graph(n, edges), src, directed=True, return_predecessors=True)
    assert order == s_order.tolist()
    assert pred == [int(p) if p >= 0 else -1 for p in s_pred.tolist()]


@st.composite
def dfas(draw, n_max: int = 7, k_max: int = 3):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if acc[q]])


_CALLERS = (smallgraph, context_mod, lookup_mod, green_mod, delay_mod)


def _scipy_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    for mod in _CALLERS[1:]:
        monkeypatch.setattr(mod, "SMALL_GRAPH_EDGES", -1)


def _record(dfa: DFA) -> dict:
    d = analyze(dfa).to_dict()
    d.pop("timings_ms")
    return d


@settings(max_examples=120, deadline=None)
@given(dfas(), st.data())
def test_context_bfs_and_scc_agree_with_scipy(dfa, data):
    A = dfa.canonical()
    ctx = context_mod.Context(A)
    assert A.num_states * A.num_letters <= smallgraph.SMALL_GRAPH_EDGES
    src = data.draw(st.integers(0, A.num_states - 1))
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=A.num_states, max_size=A.num_states)), dtype=bool)
    allowed[src] = True
    small = [ctx.bfs(src, mask, reverse=rev) for mask in (None, allowed) for rev in (False, True)]
    scc = ctx.scc
    with pytest.MonkeyPatch.context() as mp:
        _scipy_everywhere(mp)
        ref = context_mod.Context(A)
        big = [ref.bfs(src, mask, reverse=rev) for mask in (None, allowed) for rev in (False, True)]
        assert _partition(scc.tolist()) == _partition(ref.scc.tolist())
    for (p, l, o), (p2, l2, o2) in zip(small, big):
        assert p.tolist() == p2.tolist() and l.tolist() == l2.tolist() and o.tolist() == o2.tolist()


@settings(max_examples=60, deadline=None)
@given(dfas())
def test_the_analysis_is_the_same_with_scipy_graphs(dfa):
    ours = _record(dfa)
    delay = ltl_p_y_delay(dfa, max_k=3)
    with pytest.MonkeyPatch.context() as mp:
        _scipy_everywhere(mp)
        assert _record(dfa) == ours
        assert ltl_p_y_delay(dfa, max_k=3) == delay


def test_reachable_is_the_generated_submonoid_and_stops_past_max_size():
    """Closure under right multiplication, checked against all products of short words in Z_12."""
    from itertools import product

    from langclass.core.automata.smallgraph import reachable

    add = lambda x, g: (x + g) % 12
    brute = {sum(w) % 12 for n in range(13) for w in product([8], repeat=n)}
    assert reachable([0], [8], add) == brute == {0, 4, 8}
    assert reachable([1], [3, 8], add) == set(range(12))
    assert reachable([0], [1], add, max_size=5) is None
    assert reachable([0], [1], add, max_size=12) == set(range(12))
