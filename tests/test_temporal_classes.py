"""The unary-temporal class keys (LTL[P,Y,MOD], FO²[<,+1], FO²[<,+1,MOD], LTL[F], LTL[F,X], LTL[F,MOD],
LTL[F,X,MOD]): answers, replayable evidence, a tampering test for every field, the lattice."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langclass.core.algebra.classes import TEMPORAL_KEYS, ReplayError, replay
from langclass.core.algebra.classes.temporal import OrbitCertificate, OrbitDAWitness, OrbitGreenWitness
from langclass.core.algebra.lattice import CLASS_INFO, INCLUSIONS, LatticeViolation, check_consistency, implied_by
from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.ingest.parse import parse_regex


def _analysis(rx: str, al: str):
    dfa = parse_regex(rx, list(al))
    return dfa, analyze(dfa, cross_check=True)


def test_the_issue_member_even_length_ending_in_a():
    _, a = _analysis("((a|b)(a|b))*(a|b)a", "ab")
    d = a.to_dict()["classes"]
    assert d["ltl_p_y_mod"]["member"] is True and d["ltl_p_y_mod"]["period"] == 2
    assert d["ltl_p_y"]["member"] is False and d["ltl_p_mod"]["member"] is False
    assert d["ltl_p_y_mod"]["name"] == "LTL[P,Y,MOD]" and "Place & Zeitoun" in d["ltl_p_y_mod"]["source"]


def test_the_issue_non_member_has_a_replayable_witness():
    dfa, a = _analysis("(a|b|c)*ac*", "abc")
    r = a.classes["ltl_p_y_mod"]
    assert r.member is False and r.period is None
    assert isinstance(r.witness, OrbitGreenWitness) and r.witness.relation == "R" and r.witness.modulus == 1
    replay(dfa, json.loads(json.dumps(r.to_dict())))
    assert "LTL[P,Y,MOD]" in r.reason


LANGS = [("((a|b)(a|b))*(a|b)a", "ab"), ("(a|b|c)*ac*", "abc"), ("(ab|ba)*", "ab"), ("(aa)*", "a"),
         ("(ab)*", "ab"), ("a(a|b)*", "ab"), ("(a|b)*a", "ab"), ("(b*ab*a)*b*", "ab"), ("((a|b)(a|b)(a|b))*a", "ab"),
         ("(a(aaa)*b)*", "ab")]


@pytest.mark.parametrize("rx,al", LANGS)
def test_every_new_answer_replays_from_json(rx, al):
    dfa, a = _analysis(rx, al)
    for key in TEMPORAL_KEYS:
        r = a.classes[key]
        assert r.member is not None and r.method == "monoid"
        replay(dfa, json.loads(json.dumps(r.to_dict())))


@st.composite
def dfas(draw, n_max: int = 5, k_max: int = 3):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if acc[q]]).canonical()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas())
def test_new_answers_replay_on_random_dfas(dfa):
    a = analyze(dfa, cross_check=True)  # asserts the lattice, with the new inclusions and the period facts
    for key in TEMPORAL_KEYS:
        replay(dfa, a.classes[key].to_dict())
    m = a.members
    assert m["ltl_p_y_mod"] == (m["ltl_p_y"] or m["ltl_p_mod"] or m["ltl_p_y_mod"])
    if m["ltl_p_y_mod"]:
        assert (a.classes["ltl_p_y_mod"].period == 1) == m["ltl_p_y"]


# ----------------------------------------------------------------------------- tampering


def _tampered(dfa, record: dict, field: str, corrupt) -> None:
    d = copy.deepcopy(record)
    replay(dfa, d)
    corrupt(d[field] if field else d)
    with pytest.raises(ReplayError):
        replay(dfa, d)


def _set(name, value):
    return lambda ev: ev.__setitem__(name, value)


def test_every_certificate_field_is_checked():
    dfa, a = _analysis("((a|b)(a|b))*(a|b)a", "ab")
    rec = a.classes["ltl_p_y_mod"].to_dict()
    cert = rec["certificate"]
    assert set(cert) == {f for f in OrbitCertificate.__dataclass_fields__} | {"check"}
    _tampered(dfa, rec, "certificate", _set("gap", "MOD"))
    _tampered(dfa, rec, "certificate", _set("side", "both"))  # R-trivial orbits are in DA too: the key decides
    _tampered(dfa, rec, "certificate", _set("period", 4))  # a multiple works, but is not the least
    _tampered(dfa, rec, "certificate", _set("period", 1))  # does not work
    _tampered(dfa, rec, "", lambda d: d.__setitem__("period", 4))  # the record's period is the certificate's
    _tampered(dfa, rec, "certificate", lambda c: c["orbits"][0].__setitem__("size", c["orbits"][0]["size"] + 1))
    _tampered(dfa, rec, "certificate", lambda c: c["orbits"][0].__setitem__("e", ["a"]))  # not idempotent
    _tampered(dfa, rec, "certificate", lambda c: c["orbits"].append(copy.deepcopy(c["orbits"][0])))
    _tampered(dfa, rec, "certificate", lambda c: c["orbits"].clear())
    _tampered(dfa, rec, "certificate", _set("truncated", True))
    _tampered(dfa, rec, "certificate", lambda c: (c["monoid"]["parents"].pop(), c["monoid"]["letters"].pop()))
    # a certificate claimed for a non-member does not replay either
    dfa2, a2 = _analysis("(a|b|c)*ac*", "abc")
    bad = copy.deepcopy(rec)
    bad["certificate"]["monoid"] = a2.classes["fo2"].certificate.to_dict()["monoid"]
    with pytest.raises(ReplayError):
        replay(dfa2, bad)


def test_every_field_of_the_future_certificate_is_checked():
    dfa, a = _analysis("(aa)*", "a")
    rec = a.classes["ltl_f_mod"].to_dict()
    assert rec["certificate"]["period"] == 2 and "period" not in rec
    _tampered(dfa, rec, "certificate", _set("side", "past"))
    _tampered(dfa, rec, "certificate", _set("period", 3))
    _tampered(dfa, rec, "certificate", lambda c: c["orbits"][0].__setitem__("e", ["a"]))
    dfa, a = _analysis("a(a|b)*", "ab")
    rec = a.classes["ltl_f_x"].to_dict()
    _tampered(dfa, rec, "certificate", _set("period", 2))  # DD has modulus 1


def test_every_green_witness_field_is_checked():
    dfa, a = _analysis("(a|b|c)*ac*", "abc")
    rec = a.classes["ltl_p_y_mod"].to_dict()
    wit = rec["witness"]
    assert set(wit) == {f for f in OrbitGreenWitness.__dataclass_fields__} | {"check"}
    _tampered(dfa, rec, "witness", _set("gap", "DD"))
    _tampered(dfa, rec, "witness", _set("side", "future"))
    _tampered(dfa, rec, "witness", _set("relation", "L"))
    _tampered(dfa, rec, "witness", _set("modulus", 0))
    _tampered(dfa, rec, "witness", _set("e", ["b"]))
    _tampered(dfa, rec, "witness", _set("e", []))  # ⁺: the idempotent needs a nonempty word
    _tampered(dfa, rec, "witness", _set("x", list(wit["y"])))  # x = y: no violation
    _tampered(dfa, rec, "witness", _set("y", list(wit["x"])))
    _tampered(dfa, rec, "witness", _set("u", list(wit["x"])))  # x·x = x ≠ y
    _tampered(dfa, rec, "witness", _set("v", list(wit["y"])))  # y·y = y ≠ x
    _tampered(dfa, rec, "witness", lambda w: w["context"].__setitem__("first_accepted", not w["context"]["first_accepted"]))
    _tampered(dfa, rec, "witness", lambda w: w["context"].__setitem__("suffix", w["context"]["suffix"] + ["b", "b"]))


def test_the_stable_modulus_of_a_witness_is_checked():
    dfa, a = _analysis("(b*ab*a)*b*", "ab")  # even number of a: a group in every kernel
    rec = a.classes["ltl_p_y_mod"].to_dict()
    assert rec["member"] is False
    wit = rec["witness"]
    assert wit["modulus"] >= 1
    _tampered(dfa, rec, "witness", _set("modulus", wit["modulus"] + 1))
    # (a|b|c)*ac* of even length: states (parity, an a after the last b), accepting (even, yes)
    table = [[2 * (1 - p) + 1 if a == "a" else 2 * (1 - p) if a == "b" else 2 * (1 - p) + f
              for a in "abc"] for p in (0, 1) for f in (0, 1)]
    dfa = DFA.from_table("abc", table, 0, [1]).canonical()
    a = analyze(dfa, cross_check=True)
    rec = a.classes["ltl_p_y_mod"].to_dict()
    assert rec["member"] is False and rec["witness"]["modulus"] == 2 and a.monoid.stability_index == 2
    _tampered(dfa, rec, "witness", _set("modulus", 1))  # η(Σ) ≠ η(Σ²): the words are not in every kernel
    _tampered(dfa, rec, "witness", _set("modulus", 4))


def test_every_da_witness_field_is_checked():
    dfa, a = _analysis("((a|b)(a|b))*(a|b)a", "ab")
    rec = a.classes["fo2_succ"].to_dict()
    wit = rec["witness"]
    assert rec["member"] is False and set(wit) == {f for f in OrbitDAWitness.__dataclass_fields__} | {"check"}
    _tampered(dfa, rec, "witness", _set("gap", "MOD+"))
    _tampered(dfa, rec, "witness", _set("side", "past"))
    _tampered(dfa, rec, "witness", _set("modulus", 2))
    _tampered(dfa, rec, "witness", _set("e", ["b"]))
    _tampered(dfa, rec, "witness", _set("x", list(wit["x"]) + ["b"]))
    _tampered(dfa, rec, "witness", _set("y", ["b"]))  # not in the orbit of e
    _tampered(dfa, rec, "witness", _set("xy_omega", list(wit["lhs"])))
    _tampered(dfa, rec, "witness", _set("lhs", list(wit["xy_omega"])))
    _tampered(dfa, rec, "witness", lambda w: w["context"].__setitem__("first_accepted", not w["context"]["first_accepted"]))


# ----------------------------------------------------------------------------- the lattice


def test_new_classes_sit_in_the_lattice():
    for key in TEMPORAL_KEYS:
        assert key in CLASS_INFO and CLASS_INFO[key].source
    ups = set(implied_by("ltl_p"))
    assert {"ltl_p_y_mod", "fo2_succ", "fo2_succ_mod"} <= ups
    assert {"fo2_succ_mod", "fo_mod", "star_free"} <= set(implied_by("ltl_f_x"))
    assert ("ltl_p_mod", "ltl_p_y_mod") in INCLUSIONS and ("ltl_p_y", "ltl_p_y_mod") in INCLUSIONS
    with pytest.raises(LatticeViolation):
        check_consistency({"ltl_p_y": True, "ltl_p_y_mod": False})
    with pytest.raises(LatticeViolation):
        check_consistency({"ltl_f": True, "fo2": False})
    with pytest.raises(LatticeViolation, match="exactly when"):
        check_consistency({"ltl_p_y": True, "ltl_p_y_mod": True}, period_y_mod=2)
    with pytest.raises(LatticeViolation, match="exceeds"):
        check_consistency({"ltl_p_mod": True, "ltl_p_y_mod": True, "ltl_p_y": False}, period=2, period_y_mod=3)
    with pytest.raises(LatticeViolation, match="belongs"):
        check_consistency({"ltl_p_y_mod": False}, period_y_mod=2)
    check_consistency({"ltl_p_mod": True, "ltl_p_y_mod": True, "ltl_p_y": False, "ltl_p": False}, period=2,
                      period_y_mod=2)


def test_the_docs_example_runs():
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "temporal.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert blocks
    for body in blocks:
        test = doctest.DocTestParser().get_doctest(body, {}, "docs/temporal.md", "docs/temporal.md", 0)
        result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test)
        assert result.failed == 0


def test_the_cli_reports_the_issue_examples():
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    runner = CliRunner()
    r = runner.invoke(app, ["classify", "--regex", "((a|b)(a|b))*(a|b)a", "--alphabet", "ab", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    c = d["classes"]
    assert c["ltl_p_y_mod"]["member"] is True and c["ltl_p_y_mod"]["period"] == 2
    assert c["ltl_p_y"]["member"] is False and c["ltl_p_mod"]["member"] is False
    assert d["encodings"]["soft"]["name"] == "periodic RoPE with period 2 + recency heads, all lengths"
    r = runner.invoke(app, ["classify", "--regex", "(a|b|c)*ac*", "--alphabet", "abc", "--json"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.output)["classes"]["ltl_p_y_mod"]
    assert rec["member"] is False
    replay(parse_regex("(a|b|c)*ac*", list("abc")), rec)
    r = runner.invoke(app, ["classify", "--regex", "((a|b)(a|b))*(a|b)a", "--alphabet", "ab"])
    assert r.exit_code == 0 and "LTL[P,Y,MOD]" in r.output and "yes m=2" in r.output
    assert "soft: periodic RoPE with period 2 + recency heads, all lengths — " in r.output  # the guarantee once
