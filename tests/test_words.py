"""Word enumeration, exact counting (vs brute force and closed forms) and uniform sampling."""

from __future__ import annotations

import collections
import itertools
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError
from langclass.core.ingest.parse import parse_regex
from langclass.core.automata.words import WordSampler, count_words, count_words_table, enumerate_words, sample_word


def test_enumerate_words_shortlex() -> None:
    words = list(enumerate_words(["b", "a"], 2))
    assert words == [(), ("b",), ("a",), ("b", "b"), ("b", "a"), ("a", "b"), ("a", "a")]
    assert list(enumerate_words(["a"], 3, min_length=2)) == [("a", "a"), ("a", "a", "a")]
    assert sum(1 for _ in enumerate_words("abc", 5)) == sum(3**n for n in range(6))


@st.composite
def random_dfas(draw) -> DFA:
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 3))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA(tuple("xyz"[:k]), np.array(table), draw(st.integers(0, n - 1)), np.array(acc))


@settings(max_examples=60, deadline=None)
@given(random_dfas())
def test_counts_match_brute_force(d: DFA) -> None:
    table = count_words_table(d, 6)
    for n in range(7):
        acc = sum(1 for w in itertools.product(d.alphabet, repeat=n) if d.accepts(w))
        assert count_words(d, n) == (acc, d.num_letters**n - acc) == table[n]
        assert WordSampler(d).count(n, True) == acc and WordSampler(d).count(n, False) == d.num_letters**n - acc


def test_counts_closed_forms_for_long_words() -> None:
    # exactly one a over {a,b}: n words; even number of a's: 2^(n-1); third-last is a: 2^(n-1)
    assert count_words(parse_regex("b*ab*", ["a", "b"]), 2000) == (2000, 2**2000 - 2000)
    assert count_words(parse_regex("(b*ab*a)*b*", ["a", "b"]), 3001)[0] == 2**3000
    # words with exactly 3 a's over {a,b,c}
    n = 1500
    assert count_words(parse_regex("(b|c)*a(b|c)*a(b|c)*a(b|c)*", ["a", "b", "c"]), n)[0] == comb(n, 3) * 2 ** (n - 3)
    assert count_words(parse_regex("∅", ["a"]), 10) == (0, 1)
    assert count_words(parse_regex("a*", ["a"]), 0) == (1, 0)


def test_count_rejects_bad_length() -> None:
    d = parse_regex("a*", ["a"])
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(InputError):
            count_words(d, bad)  # type: ignore[arg-type]


def test_sampling_is_uniform_and_correct() -> None:
    d = parse_regex("(a|b)*a(a|b)", ["a", "b"])  # 8 accepted words of length 4
    rng = np.random.default_rng(1)
    draws = [sample_word(d, 4, True, rng) for _ in range(4000)]
    assert all(d.accepts(w) for w in draws)
    counts = collections.Counter(draws)
    assert len(counts) == 8
    # chi-square with 7 degrees of freedom: 99.9% quantile is 24.3
    expected = 4000 / 8
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 24.3
    rejected = [sample_word(d, 4, False, rng) for _ in range(200)]
    assert not any(d.accepts(w) for w in rejected)


def test_sampling_is_uniform_for_a_skewed_language() -> None:
    # a^n or b(a|b)^(n-1): the a-branch has 1 word, the b-branch 2^(n-1); uniform must reflect that
    d = parse_regex("a*|b.*", ["a", "b"])
    rng = np.random.default_rng(7)
    n = 5
    draws = [sample_word(d, n, True, rng) for _ in range(3400)]
    share_a = sum(1 for w in draws if w[0] == "a") / len(draws)
    assert abs(share_a - 1 / 17) < 0.02


def test_sampling_seeded_and_none_when_empty() -> None:
    d = parse_regex("(ab)*", ["a", "b"])
    assert sample_word(d, 3, True, np.random.default_rng(0)) is None
    assert sample_word(d, 0, True, np.random.default_rng(0)) == ()
    x = [sample_word(d, 40, False, np.random.default_rng(5)) for _ in range(2)]
    assert x[0] == x[1] and len(x[0]) == 40
    long = sample_word(parse_regex(".*a.{3}", ["a", "b"]), 3000, True, np.random.default_rng(3))
    assert long is not None and len(long) == 3000 and long[-4] == "a"
