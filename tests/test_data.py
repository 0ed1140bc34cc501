"""Tests of the DFA-based data sampler (langclass.models.training.data)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.models.training.data import LanguageSampler, MAX_SAMPLER_LENGTH

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])  # (aa)* over {a, b}
AB = DFA.from_table(["a", "b"], [[1, 2], [2, 0], [2, 2]], 0, [0])  # (ab)* over {a, b}
# Σ*abΣ* over {a, b}: 0 = no a pending, 1 = last letter a, 2 = seen ab
CONTAINS_AB = DFA.from_table(["a", "b"], [[1, 0], [1, 2], [2, 2]], 0, [2])


def brute(dfa: DFA, n: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """All words of length n split into (accepted, rejected), lexicographic in alphabet order."""
    acc, rej = [], []
    for w in itertools.product(range(dfa.num_letters), repeat=n):
        (acc if dfa.accepting[dfa.run_indices(w)] else rej).append(w)
    return acc, rej


@st.composite
def dfas(draw):
    k = draw(st.integers(1, 3))
    n = draw(st.integers(1, 5))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.integers(0, n - 1), max_size=n))
    return DFA.from_table(["a", "b", "c"][:k], table, 0, acc)


@settings(max_examples=40, deadline=None)
@given(dfas(), st.integers(0, 6))
def test_counts_and_unranking_match_brute_force(dfa, n):
    s = LanguageSampler(dfa, 6)
    acc, rej = brute(dfa, n)
    assert s.count(n) == (len(acc), len(rej))
    # unranking is the lexicographic bijection onto each class
    assert [s.unrank(n, True, r) for r in range(len(acc))] == acc
    assert [s.unrank(n, False, r) for r in range(len(rej))] == rej


def test_counts_agree_with_core_words():
    """Two independent path-counting implementations agree (langclass.core.automata.words is the other)."""
    from langclass.core.automata import words

    for dfa in (CONTAINS_AB, AA, AB):
        s = LanguageSampler(dfa, 60)
        for n in (0, 1, 5, 17, 30, 60):
            assert tuple(words.count_words(dfa, n)) == s.count(n)


def test_exact_big_counts():
    s = LanguageSampler(AB, 500)
    assert s.count(500) == (1, 2**500 - 1)
    assert s.count(499) == (0, 2**499)
    s3 = LanguageSampler(CONTAINS_AB, 400)
    # words avoiding "ab" are exactly b^i a^j: n + 1 of them
    assert s3.count(400) == (2**400 - 401, 401)


def test_sampler_is_uniform_chi_square():
    """Each class of a small language is sampled uniformly (chi-square goodness of fit)."""
    s = LanguageSampler(CONTAINS_AB, 8)
    acc, rej = brute(CONTAINS_AB, 6)  # 57 positives, 7 negatives
    rng = random.Random(12345)
    for accepted, support in ((True, acc), (False, rej)):
        draws = 200 * len(support)
        counts = dict.fromkeys(support, 0)
        for _ in range(draws):
            counts[s.sample(6, accepted, rng)] += 1
        observed = np.array([counts[w] for w in support])
        assert observed.sum() == draws  # every draw is in the right class
        assert chisquare(observed).pvalue > 1e-3
    # a deliberately biased sampler fails the same test, so the test has power
    biased = [0] * len(acc)
    for _ in range(200 * len(acc)):
        i = min(rng.randrange(len(acc)), rng.randrange(len(acc)))
        biased[i] += 1
    assert chisquare(np.array(biased)).pvalue < 1e-6


def test_draw_is_balanced_labelled_and_reproducible():
    s = LanguageSampler(CONTAINS_AB, 20)
    a = s.draw(20, 512, random.Random(7))
    b = s.draw(20, 512, random.Random(7))
    assert a == b
    assert sum(a.labels) == 256
    assert all(CONTAINS_AB.accepts(w) == y for w, y in zip(a.symbols(CONTAINS_AB.alphabet), a.labels))
    kinds = a.kinds
    assert kinds.count("near_miss") == 128 and kinds.count("uniform") == 128
    assert s.draw(20, 512, random.Random(8)) != a


def test_single_class_lengths():
    s = LanguageSampler(AA, 50)
    odd = s.draw(41, 100, random.Random(0))
    assert not any(odd.labels) and len(odd) == 100
    # near misses at odd length include a^41 (insertion into / deletion from a^40, a^42)
    assert (0,) * 41 in set(odd.words)
    even = s.draw(42, 100, random.Random(0))
    assert sum(even.labels) == 50
    assert all(w == (0,) * 42 for w, y in zip(even.words, even.labels) if y)
    # the empty language: every word is a negative
    empty = DFA.from_table(["a", "b"], [[0, 0]], 0, [])
    e = LanguageSampler(empty, 5).draw(5, 10, random.Random(0), near_miss_fraction=0.5)
    assert not any(e.labels) and set(e.kinds) == {"uniform"}


def _edit_distance_one(u, v):
    if len(u) == len(v):
        return sum(x != y for x, y in zip(u, v)) == 1
    if abs(len(u) - len(v)) != 1:
        return False
    short, long_ = (u, v) if len(u) < len(v) else (v, u)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def test_near_misses_are_one_edit_from_a_positive_and_outside_l():
    s = LanguageSampler(AB, 12)
    rng = random.Random(3)
    positives = {n: brute(AB, n)[0] for n in range(0, 12)}
    for n in range(1, 11):
        for _ in range(30):
            w = s.near_miss(n, rng)
            assert w is not None
            assert not AB.accepts([AB.alphabet[i] for i in w])
            srcs = positives[n] + positives[n - 1] + positives[n + 1]
            assert any(_edit_distance_one(w, p) for p in srcs)
            assert s.has_positive_neighbour(w)
    # a negative with no positive within one edit
    far = (1, 1, 1, 1)
    assert not s.has_positive_neighbour(far)
    assert not any(_edit_distance_one(far, p) for n in (3, 4, 5) for p in positives[n])


@settings(max_examples=30, deadline=None)
@given(dfas(), st.integers(0, 5), st.integers(0, 2**32))
def test_edits_leaving_l_match_brute_force(dfa, n, seed):
    s = LanguageSampler(dfa, 6)
    rng = random.Random(seed)
    k = dfa.num_letters
    w = tuple(rng.randrange(k) for _ in range(n))
    acc = lambda u: bool(dfa.accepting[dfa.run_indices(u)])
    subs = [(i, c) for i in range(n) for c in range(k) if c != w[i] and not acc(w[:i] + (c,) + w[i + 1 :])]
    ins = [(i, c) for i in range(n + 1) for c in range(k) if not acc(w[:i] + (c,) + w[i:])]
    dels = [(i, -1) for i in range(n) if not acc(w[:i] + w[i + 1 :])]
    assert s._edits_leaving_l(w, "substitution") == subs
    assert s._edits_leaving_l(w, "insertion") == ins
    assert s._edits_leaving_l(w, "deletion") == dels
    m = s.near_miss(n, rng)
    if m is not None:
        assert not acc(m) and len(m) == n


def test_near_miss_fraction_makes_aa_nontrivial():
    """Uniform negatives of (aa)* almost all contain b; near misses include b-free words."""
    s = LanguageSampler(AA, 40)
    uni = s.draw_mixed(list(range(1, 41)), 2000, random.Random(0), near_miss_fraction=0.0)
    mix = s.draw_mixed(list(range(1, 41)), 2000, random.Random(0))
    b_free_neg = lambda d: sum(1 for w, y in zip(d.words, d.labels) if not y and 1 not in w)
    assert b_free_neg(uni) < 60
    assert b_free_neg(mix) > 250


def test_bad_arguments():
    with pytest.raises(InputError):
        LanguageSampler(AA, -1)
    with pytest.raises(LimitExceeded) as e:
        LanguageSampler(AA, MAX_SAMPLER_LENGTH + 1)
    assert e.value.limit == "max_sample_length"
    s = LanguageSampler(AA, 5)
    with pytest.raises(InputError):
        s.count(7)
    with pytest.raises(InputError):
        s.draw(3, 10, random.Random(0), near_miss_fraction=1.5)
    with pytest.raises(InputError):
        s.unrank(2, True, 5)


R3 = DFA.from_table(["a", "b", "c"], [[1, 2, 0], [3, 0, 1], [2, 3, 3], [0, 1, 2]], 0, [1, 3])


@pytest.mark.parametrize("dfa, digest", [(AB, "fff075486e61e0d3"), (R3, "2132ead799dea08b")])
def test_training_stream_is_pinned(dfa, digest):
    # The digests were computed with the sampler before its memos and count-table walk (commit
    # fa74e3f): the speed work must not change which words a seed draws (the same runs train).
    import hashlib

    b = LanguageSampler(dfa.canonical(), 60).draw_mixed(list(range(1, 41)), 256, random.Random("train/3"))
    assert hashlib.sha256(repr((b.words, b.labels, b.kinds)).encode()).hexdigest()[:16] == digest


def test_memos_do_not_change_the_stream(monkeypatch):
    # Tiny memos (cleared every few words) and no unrank memo at all draw the same words as large ones.
    from langclass.models.training import data
    def stream() -> tuple:
        s = LanguageSampler(R3.canonical(), 60)
        outs = [s.draw_mixed(list(range(1, 41)), 128, random.Random(f"train/{k}")) for k in range(2)]
        return tuple((o.words, o.labels, o.kinds) for o in outs) + (s.draw(30, 64, random.Random(5)).words,)

    ref = stream()
    monkeypatch.setattr(data, "_UNRANK_MEMO_SIZE", 3)
    monkeypatch.setattr(data, "_EDIT_MEMO_SIZE", 2)
    assert stream() == ref
    monkeypatch.setattr(data, "_UNRANK_MEMO_CLASS", -1)
    assert stream() == ref
