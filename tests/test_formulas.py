"""Tests for core.formulas: syntax, semantics (three independent evaluators must agree), DFAs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import FormulaSyntaxError, LimitExceeded, UnknownSymbolError, AlphabetError
from langclass.core.logic.formulas import (
    And, Atom, BOTTOM, Iff, Implies, Mod, Not, Or, Past, Since, TOP, Yesterday,
    evaluate, evaluate_batch, formula_to_dfa, fragment, parse_formula, truth_table, formula_from_mapping,
)
from langclass.core.base.limits import Limits

from _ground_truth import LANGUAGES as GT


def gt_dfa(entry) -> DFA:
    d = entry["dfa"]
    names = d["states"]
    idx = {s: i for i, s in enumerate(names)}
    table = [[idx[d["transitions"][s][a]] for a in entry["alphabet"]] for s in names]
    return DFA.from_table(entry["alphabet"], table, idx[d["initial"]], [idx[s] for s in d["accepting"]]).canonical()


def gt(name_prefix: str) -> DFA:
    return gt_dfa(next(e for e in GT if e["name"].startswith(name_prefix)))


# A naive evaluator written straight from the definitions (App. A.1), position by position.
def naive(f, w, i) -> bool:
    N = len(w)
    if isinstance(f, Atom):
        return 1 <= i <= N and w[i - 1] == f.symbol
    if f == TOP:
        return True
    if f == BOTTOM:
        return False
    if isinstance(f, Mod):
        return i % f.m == f.r
    if isinstance(f, Not):
        return not naive(f.arg, w, i)
    if isinstance(f, And):
        return naive(f.left, w, i) and naive(f.right, w, i)
    if isinstance(f, Or):
        return naive(f.left, w, i) or naive(f.right, w, i)
    if isinstance(f, Implies):
        return (not naive(f.left, w, i)) or naive(f.right, w, i)
    if isinstance(f, Iff):
        return naive(f.left, w, i) == naive(f.right, w, i)
    if isinstance(f, Past):
        return any(naive(f.arg, w, j) for j in range(1, i))
    if isinstance(f, Yesterday):
        return i > f.k and naive(f.arg, w, i - f.k)
    if isinstance(f, Since):
        return any(naive(f.right, w, j) and all(naive(f.left, w, l) for l in range(j + 1, i)) for j in range(1, i))
    raise TypeError(f)


AB = ["a", "b"]


def formulas(alphabet, max_leaves=8):
    leaves = st.one_of(
        st.sampled_from([Atom(s) for s in alphabet]),
        st.just(TOP), st.just(BOTTOM),
        st.builds(lambda m, r: Mod(m, r % m), st.integers(2, 4), st.integers(0, 3)),
    )

    def extend(children):
        return st.one_of(
            st.builds(Not, children), st.builds(Past, children),
            st.builds(Yesterday, children, st.integers(1, 3)),
            st.builds(And, children, children), st.builds(Or, children, children),
            st.builds(Implies, children, children), st.builds(Iff, children, children),
            st.builds(Since, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def all_words(alphabet, n):
    for length in range(n + 1):
        yield from itertools.product(alphabet, repeat=length)


# ------------------------------------------------------------------------ syntax
@pytest.mark.parametrize("text,expected", [
    ("P(b & Y a)", Past(And(Atom("b"), Yesterday(Atom("a"))))),
    ("MOD(2,1) -> a", Implies(Mod(2, 1), Atom("a"))),
    ("a S b", Since(Atom("a"), Atom("b"))),
    ("Y^3 a", Yesterday(Atom("a"), 3)),
    ("MOD_3^4", Mod(3, 1)),
    ("¬ P ⊤ ∧ ⊥", And(Not(Past(TOP)), BOTTOM)),
    ("a -> b -> a", Implies(Atom("a"), Implies(Atom("b"), Atom("a")))),
    ("a | b & a", Or(Atom("a"), And(Atom("b"), Atom("a")))),
    ("a & b S a", And(Atom("a"), Since(Atom("b"), Atom("a")))),
    ("a S b S a", Since(Atom("a"), Since(Atom("b"), Atom("a")))),
    ("P Y a", Past(Yesterday(Atom("a")))),
    ("MOD(1,0)", TOP),
])
def test_parse_examples(text, expected):
    assert parse_formula(text, AB) == expected


def test_quoted_and_keyword_symbols():
    f = parse_formula('P "P" & \'S\' & x1', ["P", "S", "x1"])
    assert f == And(And(Past(Atom("P")), Atom("S")), Atom("x1"))
    assert parse_formula(f.text(), ["P", "S", "x1"]) == f


@pytest.mark.parametrize("text,position", [("P(", 2), ("a &", 3), ("a b", 2), ("(a", 2), ("a $ b", 2), ("a & & b", 4), ("", 0)])
def test_syntax_errors_name_position(text, position):
    with pytest.raises(FormulaSyntaxError) as e:
        parse_formula(text, AB)
    assert e.value.extra["position"] == position
    assert "position" in e.value.detail


def test_unknown_symbol_and_hint():
    with pytest.raises(UnknownSymbolError) as e:
        parse_formula("a & c", AB)
    assert e.value.extra["position"] == 4
    with pytest.raises(UnknownSymbolError, match="write 'P a'"):
        parse_formula("Pa", AB)


def test_limits_and_alphabet():
    with pytest.raises(LimitExceeded) as e:
        parse_formula("(" * 30 + "a" + ")" * 30, AB, Limits(max_nesting_depth=20))
    assert e.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded) as e:
        parse_formula("P " * 50 + "a", AB, Limits(max_nesting_depth=20))
    assert e.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded):
        parse_formula("a" * 20, AB, Limits(max_regex_length=10))
    with pytest.raises(LimitExceeded):
        parse_formula("MOD(5000,1)", AB)
    with pytest.raises(AlphabetError):
        parse_formula("a", [])
    with pytest.raises(FormulaSyntaxError):
        parse_formula("MOD(0,0)", AB)


@settings(max_examples=150, deadline=None)
@given(formulas(["a", "b", "P"]))
def test_render_parse_roundtrip(f):
    assert parse_formula(f.text(), ["a", "b", "P"]) == f


# ------------------------------------------------------------------------ semantics
def test_semantics_at_positions():
    # strictness: P and S never look at the current position; Y fails at position 1
    assert not evaluate("P a", "a", AB, position=1)
    assert evaluate("P a", "a", AB, position=2)
    assert not evaluate("Y a", "a", AB, position=1)
    assert evaluate("Y a", "a", AB)  # readout N+1 = 2 looks at w_1
    assert not evaluate("a", "a", AB)  # no atom holds at the readout position
    assert evaluate("b S a", "abb", list("abc")) and not evaluate("b S a", "acb", list("abc")) and not evaluate("b S a", "a", list("abc"), position=1)
    assert evaluate("MOD(2,1)", "", AB) and not evaluate("MOD(2,1)", "a", AB)
    assert evaluate("!P true", "ab", AB, position=1) and not evaluate("!P true", "ab", AB, position=2)
    assert evaluate("Y^2 a", "ab", AB) and not evaluate("Y^2 a", "ba", AB) and not evaluate("Y^2 a", "a", AB)


@settings(max_examples=120, deadline=None)
@given(formulas(["a", "b"]))
def test_three_evaluators_agree(f):
    """Vectorized truth tables, the naive definition, and the compiled DFA agree on all words ≤ 6."""
    dfa = formula_to_dfa(f, AB)
    for n in range(7):
        words = np.array(list(itertools.product(range(2), repeat=n)), dtype=np.int64).reshape(2**n, n)
        table = truth_table(f, AB, words)[f]
        for row, w in zip(table, words):
            ws = [AB[i] for i in w]
            for i in range(1, n + 2):
                assert row[i] == naive(f, ws, i), (f.text(), ws, i)
            assert dfa.accepts(ws) == row[n + 1]


@pytest.mark.parametrize("text,alphabet,name", [
    ("MOD(2,1)", ["a"], "(aa)* over {a}"),
    ("MOD(2,1) & !P((MOD(2,1) & !a) | (MOD(2,0) & !b))", AB, "(ab)* over {a,b}"),
    ("P(a & !P true)", AB, "a Sigma* (starts with a)"),
    ("Y a", AB, "Sigma* a (ends with a)"),
    ("P(b & Y a)", ["a", "b", "c"], "Sigma* ab Sigma* (factor ab) over {a,b,c}"),
    ("P(a & P a)", AB, "at least two a's"),
    ("P(b & MOD(2,0) & !P b)", AB, "first b occurs at an even position"),
    ("P(a & MOD(2,0))", AB, "some a at an even position"),
    ("MOD(3,1)", AB, "length = 0 mod 3"),
    ("P(d & !P(c | d)) & !P((a | d) & P(d & !P(c | d)))", ["a", "b", "c", "d"], "{a,b}* d {b,c}*"),
    ("(P a & !P (a & P a)) & true", AB, "exactly one a"),
])
def test_formulas_define_ground_truth_languages(text, alphabet, name):
    dfa = formula_to_dfa(text, alphabet)
    target = gt(name)
    assert dfa.fingerprint() == target.fingerprint(), dfa.counterexample(target)


def test_formula_to_dfa_limits_and_mapping():
    with pytest.raises(LimitExceeded) as e:
        formula_to_dfa("Y^12 a", AB, Limits(max_states=100))
    assert e.value.limit == "max_states"
    f, alpha = formula_from_mapping({"formula": "Y a", "alphabet": ["a", "b"]})
    assert alpha == ("a", "b") and f == Yesterday(Atom("a"))
    assert fragment(parse_formula("P a & Y b & MOD(2,0)", AB)) == "LTL[P,Y,MOD]"
    assert fragment(parse_formula("a S b", AB)) == "LTL[S]"
    assert evaluate_batch("Y a", AB, np.array([[0, 0], [0, 1]])).tolist() == [True, False]


def test_formula_text_is_nfc_normalized_before_tokenizing():
    """A decomposed letter (e + combining acute) is the alphabet's NFC symbol "é", as in regexes."""
    from langclass.core.logic.formulas import formula_to_dfa
    from langclass.core.ingest.parse import parse_regex

    assert formula_to_dfa("P e\u0301", ["é", "a"]).fingerprint() == parse_regex(".*é.*", ["é", "a"]).fingerprint()
