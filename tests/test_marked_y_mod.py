"""LTL[P,Y,MOD] through the marked alphabet (issue 22, item 2): the least modulus, its replayable search,
and the synthesized formulas — against a tuple brute force of the algebraic criterion (η((Σ^m)⁺) locally
R-trivial), against the automaton decider of LTL[P,Y] on the marked language, and by evaluation."""

from __future__ import annotations

import dataclasses
import doctest
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from _local_brute import LocalBrute, small_dfas
from langclass.core.algebra.classes import Context, decide_ltl_p_y, ltl_p_y_delay
from langclass.core.algebra.classes.replaykit import ReplayError
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded, UnsupportedError
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex
from langclass.core.logic.formulas import evaluate_batch, operators
from langclass.core.synthesis import marked_y_mod
from langclass.core.synthesis.marked_y_mod import (
    MarkedSearch, ltl_p_y_mod_search, marked_alphabet, marked_dfa, replay_marked_search, synthesize_ltl_p_y_mod,
)

EXAMPLES = [  # regex, alphabet, least modulus (None: not in LTL[P,Y,MOD]), stability index
    ("((a|b)(a|b))*(a|b)a", "ab", 2, 2),  # the example: in neither LTL[P,Y] nor LTL[P,MOD]
    ("(ab|ba)*", "ab", 2, 4),
    ("(a|b|c)*ac*", "abc", None, 1),  # star-free, outside LTL[P,Y,MOD]
    ("(aa)*", "a", 2, 2),
    ("(a|b)*a", "ab", 1, 1),
    ("(ab)*", "ab", 1, 2),  # locally testable: m = 1 < s
    ("0*(10*10*)*", "01", None, 1),  # parity: not even quasi-aperiodic
]


def _works(A: DFA, m: int) -> bool:
    K = marked_dfa(A, m)
    return bool(decide_ltl_p_y(Context(K, transition_monoid(K))).member)


@pytest.mark.parametrize("regex,alphabet,modulus,s", EXAMPLES)
def test_known_languages(regex, alphabet, modulus, s):
    A = parse_regex(regex, list(alphabet))
    search = ltl_p_y_mod_search(A)
    assert (search.modulus, search.stability_index) == (modulus, s)
    if modulus is not None:
        assert [t.m for t in search.tries] == list(range(1, modulus + 1)) and search.group is None
    else:
        assert [t.m for t in search.tries] == [s] or (not search.tries and search.group is not None)
    replay_marked_search(A, search.to_dict())
    assert LocalBrute(A).least_y_mod_modulus() == modulus


def test_marked_dfa_is_the_marking_of_the_language():
    """K_m accepts the marking of w iff w ∈ L, and rejects every badly marked word (all words ≤ 6)."""
    A = parse_regex("(ab|ba)*b?", ["a", "b"])
    for m in (1, 2, 3):
        K = marked_dfa(A, m)
        names, decode = marked_alphabet(A.alphabet, m)
        assert K.alphabet == names and len(set(names)) == len(names) == 2 * m
        for n in range(7):
            for w in itertools.product(names, repeat=n):
                valid = all(decode[x][1] == (i + 1) % m for i, x in enumerate(w))
                letters = [decode[x][0] for x in w]
                assert K.accepts(list(w)) == (valid and A.accepts(letters))


def test_marked_alphabet_names_are_distinct_for_letters_that_contain_the_mark():
    names, decode = marked_alphabet(("a", "a@1", "1"), 12)
    assert len(set(names)) == 36 and all(decode[n] == (n.rsplit("@", 1)[0], int(n.rsplit("@", 1)[1])) for n in names)


CROSS_LIMITS = Limits(max_monoid_size=20_000)
"""The marked monoids grow as m²·|M|; a draw past this is left out (the limit itself is tested below)."""


def _check_against_brute(A: DFA) -> None:
    try:
        search = ltl_p_y_mod_search(A, CROSS_LIMITS)
    except LimitExceeded:
        return
    brute = LocalBrute(A)
    assert search.stability_index == brute.s
    assert search.modulus == brute.least_y_mod_modulus()
    searches = [search]
    if search.group is not None and brute.s <= 6:  # the same answer on K_s, without the group shortcut
        try:
            searches.append(ltl_p_y_mod_search(A, CROSS_LIMITS, stable_group_first=False))
        except LimitExceeded:
            pass
        assert searches[-1].modulus is None
    for one in searches:
        for t in one.tries:  # each K_m answer is the brute criterion η((Σ^m)⁺) ∈ LR
            assert t.member == brute.locally_r_trivial(brute.u(t.m))
        replay_marked_search(A, one.to_dict())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=2))
def test_search_matches_the_brute_force_criterion(A):
    _check_against_brute(A)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=5, k_max=3))
def test_search_matches_the_brute_force_criterion_many(A):
    _check_against_brute(A)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=2))
def test_working_moduli_are_closed_under_multiples_and_s_works_iff_any_does(A):
    """The docstring's bound: m works ⇒ 2m works, and some m ≤ 2s works ⇒ s works; the two LTL[P,Y]
    deciders (local R-triviality and the window-product delay) agree on every K_m (s ≤ 3 here: the
    marked monoids grow as m²·|M|)."""
    s = transition_monoid(A).stability_index
    if s > 3:
        return
    works = {}
    for m in range(1, 2 * s + 1):
        works[m] = _works(A, m)
        K = marked_dfa(A, m)
        assert (ltl_p_y_delay(K, max_k=K.num_states) is not None) == works[m]
    for m in range(1, s + 1):
        assert not works[m] or works[2 * m]
    assert works[s] == any(works.values())


def _tampered(search: MarkedSearch, A: DFA) -> list[tuple[str, dict]]:
    """Records each with one field changed; every one must fail to replay."""
    d = search.to_dict()
    out = [("modulus", {**d, "modulus": (d["modulus"] or 0) + 1}),
           ("stability_index", {**d, "stability_index": d["stability_index"] + 1}),
           ("tries dropped", {**d, "tries": d["tries"][1:]}),
           ("tries empty", {**d, "tries": []})]
    if d["group"] is not None:
        g = d["group"]
        return out[:2] + [("group x", {**d, "group": {**g, "x": g["x"] + g["x"]}}),
                          ("group context", {**d, "group": {**g, "context": {
                              **g["context"], "first_accepted": not g["context"]["first_accepted"]}}}),
                          ("group and a try", {**d, "tries": [{"m": 1, "member": False, "certificate": None,
                                                               "witness": None}]}),
                          ("group dropped", {**d, "group": None})]
    last = d["tries"][-1]
    out.append(("member flipped", {**d, "tries": d["tries"][:-1] + [{**last, "member": not last["member"]}]}))
    out.append(("m changed", {**d, "tries": d["tries"][:-1] + [{**last, "m": last["m"] + 1}]}))
    if d["modulus"] is not None:
        out.append(("modulus none", {**d, "modulus": None}))
    if not d["tries"][0]["member"]:
        first = d["tries"][0]
        wit = first["witness"]
        for key, value in (("e", wit["x"] + wit["y"]), ("x", wit["y"]), ("y", wit["x"]), ("u", []), ("v", [])):
            out.append((f"witness {key}", {**d, "tries": [{**first, "witness": {**wit, key: value}}] + d["tries"][1:]}))
        ctx = wit["context"]
        out.append(("witness context", {**d, "tries": [{**first, "witness": {**wit, "context": {
            **ctx, "first_accepted": not ctx["first_accepted"]}}}] + d["tries"][1:]}))
    return out


@pytest.mark.parametrize("regex,alphabet,group_first", [
    ("((a|b)(a|b))*(a|b)a", "ab", True), ("(ab|ba)*", "ab", True), ("(a|b|c)*ac*", "abc", True),
    ("0*(10*10*)*", "01", True), ("0*(10*10*)*", "01", False), ("(aa|b)*", "ab", True), ("(aa|b)*", "ab", False),
])
def test_every_field_of_the_search_is_checked(regex, alphabet, group_first):
    A = parse_regex(regex, list(alphabet))
    search = ltl_p_y_mod_search(A, stable_group_first=group_first)
    assert (search.group is not None) == (group_first and regex == "0*(10*10*)*")  # (aa|b)*: no group in T
    replay_marked_search(A, search)
    for what, record in _tampered(search, A):
        with pytest.raises(ReplayError):
            replay_marked_search(A, record)
            pytest.fail(f"the tampered {what} replays")
    if search.modulus is not None:  # the certificate of the working K_m: a word of its monoid changed
        d = search.to_dict()
        last = d["tries"][-1]
        mon = last["certificate"]["monoid"]
        bad = {**last, "certificate": {**last["certificate"], "monoid": {**mon, "letters": mon["letters"][::-1]}}}
        if mon["letters"] != mon["letters"][::-1]:
            with pytest.raises(ReplayError):
                replay_marked_search(A, {**d, "tries": d["tries"][:-1] + [bad]})
    with pytest.raises(ReplayError):
        replay_marked_search(A, {"modulus": 1})


def test_a_search_replays_only_on_its_own_language():
    A = parse_regex("((a|b)(a|b))*(a|b)a", ["a", "b"])
    B = parse_regex("(ab|ba)*", ["a", "b"])
    with pytest.raises(ReplayError):
        replay_marked_search(B, ltl_p_y_mod_search(A).to_dict())


# ------------------------------------------------------------------------------------------------ formulas
def _all_words(k: int, n: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64).reshape(k ** n, n)


def _agrees_on_words(formula, A: DFA, n_max: int) -> None:
    for n in range(n_max + 1):
        W = _all_words(A.num_letters, n)
        want = np.array([A.accepts([A.alphabet[i] for i in w]) for w in W], dtype=bool)
        assert (evaluate_batch(formula, A.alphabet, W) == want).all(), n


@pytest.mark.parametrize("regex,alphabet,modulus,s", [e for e in EXAMPLES if e[2] is not None])
def test_synthesized_formulas_define_the_language(regex, alphabet, modulus, s):
    A = parse_regex(regex, list(alphabet))
    syn = synthesize_ltl_p_y_mod(A)
    assert syn.verified and syn.method == "marked-window-product"
    assert syn.notes[0] == f"modulus m = {modulus} (stability index s = {s}; least working modulus {modulus})"
    ops = operators(syn.formula)
    assert "S" not in ops and (("MOD" in ops) == (modulus > 1))
    _agrees_on_words(syn.formula, A, 9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=2))
def test_random_members_get_a_formula_and_non_members_an_answer(A):
    search = ltl_p_y_mod_search(A)
    if search.modulus is None:
        with pytest.raises(UnsupportedError, match="not in LTL\\[P,Y,MOD\\]"):
            synthesize_ltl_p_y_mod(A)
        return
    syn = synthesize_ltl_p_y_mod(A)
    _agrees_on_words(syn.formula, A, 7)
    if search.modulus < search.stability_index:  # a larger working m gives a formula too
        _agrees_on_words(synthesize_ltl_p_y_mod(A, modulus=search.stability_index).formula, A, 6)


def test_a_modulus_that_does_not_work_is_refused():
    A = parse_regex("((a|b)(a|b))*(a|b)a", ["a", "b"])
    for m in (1, 3, 0):
        with pytest.raises(UnsupportedError) as e:
            synthesize_ltl_p_y_mod(A, modulus=m)
        assert e.value.field == "modulus"
    assert synthesize_ltl_p_y_mod(A, modulus=4).verified


def test_limits_hold_and_are_named():
    A = parse_regex("(ab|ba)*", ["a", "b"])
    with pytest.raises(LimitExceeded) as e:
        ltl_p_y_mod_search(A, Limits(max_states=A.canonical().num_states * 2))  # K_2 needs 2n + 1 states
    assert e.value.limit == "max_states"
    B = parse_regex("((a|b)(a|b)(a|b))*(a|b)a", ["a", "b"])  # m = 3; |M| = 7, K_2's monoid has 26 elements
    with pytest.raises(LimitExceeded) as e:
        ltl_p_y_mod_search(B, Limits(max_monoid_size=20))
    assert e.value.limit == "max_monoid_size"
    assert transition_monoid(B.canonical()).size <= 20 and ltl_p_y_mod_search(B).modulus == 3


def test_marked_dfa_refuses_a_modulus_below_one():
    with pytest.raises(ValueError):
        marked_dfa(parse_regex("a", ["a"]), 0)


def test_docstring_examples():
    assert doctest.testmod(marked_y_mod, optionflags=doctest.ELLIPSIS).failed == 0


def test_search_record_round_trips():
    search = ltl_p_y_mod_search(parse_regex("(ab|ba)*", ["a", "b"]))
    assert MarkedSearch.from_dict(search.to_dict()) == search
    assert dataclasses.replace(search, modulus=None).member is False and search.member
