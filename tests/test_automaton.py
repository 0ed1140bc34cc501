"""DFA value type: Hopcroft vs a naive Moore refinement, canonical form invariance, idempotence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, LimitExceeded, UnknownSymbolError
from langclass.core.base.limits import Limits
from langclass.core.automata.minimize import hopcroft_partition, minimal_partition, moore_rounds
from langclass.core.ingest.parse import parse_regex


def moore_partition(t: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Naive Moore refinement (independent of Hopcroft): refine by (block, blocks of successors) until stable."""
    block = acc.astype(np.int64)
    while True:
        sig = {}
        new = np.empty_like(block)
        for q in range(len(block)):
            key = (int(block[q]),) + tuple(int(block[r]) for r in t[q])
            new[q] = sig.setdefault(key, len(sig))
        if len(sig) == len(set(block.tolist())):
            return new
        block = new


def same_partition(x: np.ndarray, y: np.ndarray) -> bool:
    return np.array_equal(x[:, None] == x[None, :], y[:, None] == y[None, :])


@st.composite
def random_dfas(draw, max_states: int = 12, max_letters: int = 3) -> DFA:
    n = draw(st.integers(1, max_states))
    k = draw(st.integers(1, max_letters))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    init = draw(st.integers(0, n - 1))
    return DFA(tuple("abc"[:k]), np.array(table), init, np.array(acc))


@settings(max_examples=150, deadline=None)
@given(random_dfas())
def test_hopcroft_equals_moore(d: DFA) -> None:
    assert same_partition(hopcroft_partition(d.transitions, d.accepting), moore_partition(d.transitions, d.accepting))


@settings(max_examples=150, deadline=None)
@given(random_dfas(), st.integers(0, 6))
def test_moore_rounds_then_hopcroft_equals_moore(d: DFA, rounds: int) -> None:
    full = moore_partition(d.transitions, d.accepting)
    partial, stable = moore_rounds(d.transitions, d.accepting, rounds)
    if stable:
        assert same_partition(partial, full)
    assert same_partition(hopcroft_partition(d.transitions, d.accepting, initial=partial), full)
    assert same_partition(minimal_partition(d.transitions, d.accepting, moore_limit=rounds), full)


def test_long_chain_needs_hopcroft_after_moore() -> None:
    n = 3000  # a^n: states need words of length up to n to be told apart
    table = np.minimum(np.arange(n) + 1, n - 1)[:, None]
    d = DFA(("a",), table, 0, np.arange(n) == n - 2)
    assert not moore_rounds(d.transitions, d.accepting, 48)[1]
    assert d.canonical().num_states == n


@settings(max_examples=100, deadline=None)
@given(random_dfas(), st.randoms(use_true_random=False))
def test_canonical_form_is_invariant_and_idempotent(d: DFA, rnd) -> None:
    c = d.canonical()
    assert c.canonical() == c  # idempotent
    assert DFA(c.alphabet, c.transitions, c.initial, c.accepting).canonical() == c  # also from a fresh copy
    # renumber the states at random and duplicate every state: same canonical form
    n = d.num_states
    perm = list(range(n))
    rnd.shuffle(perm)
    inv = np.argsort(perm)
    t2 = np.asarray(perm)[d.transitions[inv]]
    # state q+n is a twin of q; every edge goes to the original or the twin of its target at random
    twin = np.concatenate([t2, t2]) + n * np.array([[rnd.random() < 0.5 for _ in range(d.num_letters)] for _ in range(2 * n)])
    acc2 = np.concatenate([d.accepting[inv], d.accepting[inv]])
    e = DFA(d.alphabet, twin, perm[d.initial] + n * (rnd.random() < 0.5), acc2)
    assert e.canonical() == c and e.fingerprint() == d.fingerprint()
    # minimality: the canonical states are pairwise inequivalent and all reachable
    assert len(set(moore_partition(c.transitions, c.accepting).tolist())) == c.num_states
    assert c.reachable().all()
    # language preserved on all words up to length 6
    for length in range(7):
        for w in np.ndindex(*([d.num_letters] * length)):
            assert d.run_indices(w) is not None
            assert bool(d.accepting[d.run_indices(w)]) == bool(c.accepting[c.run_indices(w)])


def test_canonical_numbering_is_bfs_in_alphabet_order() -> None:
    c = parse_regex("b(a|b)*|a", ["a", "b"])
    # BFS from 0: letter a first, then b
    t = c.transitions
    order = [0]
    seen = {0}
    for q in order:
        for r in t[q]:
            if int(r) not in seen:
                seen.add(int(r))
                order.append(int(r))
    assert order == list(range(c.num_states))


def test_canonical_json_and_fingerprint() -> None:
    c = parse_regex("(ab)*", ["a", "b"])
    assert c.canonical_json() == '{"accepting":[0],"alphabet":["a","b"],"initial":0,"transitions":[[1,2],[2,0],[2,2]]}'
    import hashlib

    assert c.fingerprint() == hashlib.sha256(c.canonical_json().encode()).hexdigest()


def test_dfa_validation_and_lookup() -> None:
    with pytest.raises(AlphabetError):
        DFA((), np.zeros((1, 0)), 0, [])
    with pytest.raises(AlphabetError):
        DFA(("a", "a"), np.zeros((1, 2)), 0, [])
    d = DFA.from_table(["\u00e9"], [[0]], 0, [0])
    assert d.letter_index("e\u0301") == 0  # NFC lookup
    with pytest.raises(UnknownSymbolError):
        d.letter_index("x")


def test_product_state_limit() -> None:
    x = parse_regex("(a|b)*a(a|b){4}", ["a", "b"])
    y = parse_regex("(a|b)*b(a|b){4}", ["a", "b"])
    with pytest.raises(LimitExceeded) as err:
        x.product(y, "and", limits=Limits(max_states=50))
    assert err.value.limit == "max_states"
    assert x.product(y, "and").num_states > 50
