"""Star-free languages from their automata (issue 13 item 3): past-LTL formulas with S by the local
divisor induction (checked against the DFA by an independent evaluator and, where feasible, by
formula → DFA equivalence), B-RASP narrowing, and the hard-attention construction end to end."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.logic.brasp import formula_to_brasp, run_program
from langclass.core.logic.brasp_width import ATTENTION_COST, narrow_program
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.logic.formulas import evaluate_batch, operators
from langclass.core.ingest.parse import parse_regex
from langclass.core.synthesis.starfree import MAX_STAR_FREE_MONOID, synthesize_star_free
from langclass.models.construct.verify import run_construction

from _ground_truth import LANGUAGES as GT


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def all_words(k: int, n: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64).reshape(k ** n, n)


def agrees(formula, A: DFA, max_len: int) -> bool:
    """The vectorized formula semantics against running the DFA on every word ≤ max_len."""
    for n in range(max_len + 1):
        w = all_words(len(A.alphabet), n)
        want = np.array([A.accepting[A.run_indices(x)] for x in w.tolist()])
        if not np.array_equal(evaluate_batch(formula, A.alphabet, w), want):
            return False
    return True


def gt_dfa(entry) -> DFA:
    d = entry["dfa"]
    idx = {s: i for i, s in enumerate(d["states"])}
    table = [[idx[d["transitions"][s][a]] for a in entry["alphabet"]] for s in d["states"]]
    return DFA.from_table(entry["alphabet"], table, idx[d["initial"]], [idx[s] for s in d["accepting"]])


@st.composite
def random_dfas(draw):
    n = draw(st.integers(1, 5))
    k = draw(st.integers(1, 3))
    table = [[draw(st.integers(0, n - 1)) for _ in range(k)] for _ in range(n)]
    acc = [q for q in range(n) if draw(st.booleans())]
    return DFA.from_table("abc"[:k], table, 0, acc).canonical()


@settings(max_examples=80, deadline=None)
@given(random_dfas())
def test_random_dfas_star_free_synthesis_iff_aperiodic(A):
    """Synthesis succeeds ⇔ the classifier says star-free; the formula uses only P, Y, S and agrees
    with the DFA on all words ≤ 6 (≤ 4 over three letters); a proved result has the DFA's fingerprint."""
    an = analyze(A)
    sf = an.classes["star_free"].member
    if len(an.monoid.elements) > MAX_STAR_FREE_MONOID:  # a 5-state DFA's monoid can have up to 5^5 elements
        with pytest.raises(LimitExceeded) as err:
            synthesize_star_free(A)
        assert err.value.extra["limit"] == "max_star_free_monoid"
        return
    try:
        s = synthesize_star_free(A)
    except UnsupportedError:
        assert not sf
        return
    assert sf and operators(s.formula) <= {"P", "Y", "S"}
    assert agrees(s.formula, A, 6 if len(A.alphabet) <= 2 else 4)
    if s.verified:
        assert s.fingerprint == A.fingerprint()


@pytest.mark.parametrize("entry", [e for e in GT if e["expected"]["star_free"] and len(e["dfa"]["states"]) <= 5],
                         ids=lambda e: e["id"])
def test_star_free_ground_truth_languages_get_formulas(entry):
    A = gt_dfa(entry)
    s = synthesize_star_free(A)
    assert s.method == "local-divisors" and operators(s.formula) <= {"P", "Y", "S"}
    assert agrees(s.formula, A, 6 if len(A.alphabet) <= 2 else 3)


@pytest.mark.parametrize("entry", [e for e in GT if not e["expected"]["star_free"]][:4], ids=lambda e: e["id"])
def test_non_star_free_is_refused(entry):
    with pytest.raises(UnsupportedError, match="not star-free"):
        synthesize_star_free(gt_dfa(entry))


def test_narrowing_keeps_every_vector():
    A = parse_regex("(ab|ba)*", ["a", "b"])
    prog = formula_to_brasp(synthesize_star_free(A).formula, ["a", "b"])
    narrow = narrow_program(prog)
    assert len(narrow.ops) > len(prog.ops) and narrow.output == prog.output
    rng = np.random.default_rng(0)
    words = np.concatenate([all_words(2, 7), rng.integers(0, 2, (64, 7))])
    a, b = run_program(prog, words), run_program(narrow, words)
    assert all(np.array_equal(a[name], b[name]) for name in a)  # same value for every original vector
    small = formula_to_brasp("P(b & Y a)", ["a", "b"])
    assert narrow_program(small) is small  # nothing wide: unchanged
    with pytest.raises(ValueError):
        narrow_program(prog, ATTENTION_COST)


def _local_divisor_synthesis(r: dict) -> dict:
    """The local-divisor synthesis of a hard-attention record: the record's own when that route was
    built, else its candidate's (the cascade built; the formula compared, ``built: false``)."""
    if r["route"]["route"] == "cascade":
        candidate = r["route"]["candidates"]["local-divisors"]
        assert candidate["built"] is False and r["synthesis"] is None and r["formula"] is None
        return candidate["synthesis"]
    return r["synthesis"]


@pytest.mark.parametrize("regex,alphabet", [("(0|1|2)*02*", "012"), ("c*a((a|b|c)*a)?c*", "abc")])
def test_star_free_languages_build_with_hard_attention_from_the_regex(regex, alphabet):
    r = run_construction({"regex": regex, "alphabet": list(alphabet), "all_words_up_to": 6, "random_words": 2,
                          "random_max_length": 100})
    assert r["attention"] == "hard" and _local_divisor_synthesis(r)["method"] == "local-divisors"
    assert r["exact"] and r["agrees_with_dfa"] and r["all_words_up_to"] == 6, r["first_failure"]


def test_fo_mod_only_language_builds_with_position_marks():
    """((a|b)(a|b))*a is in FO[<,MOD] only (not star-free, not LTL[P,MOD] or LTL[P,Y]): hard attention
    with the marks i mod 2 (tests/test_fo_mod.py covers the construction)."""
    r = run_construction({"regex": "((a|b)(a|b))*a", "alphabet": ["a", "b"], "attention": "hard", "all_words_up_to": 6,
                          "random_words": 1, "random_max_length": 50})
    assert r["attention"] == "hard" and r["encoding"] == "mod_onehot" and r["exact"]
    # without a choice of attention it is built soft: it is in LTL[P,Y,MOD] (periodic RoPE + recency heads)


def test_hard_attention_on_a_star_free_periodic_language_uses_the_star_free_formula():
    """(ab)* is in LTL[P,MOD] (a MOD formula, no NoPE hard attention) and star-free: hard attention
    gets the local-divisor formula instead; (aa)* is not star-free and gets the marks i mod 2."""
    r = run_construction({"regex": "(ab)*", "alphabet": ["a", "b"], "attention": "hard", "all_words_up_to": 8,
                          "random_words": 2, "random_max_length": 100})
    assert r["attention"] == "hard" and _local_divisor_synthesis(r)["method"] == "local-divisors" and r["exact"]
    r = run_construction({"regex": "(aa)*", "alphabet": ["a"], "attention": "hard", "all_words_up_to": 8})
    assert r["encoding"] == "mod_onehot" and r["modulus"] == 2 and r["exact"]  # not star-free: position marks
