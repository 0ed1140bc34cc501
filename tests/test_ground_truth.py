"""The 42 ground-truth languages (tests/ground_truth.json): every expected field and extra fact,
every certificate replayed on the DFA, and the sanity anchors of the theory brief."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from langclass.core.classification.analysis import analyze, format_table
from langclass.core.algebra.classes import replay
from langclass.core.ingest.parse import parse_dfa_json, parse_regex

from _ground_truth import BY_ID as LANGS, EXPECTED_TO_KEY


@lru_cache(maxsize=None)
def analysis_of(lang_id: str):
    lang = LANGS[lang_id]
    dfa = parse_dfa_json({**lang["dfa"], "alphabet": lang["alphabet"]})
    return dfa, analyze(dfa, cross_check=True)


def test_ground_truth_has_42_languages():
    assert len(LANGS) == 42


@pytest.mark.parametrize("lang_id", sorted(LANGS))
def test_expected_fields(lang_id):
    lang = LANGS[lang_id]
    _, r = analysis_of(lang_id)
    exp = lang["expected"]
    for field, key in EXPECTED_TO_KEY.items():
        assert r.classes[key].member == exp[field], (field, r.classes[key].reason)
    assert r.classes["ltl_p_mod"].period == exp["min_k"]


@pytest.mark.parametrize("lang_id", sorted(LANGS))
def test_extra_facts(lang_id):
    ex = LANGS[lang_id]["extra"]
    dfa, r = analysis_of(lang_id)
    x = r.extra
    mine = {
        "l_trivial": x["l_trivial"],
        "definite_ltl_y": x["definite"],
        "reverse_definite": x["reverse_definite"],
        "locally_threshold_testable": r.classes["locally_threshold_testable"].member,
        "locally_l_trivial": x["locally_l_trivial"],
        "stable_semigroup_locally_r_trivial": x["stable_semigroup_locally_r_trivial"],
        "stability_index": x["stability_index"],
        "stable_semigroup_size": x["stable_semigroup_size"],
        "syntactic_monoid_size": x["syntactic_monoid_size"],
        "min_dfa_states": x["min_dfa_states"],
        "identity_in_syntactic_semigroup": x["identity_in_syntactic_semigroup"],
        "partially_ordered_min_dfa": x["partially_ordered_min_dfa"],
        "counter_free_min_dfa": x["counter_free_min_dfa"],
    }
    for k, v in mine.items():
        assert ex[k] == v, k
    assert r.monoid_summary["size"] == ex["syntactic_monoid_size"]
    assert dfa.num_states == len(LANGS[lang_id]["dfa"]["states"])


@pytest.mark.parametrize("lang_id", sorted(LANGS))
def test_certificates_replay(lang_id):
    dfa, r = analysis_of(lang_id)
    for res in r.classes.values():
        replay(dfa, res)
    json.dumps(r.to_dict())  # JSON-ready
    assert format_table(r)


def test_trap_checking_only_reachable_states_of_A_k():
    """((ΣΣ)*a) and (ab|ba)*: A_2 is partially ordered on the states reachable in A_2 but not over all states."""
    from langclass.core.automata.graph import is_partially_ordered, k_automaton

    for lang_id in ("odd_length_ends_a", "ab_or_ba_star"):
        lang = LANGS[lang_id]
        dfa, r = analysis_of(lang_id)
        k = lang["extra"]["min_k_if_only_states_reachable_in_A_k_are_checked"]
        a2 = k_automaton(dfa, k, distinct=True)
        # states reachable in A_k from q0
        import numpy as np

        seen = np.zeros(dfa.num_states, dtype=bool)
        seen[0] = True
        frontier = [0]
        while frontier:
            nxt = []
            for q in frontier:
                for r2 in a2.transitions[q].tolist():
                    if not seen[r2]:
                        seen[r2] = True
                        nxt.append(r2)
            frontier = nxt
        assert is_partially_ordered(a2, states=seen)
        assert not is_partially_ordered(a2)
        assert not seen.all()  # some state is unreachable in A_k: exactly the states a reachable-only check misses
        assert r.classes["ltl_p_mod"].member is False


# ----------------------------------------------------------------------------- sanity anchors (THEORY §1)


def _classify(regex: str, alphabet: str):
    return analyze(parse_regex(regex, list(alphabet)), cross_check=True)


def test_anchor_aa_star_and_ab_star_period_2():
    for rx, al in (("(aa)*", "a"), ("(ab)*", "ab")):
        r = _classify(rx, al)
        assert r.classes["ltl_p_mod"].member and r.classes["ltl_p_mod"].period == 2
        assert r.classes["ltl_p"].member is False
        assert r.encodings["soft"]["encoding"] == "rope_periodic" and r.encodings["soft"]["parameters"]["period"] == 2


def test_anchor_a_sigma_star_in_ltl_p():
    r = _classify("a(a|b)*", "ab")
    assert r.classes["ltl_p"].member and r.encodings["soft"]["encoding"] == "nope"


def test_anchor_sigma_star_a():
    r = _classify("(a|b)*a", "ab")
    assert r.classes["ltl_p_y"].member and not r.classes["ltl_p_mod"].member
    soft = r.encodings["soft"]
    assert soft["encoding"] == "rope" and soft["parameters"]["k"] == 1
    assert soft["parameters"]["n_max"] is not None and soft["parameters"]["n_max"] > 0


def test_anchor_factor_ab():
    r3 = _classify("(a|b|c)*ab(a|b|c)*", "abc")
    assert r3.classes["ltl_p_mod"].member is False and r3.classes["star_free"].member
    r2 = _classify("(a|b)*ab(a|b)*", "ab")
    assert r2.classes["ltl_p"].member


def test_anchor_parity_beyond_ac0_with_z2():
    r = _classify("0*(10*10*)*", "01")
    assert r.classes["fo_mod"].member is False
    assert r.beyond["group"]["name"] == "Z2" and r.beyond["group"]["order"] == 2
    assert r.beyond["all_groups_solvable"] is True
    assert r.encodings["soft"]["encoding"] is None and r.encodings["hard"]["encoding"] is None


def test_anchor_unary_2_or_3_divides_n_has_k_6():
    r = _classify("(aa)*|(aaa)*", "a")
    assert r.classes["ltl_p_mod"].period == 6


def test_incomparability_of_ltl_p_mod_and_star_free():
    aa = _classify("(aa)*", "a")
    ab = _classify("(a|b|c)*ab(a|b|c)*", "abc")
    assert aa.classes["ltl_p_mod"].member and not aa.classes["star_free"].member
    assert ab.classes["star_free"].member and not ab.classes["ltl_p_mod"].member


def test_replay_rejects_tampered_witnesses():
    """The replay is a real check: corrupting a witness makes it fail."""
    import copy

    dfa, r = analysis_of("aa_star")
    cases = [
        ("ltl_p", lambda w: w["u"].append("a")),
        ("star_free", lambda w: w.__setitem__("m", 3)),
        ("stutter_invariant", lambda w: w.__setitem__("uav_accepted", not w["uav_accepted"])),
        ("fo2", lambda w: w.__setitem__("xy_omega", ["a"])),
        ("ltl_p_y", lambda w: w["context"].__setitem__("first_accepted", not w["context"]["first_accepted"])),
    ]
    for key, corrupt in cases:
        d = copy.deepcopy(r.classes[key].to_dict())
        replay(dfa, d)
        corrupt(d["witness"])
        with pytest.raises(AssertionError):
            replay(dfa, d)
    dfa, r = analysis_of("sigma_star_ab_sigma_star_abc")
    d = copy.deepcopy(r.classes["ltl_p_mod"].to_dict())
    d["witness"]["v"] = d["witness"]["v"] + ["b"]
    with pytest.raises(AssertionError):
        replay(dfa, d)
