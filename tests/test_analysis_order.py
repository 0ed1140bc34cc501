"""``analyze`` answers a class through the lattice when a decided class already carries it, and
``cross_check=True`` runs every decider: the two must give the same answers, periods and
encodings, and every answer of either replays from its JSON record."""

from __future__ import annotations

import json
import random

import pytest

from langclass.core.algebra.classes import replay
from langclass.core.algebra.lattice import CLASS_KEYS, implied_by
from langclass.core.automata.automaton import DFA
from langclass.core.classification.analysis import _DECISION_ORDER, analyze
from langclass.core.ingest.parse import parse_regex


def _random_dfa(rng: random.Random) -> DFA:
    n = rng.randint(1, 5)
    k = rng.randint(1, 3)
    rows = [[rng.randrange(n) for _ in range(k)] for _ in range(n)]
    acc = [q for q in range(n) if rng.random() < 0.5]
    return DFA.from_table("abc"[:k], rows, 0, acc)


def _answer_only(encodings: dict) -> dict:
    """The encodings with the evidence of an ``outside`` explanation left out (its reason and
    witness, which the answer's reason quotes, are the implying class's when the lattice answered)."""
    out = {}
    for fam, e in encodings.items():
        e = dict(e)
        if isinstance(e.get("outside"), dict):
            e.pop("reason", None)
        if isinstance(e.get("outside"), dict):
            e["outside"] = {k: v for k, v in e["outside"].items() if k not in ("reason", "witness")}
        out[fam] = e
    return out


def _same(a, b) -> None:
    assert a.members == b.members
    for key in ("ltl_p_mod", "ltl_p_y_mod"):
        assert a.classes[key].period == b.classes[key].period, key
    assert _answer_only(a.encodings) == _answer_only(b.encodings)
    assert a.extra == b.extra
    assert a.beyond == b.beyond


@pytest.mark.parametrize("seed", range(6))
def test_the_lattice_order_answers_what_every_decider_answers(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        d = _random_dfa(rng)
        _same(analyze(d), analyze(d, cross_check=True))


@pytest.mark.parametrize("rx, al", [
    ("(aa)*", "a"), ("(ab)*", "ab"), ("a*b*", "ab"), ("(a|b)*ab(a|b)*", "ab"), ("((a|b)(a|b))*", "ab"),
    ("(a|b)*a(a|b)", "ab"), ("b*(ab*ab*)*", "ab"), ("a(a|b)*", "ab"), ("(ab|ba)*", "ab"),
    ("((a|b)(a|b))*(a|b)a", "ab"), ("(a(aaa)*b)*", "ab"),
])
def test_every_answer_of_the_default_order_replays_from_json(rx: str, al: str) -> None:
    dfa = parse_regex(rx, list(al))
    a = analyze(dfa)
    for r in a.classes.values():
        replay(dfa, json.loads(json.dumps(r.to_dict())))
    _same(a, analyze(dfa, cross_check=True))


def test_a_non_member_of_a_large_class_answers_its_subclasses_through_the_lattice() -> None:
    # ((a|b)(a|b))* is outside star-free, so every subclass of star-free is answered by the lattice
    a = analyze(parse_regex("((a|b)(a|b))*", ["a", "b"]))
    assert a.classes["star_free"].member is False
    for key in CLASS_KEYS:
        r = a.classes[key]
        if "star_free" in implied_by(key) and r.method != "automaton":
            assert r.method == "lattice" and r.member is False, key
            assert r.witness.to_dict()["implied_by"] in implied_by(key)
    direct = analyze(parse_regex("((a|b)(a|b))*", ["a", "b"]), cross_check=True)
    assert all(r.method != "lattice" for r in direct.classes.values())


def test_a_member_through_a_class_that_does_not_fix_the_period_runs_its_decider() -> None:
    # (aa)*: in LTL[P,MOD] with k = 2, so in LTL[P,Y,MOD]; that inclusion does not give the least m
    a = analyze(parse_regex("(aa)*", ["a"]))
    y_mod = a.classes["ltl_p_y_mod"]
    assert y_mod.member is True and y_mod.method != "lattice" and y_mod.period == 2
    # a*b*: in LTL[P] ⊆ LTL[P,Y], so m = 1 comes with the inclusion
    b = analyze(parse_regex("a*b*", ["a", "b"]))
    assert b.classes["ltl_p_y_mod"].method == "lattice" and b.classes["ltl_p_y_mod"].period == 1


def test_the_order_decides_larger_classes_before_their_subclasses() -> None:
    pos = {k: i for i, k in enumerate(_DECISION_ORDER)}
    assert sorted(_DECISION_ORDER) == sorted(CLASS_KEYS)
    for key in CLASS_KEYS:
        for sup in implied_by(key):
            if key not in implied_by(sup):  # no two classes of the lattice are equal
                assert pos[sup] < pos[key], (sup, key)


@pytest.mark.parametrize("rx, al, stopped", [
    ("a*b*", "ab", "fo2_succ"),        # a member: ltl_p (decided) ⊆ ltl_p_y (lattice) ⊆ fo2_succ
    ("((a|b)(a|b))*", "ab", "fo2_succ"),  # a non-member: star_free (lattice) ⊇ fo2_succ, fo_mod decided
    ("(aa)*", "a", "ltl_p_y_mod"),     # a member through ltl_p_mod, whose inclusion does not fix m
    ("a*b*", "ab", "star_free"),       # decided early: its subclasses come later, some through the lattice
    ("(ab)*", "ab", "fo_mod"),         # the first decided
])
def test_a_class_a_limit_left_open_is_filled_from_a_directly_decided_class(monkeypatch, rx, al, stopped):
    from langclass.core.algebra.classes import DECIDERS
    from langclass.core.base.errors import LimitExceeded

    def over(ctx):
        raise LimitExceeded("orbit_work", 1, "forced by the test")

    dfa = parse_regex(rx, list(al))
    want = analyze(dfa, cross_check=True).classes[stopped]
    monkeypatch.setitem(DECIDERS, stopped, over)
    for cc in (False, True):
        r = analyze(dfa, cross_check=cc).classes[stopped]
        assert r.member is want.member and r.method == "lattice"
        assert (r.error is not None) is (cc or stopped == "ltl_p_y_mod")  # by default the decider may not even run
        by = (r.certificate if r.member else r.witness).to_dict()["implied_by"]
        if stopped == "ltl_p_y_mod":  # m is not determined, but LTL[P,MOD]'s k = 2 bounds it
            assert r.period is None and "at most k = 2" in r.reason
        assert analyze(dfa, cross_check=cc).classes[by].method != "lattice"
        replay(dfa, json.loads(json.dumps(r.to_dict())))


@pytest.mark.parametrize("stopped", [k for k in CLASS_KEYS if k not in ("ltl_p", "ltl_p_mod", "stutter_invariant", "group", "crasp")])
def test_every_record_replays_when_any_one_decider_hits_a_limit(monkeypatch, stopped):
    from langclass.core.algebra.classes import DECIDERS
    from langclass.core.base.errors import LimitExceeded

    def over(ctx):
        raise LimitExceeded("orbit_work", 1, "forced by the test")

    monkeypatch.setitem(DECIDERS, stopped, over)
    rng = random.Random(stopped)
    for _ in range(25):
        d = _random_dfa(rng)
        for r in analyze(d).classes.values():
            if r.member is not None:
                replay(d, json.loads(json.dumps(r.to_dict())))


@pytest.mark.parametrize("bend", [
    lambda r: r.update(witness="x", certificate="x"),
    lambda r: r.update(witness=5, certificate=5),
    lambda r: r.update(witness=["a"], certificate=["a"]),
    lambda r: r["witness"].update(implied_by=["fo_mod"]),
    lambda r: r["witness"].update(implied_by={"k": 1}),
    lambda r: r["witness"].update(extra=1),
])
def test_a_malformed_lattice_non_member_is_refused_never_a_crash(bend):
    from langclass.core.algebra.classes import ReplayError

    dfa = parse_regex("(b*ab*a)*b*", ["a", "b"])
    rec = json.loads(json.dumps(analyze(dfa).classes["piecewise_testable"].to_dict()))
    assert rec["method"] == "lattice" and rec["member"] is False
    bend(rec)
    with pytest.raises(ReplayError):
        replay(dfa, rec)


@pytest.mark.parametrize("bend", [
    lambda r: r.update(certificate="x"),
    lambda r: r["certificate"].update(implied_by=["ltl_p"]),
    lambda r: r["certificate"].update(inclusion=["x"]),
    lambda r: r["certificate"].update(extra=1),
    lambda r: r.update(period=True),
    lambda r: r.update(period=1.0),
])
def test_a_malformed_lattice_member_is_refused_never_a_crash(bend):
    from langclass.core.algebra.classes import ReplayError

    dfa = parse_regex("a*b*", ["a", "b"])
    rec = json.loads(json.dumps(analyze(dfa).classes["ltl_p_y_mod"].to_dict()))
    assert rec["method"] == "lattice" and rec["member"] is True and rec["period"] == 1
    replay(dfa, json.loads(json.dumps(rec)))
    bend(rec)
    with pytest.raises(ReplayError):
        replay(dfa, rec)


@pytest.mark.parametrize("key", ["ltl_p_mod", "ltl_p_y_mod"])
def test_a_decided_period_must_be_an_integer(key):
    from langclass.core.algebra.classes import ReplayError

    dfa = parse_regex("(a|b)*", ["a", "b"])  # k = m = 1, so true == 1 would pass a bare comparison
    rec = json.loads(json.dumps(analyze(dfa, cross_check=True).classes[key].to_dict()))
    assert rec["period"] == 1 and rec["method"] != "lattice"
    rec["period"] = True
    with pytest.raises(ReplayError, match="integer"):
        replay(dfa, rec)


def test_the_web_page_shows_a_lattice_answer_as_the_implying_class_evidence_item_by_item():
    from langclass.app.web.pages import evidence_items

    rec = analyze(parse_regex("(b*ab*a)*b*", ["a", "b"])).to_dict()["classes"]["piecewise_testable"]
    assert rec["method"] == "lattice"
    items = dict(evidence_items(rec["witness"]))
    assert items["implied by"] == "LTL[P] (ltl_p)"
    assert items["ltl_p: u"] == "a" and items["ltl_p: p"] == "0"  # words as words, not JSON


@pytest.mark.parametrize("cc", [False, True])
def test_a_record_carries_no_evidence_beside_the_one_replay_checks(cc):
    from langclass.core.algebra.classes import ReplayError

    dfa = parse_regex("(ab)*", ["a", "b"])
    a = analyze(dfa, cross_check=cc).to_dict()["classes"]
    no, yes = json.loads(json.dumps(a["ltl_p"])), json.loads(json.dumps(a["ltl_p_mod"]))
    assert no["member"] is False and no["certificate"] == no["witness"] and yes["member"] is True
    replay(dfa, no), replay(dfa, yes)
    no["certificate"] = yes["certificate"]  # a genuine witness beside a foreign certificate
    with pytest.raises(ReplayError, match="repeated"):
        replay(dfa, no)
    yes["witness"] = a["ltl_p"]["witness"]
    with pytest.raises(ReplayError, match="no witness"):
        replay(dfa, yes)
