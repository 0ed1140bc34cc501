"""Tests for core.synthesis: synthesized formulas are equivalent to their DFAs, and synthesis
succeeds exactly on LTL[P] / LTL[P,MOD] languages (checked against ground truth and brute force)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import UnsupportedError
from langclass.core.logic.formulas import evaluate_batch, operators, parse_formula
from langclass.core.automata.graph import is_partially_ordered as graph_partially_ordered, k_automaton
from langclass.core.synthesis.synthesis import (
    is_partially_ordered, periodic_word, synthesize, synthesize_ltl_p, synthesize_ltl_p_mod, synthesize_periodic_word,
)

GT = json.loads((Path(__file__).parent / "ground_truth.json").read_text())["languages"]


def gt_dfa(entry) -> DFA:
    d = entry["dfa"]
    idx = {s: i for i, s in enumerate(d["states"])}
    table = [[idx[d["transitions"][s][a]] for a in entry["alphabet"]] for s in d["states"]]
    return DFA.from_table(entry["alphabet"], table, idx[d["initial"]], [idx[s] for s in d["accepting"]])


def agrees_on_all_words(formula, dfa: DFA, max_len: int) -> bool:
    """Independent check: the vectorized formula semantics vs. running the DFA, all words ≤ max_len."""
    k = len(dfa.alphabet)
    for n in range(max_len + 1):
        words = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64).reshape(k ** n, n)
        got = evaluate_batch(formula, dfa.alphabet, words)
        want = np.array([dfa.accepting[dfa.run_indices(w)] for w in words.tolist()])
        if not np.array_equal(got, want):
            return False
    return True


@pytest.mark.parametrize("entry", [e for e in GT if e["expected"]["r_trivial"]], ids=lambda e: e["id"])
def test_every_partially_ordered_ground_truth_language_gets_ltl_p(entry):
    A = gt_dfa(entry)
    s = synthesize_ltl_p(A)
    assert s.verified and s.fingerprint == A.fingerprint()
    assert operators(s.formula) <= {"P"}
    assert s.monomials
    assert agrees_on_all_words(s.formula, A, 7 if len(A.alphabet) <= 2 else 5)
    # the text re-parses to the same formula
    assert parse_formula(s.text, A.alphabet) == s.formula


@pytest.mark.parametrize("entry", GT, ids=lambda e: e["id"])
def test_synthesis_succeeds_exactly_on_qr(entry):
    A = gt_dfa(entry)
    if entry["expected"]["qr"]:
        s = synthesize(A)
        assert operators(s.formula) <= {"P", "MOD"}
        assert s.fingerprint == A.fingerprint()
        assert agrees_on_all_words(s.formula, A, 6 if len(A.alphabet) <= 2 else 4)
    elif entry["expected"]["lr_or_ltl_p_y"]:
        s = synthesize(A)
        assert s.method == "window-product" and operators(s.formula) <= {"P", "Y"}
        assert s.fingerprint == A.fingerprint()
        assert agrees_on_all_words(s.formula, A, 6 if len(A.alphabet) <= 2 else 4)
    else:
        with pytest.raises(UnsupportedError) as e:
            synthesize(A)
        assert "LTL[P,MOD]" in e.value.detail and "LTL[P,Y]" in e.value.detail and e.value.extra["certificate"]
    assert is_partially_ordered(A) == entry["expected"]["r_trivial"]


def test_ltl_p_rejects_with_certificate():
    A = gt_dfa(next(e for e in GT if e["id"] == "aa_star"))
    with pytest.raises(UnsupportedError) as e:
        synthesize_ltl_p(A)
    cert = e.value.extra["certificate"]
    assert A.run(cert["u"], cert["p"]) == cert["q"] and A.run(cert["v"], cert["q"]) == cert["p"]


def test_prop_3_2_formula():
    ab = DFA.from_table("ab", [[1, 2], [2, 0], [2, 2]], 0, [0])  # (ab)*
    assert periodic_word(ab) == ("a", "b")
    s = synthesize_periodic_word(ab)
    assert s.method == "periodic-word" and s.word == ("a", "b")
    assert s.text == "MOD(2,1) & !P (MOD(2,0) & a | MOD(2,1) & b)"
    abab = DFA.from_table("ab", [[1, 4], [4, 2], [3, 4], [4, 0], [4, 4]], 0, [0])
    assert periodic_word(abab) == ("a", "b", "a", "b")
    # not of the form (w)*: a*b*, ε-free languages
    assert periodic_word(DFA.from_table("ab", [[0, 1], [2, 1], [2, 2]], 0, [0, 1])) is None
    assert periodic_word(DFA.from_table("ab", [[1, 1], [1, 1]], 0, [1])) is None
    with pytest.raises(UnsupportedError):
        synthesize_periodic_word(DFA.from_table("ab", [[1, 1], [1, 1]], 0, [1]))


def brute_force_qr(A: DFA, max_k: int = 12) -> bool:
    """Some k-automaton (k ≤ max_k) is partially ordered over all states (Thm 3.3 (3))."""
    return any(graph_partially_ordered(k_automaton(A, k, distinct=True)) for k in range(1, max_k + 1))


@st.composite
def random_dfas(draw):
    n = draw(st.integers(1, 5))
    k = draw(st.integers(1, 3))
    table = [[draw(st.integers(0, n - 1)) for _ in range(k)] for _ in range(n)]
    acc = [q for q in range(n) if draw(st.booleans())]
    return DFA.from_table("abc"[:k], table, 0, acc).canonical()


@settings(max_examples=150, deadline=None)
@given(random_dfas())
def test_random_dfas_synthesis_iff_qr(A):
    """Synthesis succeeds ⇔ brute-force QR (k-automaton test), and then agrees on all words ≤ 6."""
    qr = brute_force_qr(A)
    try:
        s = synthesize_ltl_p_mod(A)
    except UnsupportedError:
        assert not qr
        return
    assert qr
    assert agrees_on_all_words(s.formula, A, 6 if len(A.alphabet) <= 2 else 4)
    if is_partially_ordered(A):
        assert synthesize(A).fragment in ("LTL[P]", "Boolean")


@settings(max_examples=120, deadline=None)
@given(random_dfas())
def test_random_dfas_ltl_p_y_synthesis_iff_locally_r_trivial(A):
    """The window-product synthesis succeeds ⇔ the syntactic semigroup is locally R-trivial (the
    classifier's algebraic test, not the window criterion), and the formula agrees with the DFA on
    all words ≤ 6 (≤ 4 over three letters) by the vectorized formula semantics."""
    from langclass.core.classification.analysis import analyze
    from langclass.core.synthesis.synthesis_y import synthesize_ltl_p_y

    lr = analyze(A).classes["ltl_p_y"].member
    try:
        s = synthesize_ltl_p_y(A)
    except UnsupportedError:
        assert not lr
        return
    assert lr and s.verified and operators(s.formula) <= {"P", "Y"}
    assert agrees_on_all_words(s.formula, A, 6 if len(A.alphabet) <= 2 else 4)


def test_ltl_p_y_synthesis_uses_the_least_offset():
    from langclass.core.ingest.parse import parse_regex
    from langclass.core.synthesis.synthesis_y import synthesize_ltl_p_y

    s = synthesize_ltl_p_y(parse_regex("(a|b)*a(a|b)(a|b)", ["a", "b"]))
    assert s.notes[0] == "k = 3" and s.fragment == "LTL[P,Y]"
    assert max(n.k for n in __import__("langclass.core.logic.formulas", fromlist=["subformulas"]).subformulas(s.formula)
               if type(n).__name__ == "Yesterday") == 3
