"""Lattice consistency, inference, encoding choice and the analysis record's shape."""

from __future__ import annotations

import json
import time

import pytest

from langclass.core.classification.analysis import analyze, format_table
from langclass.core.algebra.classes import replay
from langclass.core.automata.automaton import DFA
from langclass.core.precision.encoding_choice import choose_encodings, encoding_catalogue
from langclass.core.algebra.lattice import (
    CLASS_INFO,
    CLASS_KEYS,
    INCLUSIONS,
    LatticeViolation,
    check_consistency,
    implied_by,
    infer,
)
from langclass.core.ingest.parse import parse_regex

ALL_TRUE = {k: True for k in CLASS_KEYS}


def test_class_keys_and_info():
    assert set(CLASS_KEYS) >= {"ltl_p", "ltl_p_mod", "ltl_p_y", "star_free", "stutter_invariant", "fo2", "fo2_mod",
                                "fo_mod", "piecewise_testable", "locally_testable", "locally_threshold_testable"}
    for key, info in CLASS_INFO.items():
        d = info.to_dict()
        assert d["key"] == key and d["name"] and d["logic"] and d["algebra"] and d["source"]
    assert "Thm 3.3" in CLASS_INFO["ltl_p_mod"].source


@pytest.mark.parametrize("sub,sup", INCLUSIONS)
def test_each_inclusion_is_asserted(sub, sup):
    members = {k: None for k in CLASS_KEYS}
    members[sub] = True
    members[sup] = False
    with pytest.raises(LatticeViolation):
        check_consistency(members)


def test_theory_inclusions_present():
    for sub, sup in [("ltl_p", "ltl_p_mod"), ("ltl_p_mod", "fo_mod"), ("ltl_p", "ltl_p_y"), ("ltl_p_y", "star_free"),
                     ("star_free", "fo_mod"), ("ltl_p", "fo2"), ("fo2", "star_free"), ("ltl_p_mod", "fo2_mod"),
                     ("fo2_mod", "fo_mod")]:
        assert sup in implied_by(sub)


def test_period_side_conditions():
    m = dict(ALL_TRUE, group=False)
    check_consistency(m, period=1)
    with pytest.raises(LatticeViolation):
        check_consistency(m, period=2)  # LTL[P] but k = 2
    with pytest.raises(LatticeViolation):
        check_consistency(m, period=None)
    m2 = dict(m, ltl_p=False, ltl_p_mod=False, piecewise_testable=False)
    with pytest.raises(LatticeViolation):
        check_consistency(m2, period=3)
    with pytest.raises(LatticeViolation):
        check_consistency(dict(ALL_TRUE), period=1, monoid_size=2)  # aperiodic group with 2 elements


def test_infer_fills_implied_answers():
    m = {k: None for k in CLASS_KEYS}
    m["ltl_p"] = True
    got = infer(m)
    for sup in ("ltl_p_mod", "ltl_p_y", "star_free", "fo2", "fo2_mod", "fo_mod"):
        assert got[sup][0] is True
    assert "piecewise_testable" not in got
    m = {k: None for k in CLASS_KEYS}
    m["star_free"] = False
    got = infer(m)
    for sub in ("ltl_p", "ltl_p_y", "fo2", "piecewise_testable", "locally_testable", "locally_threshold_testable"):
        assert got[sub][0] is False
    assert "fo_mod" not in got


def test_encoding_choice_table():
    base = {k: False for k in CLASS_KEYS}
    e = choose_encodings(dict(base, ltl_p=True, star_free=True, stutter_invariant=True, fo_mod=True), period=1)
    assert e["soft"]["encoding"] == "nope" and e["hard"]["parameters"]["mask"] == "nonstrict"
    e = choose_encodings(dict(base, ltl_p_mod=True, fo_mod=True), period=3, stability_index=3)
    assert e["soft"]["encoding"] == "rope_periodic" and e["soft"]["parameters"]["period"] == 3
    assert e["soft"]["alternatives"][0]["encoding"] == "sinusoidal_periodic"
    assert e["hard"]["encoding"] == "mod_onehot" and e["hard"]["parameters"]["modulus"] == 3
    assert e["hard"]["build"] == {"name": "mod_onehot", "period": 3}  # a finite-image PE (Thm 19)
    alt = e["hard"]["alternatives"][0]  # the rational sinusoidal PE of Cor 20
    assert alt["encoding"] == "sinusoidal_periodic" and alt["build"] == {"name": "sinusoidal_periodic", "periods": 3}
    e = choose_encodings(dict(base, ltl_p_y=True, star_free=True, fo_mod=True), delay=1)
    assert e["soft"]["encoding"] == "rope" and e["soft"]["parameters"]["n_max"] >= 1
    assert e["soft"]["parameters"]["f_large"] > 100  # float32
    rec = e["soft"]["alternatives"][0]  # the recency construction: all lengths
    assert rec["encoding"] == "alibi" and rec["length_guarantee"].startswith("all lengths")
    assert e["hard"]["parameters"]["mask"] == "strict"
    e = choose_encodings(base)
    assert e["soft"]["encoding"] is None and e["hard"]["encoding"] is None
    e = choose_encodings(dict(base, ltl_p=None, ltl_p_mod=None, star_free=None))
    assert e["soft"].get("undecided") and e["hard"].get("undecided")


def test_catalogue():
    cat = encoding_catalogue()
    names = {c["encoding"] for c in cat}
    assert {"nope", "rope_periodic", "sinusoidal_periodic", "rope", "alibi"} <= names
    for c in cat:
        assert c["class"] in CLASS_INFO and c["source"] and c["attention"] in ("soft", "hard")
    json.dumps(cat)


def test_analysis_record_shape():
    r = analyze(parse_regex("(ab)*", ["a", "b"]))
    d = json.loads(json.dumps(r.to_dict()))
    assert d["num_states"] == 3
    for k in ("size", "semigroup_size", "idempotents", "stability_index", "stable_semigroup_size"):
        assert k in d["monoid"]
    assert set(d["classes"]) == set(CLASS_KEYS)
    for key, c in d["classes"].items():
        for f in ("key", "name", "logic", "algebra", "member", "reason", "certificate", "witness", "source"):
            assert f in c
        assert c["key"] == key
        assert (c["witness"] is None) == (c["member"] is not False)
    assert d["classes"]["ltl_p_mod"]["period"] == 2
    assert set(d["encodings"]) == {"soft", "hard", "causal"}
    assert all(e["setting"] for e in d["encodings"].values())  # each family says which setting it answers for
    text = format_table(r)
    assert "LTL[P,MOD]" in text and "periodic RoPE with period 2" in text


def test_trivial_languages():
    for acc in ([0], []):
        r = analyze(DFA.from_table("ab", [[0, 0]], 0, acc))
        assert all(c.member for c in r.classes.values())
        assert r.monoid_summary["size"] == 1


def test_over_cap_answers_agree_with_full_analysis():
    """With a tiny monoid cap, every answer given (automaton tests, counters, lattice inference)
    equals the full analysis; the rest are None with the limit named."""
    import random

    from langclass.core.base.limits import Limits

    rng = random.Random(9)
    checked = 0
    while checked < 60:
        n, k = rng.randint(2, 6), rng.randint(1, 3)
        d = DFA.from_table("abc"[:k], [[rng.randrange(n) for _ in range(k)] for _ in range(n)], 0,
                           [q for q in range(n) if rng.random() < 0.5]).canonical()
        full = analyze(d)
        if full.monoid_summary["size"] <= d.num_states:
            continue
        capped = analyze(d, Limits(max_monoid_size=d.num_states))
        for key, res in capped.classes.items():
            if res.member is None:
                assert res.error["limit"] == "max_monoid_size"
            else:
                assert res.member == full.classes[key].member, key
        for key in ("ltl_p", "ltl_p_mod", "stutter_invariant", "group"):
            assert capped.classes[key].member is not None
        for res in capped.classes.values():
            replay(d, res)
        checked += 1


def test_docstring_examples_run():
    import doctest

    import langclass.core.classification.analysis as analysis_mod
    import langclass.core.algebra.monoid as monoid_mod

    for mod in (analysis_mod, monoid_mod):
        failed, attempted = doctest.testmod(mod)
        assert attempted > 0 and failed == 0, mod.__name__


def test_time_limit_leaves_classes_undecided():
    from langclass.core.base.limits import Limits

    n = 7
    t = [[[1, 0, 2, 3, 4, 5, 6][q], [1, 2, 3, 4, 5, 6, 0][q], [0, 0, 2, 3, 4, 5, 6][q]] for q in range(n)]
    r = analyze(DFA.from_table("abc", t, 0, [0]), Limits(max_monoid_size=10**6, time_limit_s=0.01))
    assert r.monoid_summary["error"]["limit"] == "time_limit_s"
    assert r.classes["ltl_p"].member is False and r.classes["fo_mod"].member is None


@pytest.mark.parametrize("step", ["multiplication table", "maximal idempotents", "local submonoids", "LTL[P,Y]",
                                  "locally testable", "locally threshold testable", "extra facts"])
def test_time_limit_inside_the_algebraic_tests_is_reported_not_a_crash(monkeypatch, step):
    """The deadline can fire after the monoid is built (in the local tests or the extra facts):
    the analysis still returns, naming ``time_limit_s`` where it stopped, and never mixes a
    partial record into the automaton/algebra cross-checks.

    The analysis is fast now, so wall-clock time cannot be relied on to expire inside a given step:
    a deadline that expires at the first check of ``step`` (and stays expired) makes it deterministic.
    """
    from langclass.core.base.limits import Deadline, Limits
    from langclass.core.ingest.parse import parse_regex

    class StepDeadline(Deadline):
        __slots__ = ("fired",)

        def __init__(self) -> None:
            super().__init__(0.3)
            self.fired = False

        def check(self, s: str = "") -> None:
            self.fired = self.fired or s == step
            if self.fired:
                self._end = time.monotonic() - 1.0
            super().check(s)

    made: list[StepDeadline] = []

    def deadline(self):
        made.append(StepDeadline())
        return made[-1]

    dfa = parse_regex("(a|b|c)*a(a|b|c){6}", list("abc"))
    monkeypatch.setattr(Limits, "deadline", deadline)
    r = analyze(dfa, Limits(time_limit_s=0.3)).to_dict()
    assert len(made) == 1 and made[0].fired, f"the step {step!r} was never checked against the deadline"
    stopped = [k for k, v in r["classes"].items() if (v.get("error") or {}).get("limit") == "time_limit_s"]
    stopped += ["extra"] if (r["extra"].get("error") or {}).get("limit") == "time_limit_s" else []
    assert stopped, f"a deadline expiring in {step!r} must stop somewhere and say so"
    assert (r["monoid"].get("error") or {}).get("limit") is None, "the monoid was built before the step"
    assert r["classes"]["ltl_p"]["member"] is False and r["classes"]["ltl_p_mod"]["member"] is False


def test_soft_answer_of_quasi_aperiodic_languages_follows_ltl_p_y_mod():
    """Issue 22: LTL[P,Y,MOD] is decided. A quasi-aperiodic member outside LTL[P,MOD] ∪ LTL[P,Y] gets
    periodic RoPE + recency heads; a quasi-aperiodic non-member 'none known' saying it is outside
    LTL[P,Y,MOD]; a language outside FO[<,MOD] keeps the earlier answer without that sentence."""
    base = {k: False for k in CLASS_KEYS}
    soft = choose_encodings(dict(base, fo_mod=True, ltl_p_y_mod=True, fo2_succ_mod=True), period=None,
                            stability_index=2, period_y_mod=2)["soft"]
    assert soft["encoding"] == "rope_periodic+alibi" and soft["length_guarantee"] == "all lengths"
    soft = choose_encodings(dict(base, fo_mod=True), period=2, stability_index=2,
                            outside_y_mod={"reason": "why", "witness": None})["soft"]
    assert soft["encoding"] is None and "outside LTL[P,Y,MOD]" in soft["reason"] and "why" in soft["reason"]
    soft = choose_encodings(base)["soft"]
    assert soft["encoding"] is None and "LTL[P,Y,MOD]" not in soft["reason"]


def test_an_implied_membership_of_a_periodic_class_carries_period_one():
    """Over its monoid cap, (a|b)*a(a|b){5} is decided locally testable without the monoid; the
    lattice then answers LTL[P,Y,MOD] through locally testable ⊆ LTL[P,Y], so m = 1 — recorded, and
    checked by the replay (a tampered period is refused)."""
    from langclass.core.base.limits import Limits
    from langclass.core.algebra.classes import ReplayError

    dfa = parse_regex("(a|b)*a(a|b){5}", ["a", "b"])
    an = analyze(dfa, Limits(max_monoid_size=10))
    r = an.to_dict()["classes"]["ltl_p_y_mod"]
    assert r["member"] and r["method"] == "lattice" and r["period"] == 1, r
    replay(dfa, r)
    with pytest.raises(ReplayError):
        replay(dfa, {**r, "period": None})
    with pytest.raises(ReplayError):
        replay(dfa, {**r, "period": 2})


def test_catalogue_names_setting_mask_and_precision():
    """The causal NoPE entry is told apart from the fixed-precision one by family, setting, mask and precision."""
    from langclass.core.precision.encoding_choice import PRECISION, SETTINGS

    cat = encoding_catalogue()
    for c in cat:
        assert c["setting"] == SETTINGS[c["family"]] and c["precision"] == PRECISION[c["family"]] and c["mask"]
    nope_soft = {c["family"]: c for c in cat if c["encoding"] == "nope" and c["attention"] == "soft"}
    assert set(nope_soft) == {"soft", "causal"}
    causal, fixed = nope_soft["causal"], nope_soft["soft"]
    assert (causal["class"], causal["mask"], fixed["mask"]) == ("crasp", "nonstrict", "strict")
    assert "non-strict" in causal["setting"] and causal["precision"].startswith("counting")
    assert fixed["precision"].startswith("fixed") and "strict future mask" in fixed["setting"]
