"""Certificates and witnesses are typed data that a replay checks on the DFA alone (issue 11 item 7).

Every answer round-trips through JSON and replays; corrupting any checkable part of a certificate
(not only of a witness) makes the replay fail; answers implied through the lattice carry the
implying class's evidence and replay it.
"""

from __future__ import annotations

import copy
import json

import pytest

from langclass.core.classification.analysis import analyze, format_table
from langclass.core.algebra.classes import REGISTRY, ClassResult, Evidence, replay
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex

LANGS = [
    ("(aa)*", "a"), ("(ab)*", "ab"), ("a*b*", "ab"), ("(a|b)*ab(a|b)*", "ab"), ("((a|b)(a|b))*", "ab"),
    ("(a|b)*a(a|b)", "ab"), ("b*(ab*ab*)*", "ab"), ("(a|b|c)*ab(a|b|c)*", "abc"), ("a(a|b)*", "ab"),
    ("(ab|ba)*", "ab"), ("((a|b)*b)?", "ab"),
]


def _analysis(rx: str, al: str, **kw):
    dfa = parse_regex(rx, list(al))
    return dfa, analyze(dfa, cross_check=True, **kw)


@pytest.mark.parametrize("rx,al", LANGS)
def test_every_answer_is_typed_and_replays_from_json(rx, al):
    dfa, a = _analysis(rx, al)
    for key, r in a.classes.items():
        assert r.member is not None
        ev = r.certificate if r.member else r.witness
        assert isinstance(ev, Evidence) and not isinstance(ev, dict)
        types = REGISTRY[key].certificate_types if r.member else REGISTRY[key].witness_types
        assert isinstance(ev, types), (key, type(ev))
        record = json.loads(json.dumps(r.to_dict()))
        replay(dfa, record)
        assert type(ev).from_dict(record["certificate" if r.member else "witness"]) == ev


def _tamper_fails(dfa, result: ClassResult, field: str, corrupt) -> None:
    d = copy.deepcopy(result.to_dict())
    replay(dfa, d)
    corrupt(d[field])
    with pytest.raises(AssertionError):
        replay(dfa, d)


def test_star_free_and_fo_mod_certificates_are_checked_on_the_dfa():
    dfa, a = _analysis("(a|b)*ab(a|b)*", "ab")
    sf, fm = a.classes["star_free"], a.classes["fo_mod"]
    assert sf.member and fm.member and sf.certificate.monoid is not None and fm.certificate.monoid is not None
    n = sf.certificate.aperiodicity_index
    _tamper_fails(dfa, sf, "certificate", lambda c: c.__setitem__("aperiodicity_index", n + 1))  # not least
    if n > 1:
        _tamper_fails(dfa, sf, "certificate", lambda c: c.__setitem__("aperiodicity_index", n - 1))
    _tamper_fails(dfa, sf, "certificate", lambda c: c.__setitem__("monoid_size", c["monoid_size"] + 1))
    # the monoid's words must be all of it: dropping the last element breaks closure
    _tamper_fails(dfa, sf, "certificate", lambda c: (c["monoid"]["parents"].pop(), c["monoid"]["letters"].pop()))
    _tamper_fails(dfa, fm, "certificate", lambda c: c.__setitem__("stability_index", c["stability_index"] + 1))
    _tamper_fails(dfa, fm, "certificate",
                  lambda c: c.__setitem__("stable_semigroup_size", c["stable_semigroup_size"] + 1))


def test_fo_mod_yes_for_a_periodic_language_checks_the_stable_semigroup():
    # ((a|b)(a|b))*: groups in the monoid, none in η(Σ^s) (s = 2): the replay must see both facts
    dfa, a = _analysis("((a|b)(a|b))*", "ab")
    assert a.classes["star_free"].member is False and a.classes["fo_mod"].member is True
    replay(dfa, a.classes["fo_mod"])
    d = a.classes["fo_mod"].to_dict()
    d["certificate"]["stability_index"] = 1
    with pytest.raises(AssertionError):
        replay(dfa, d)


def test_other_algebraic_certificates_are_checked():
    dfa, a = _analysis("a*b*", "ab")
    for key in ("fo2", "fo2_mod", "piecewise_testable", "ltl_p_y", "locally_testable", "ltl_p"):
        assert a.classes[key].member, key
    _tamper_fails(dfa, a.classes["fo2"], "certificate", lambda c: c.__setitem__("regular_elements", 99))
    _tamper_fails(dfa, a.classes["piecewise_testable"], "certificate", lambda c: c.__setitem__("j_classes", 99))
    _tamper_fails(dfa, a.classes["ltl_p_y"], "certificate",
                  lambda c: c["maximal_idempotents"][0].__setitem__("eSe_size", 99))
    _tamper_fails(dfa, a.classes["ltl_p"], "certificate", lambda c: c["topological_order"].reverse())
    dfa, a = _analysis("(aa)*", "a")
    _tamper_fails(dfa, a.classes["ltl_p_mod"], "certificate", lambda c: c.__setitem__("k", 4))
    _tamper_fails(dfa, a.classes["group"], "certificate", lambda c: c.__setitem__("letters", []))


def test_a_cycle_left_out_of_the_ltl_p_mod_certificate_is_caught():
    dfa, a = _analysis("(aa)*b(bbb)*", "ab")
    r = a.classes["ltl_p_mod"]
    assert r.member and r.period == 6 and len(r.certificate.cycles) == 2

    def drop(c):
        c["cycles"].pop()
        c["k"] = 2

    d = copy.deepcopy(r.to_dict())
    drop(d["certificate"])
    d["period"] = 2
    with pytest.raises(AssertionError):
        replay(dfa, d)


def test_fo_mod_witness_group_is_checked():
    dfa, a = _analysis("(b*ab*a)*b*", "ab")  # even number of a: Z2 in the stable semigroup
    r = a.classes["fo_mod"]
    assert r.member is False and r.witness.group.order == 2
    replay(dfa, r)
    _tamper_fails(dfa, r, "witness", lambda w: w["group"]["permutations"][0].reverse())


def test_malformed_records_are_assertion_errors_naming_the_field():
    dfa, a = _analysis("(aa)*", "a")
    d = a.classes["star_free"].to_dict()
    d["witness"]["m"] = "two"
    with pytest.raises(AssertionError, match="witness.m"):
        replay(dfa, d)
    d = a.classes["star_free"].to_dict()
    d["witness"]["surprise"] = 1
    with pytest.raises(AssertionError, match="surprise"):
        replay(dfa, d)


def test_lattice_implied_answers_carry_and_replay_the_implying_evidence():
    # with a tiny monoid cap the algebraic classes are answered through the lattice where possible
    dfa, a = _analysis("(a|b)*a(a|b)", "ab", limits=Limits(max_monoid_size=2))
    implied = [r for r in a.classes.values() if r.method == "lattice"]
    assert implied, {k: (r.member, r.method) for k, r in a.classes.items()}
    for r in implied:
        replay(dfa, json.loads(json.dumps(r.to_dict())))
        inner = r.certificate.certificate if r.member else r.witness.witness
        assert inner is not None
    r = implied[0]
    d = r.to_dict()
    if r.member:
        d["certificate"]["implied_by"] = "group"
    else:
        d["witness"]["implied_by"] = "group"
    with pytest.raises(AssertionError):
        replay(dfa, d)


def test_table_prints_the_certificates_of_yes_answers():
    _, a = _analysis("(aa)*", "a")
    table = format_table(a)
    assert "certificate: k=2" in table  # LTL[P,MOD] yes
    assert "certificate: letters=a" in table  # group yes
    assert "witness: word=a" in table  # star-free no


@pytest.mark.parametrize("rx,al", LANGS)
def test_api_response_models_type_every_certificate_and_witness(rx, al):
    from pydantic import TypeAdapter

    from langclass.app.usecases.evidence_models import EVIDENCE_MODELS, EvidenceModel

    typed = tuple(EVIDENCE_MODELS.values())
    ta = TypeAdapter(EvidenceModel)
    _, a = _analysis(rx, al)
    for key, r in a.classes.items():
        d = r.to_dict()
        for field in ("certificate", "witness"):
            if d[field] is None:
                continue
            v = ta.validate_python(d[field])
            assert isinstance(v, typed), (key, field, type(v))  # a typed shape, not the plain-object fallback
            assert ta.dump_python(v) == d[field]


def test_beyond_is_typed_and_groups_of_ac0_languages_are_shown():
    from langclass.app.usecases.schemas import Beyond

    _, a = _analysis("(b*ab*a)*b*", "ab")  # even number of a: Z2 in the stable semigroup
    assert a.classes["fo_mod"].member is False
    b = Beyond.model_validate(a.beyond)
    assert b.group is not None and b.group.order == 2 and b.all_groups_solvable
    _, a = _analysis("((a|b)(a|b))*", "ab")  # Z2 in the monoid, none in η(Σ^2): in AC⁰
    assert a.classes["fo_mod"].member is True and a.beyond is None
    assert [g["name"] for g in a.monoid_summary["nontrivial_groups"]] == ["Z2"]
    assert "groups: Z2 in the syntactic monoid, none in the stable semigroup" in format_table(a)


def test_tampered_witness_replay_failure_names_the_check() -> None:
    from langclass.core.algebra.classes import ReplayError

    dfa = parse_regex("(ab)*", ["a", "b"])
    record = analyze(dfa, cross_check=True).classes["ltl_p"].to_dict()
    replay(dfa, record)  # the genuine witness replays
    bad = copy.deepcopy(record)
    bad["witness"]["v"] = ["a"]
    with pytest.raises(ReplayError) as info:
        replay(dfa, bad)
    msg = str(info.value)
    assert msg.startswith("ltl_p: the witness does not replay: check `") and "wit.v" in msg
    assert isinstance(info.value, AssertionError)  # older callers catching AssertionError still work


def test_every_replay_failure_carries_a_message() -> None:
    """Tamper each word of every witness/certificate of a few languages: any failure has a message."""
    failures = 0
    for regex in ("(ab)*", "(aa)*", "a*b", "(a|b)*a(a|b)*"):
        dfa = parse_regex(regex, ["a", "b"])
        for key, res in analyze(dfa, cross_check=True).classes.items():
            record = res.to_dict()
            ev_key = "certificate" if record["member"] else "witness"
            ev = record.get(ev_key)
            if record["member"] is None or not isinstance(ev, dict):
                continue
            for field, value in ev.items():
                if not (isinstance(value, list) and all(isinstance(s, str) for s in value)):
                    continue
                bad = copy.deepcopy(record)
                bad[ev_key][field] = value + ["b", "a", "a"]
                try:
                    replay(dfa, bad)
                except AssertionError as err:
                    failures += 1
                    assert str(err).strip() and str(err).startswith(key), (key, field)
    assert failures > 0


# The tampering cases above, run again under ``python -O`` (which strips every ``assert``): a replay
# check written as an assert would let the tampered record through there. The script uses no assert.
_TAMPER_SCRIPT = r'''
import copy, json, sys
from langclass.core.classification.analysis import analyze
from langclass.core.algebra.classes import ReplayError, replay
from langclass.core.ingest.parse import parse_regex

CASES = [  # (regex, alphabet, class key, evidence field, tampering)
    ("(a|b)*ab(a|b)*", "ab", "star_free", "certificate", lambda c: c.__setitem__("aperiodicity_index", c["aperiodicity_index"] + 1)),
    ("(a|b)*ab(a|b)*", "ab", "star_free", "certificate", lambda c: c.__setitem__("monoid_size", c["monoid_size"] + 1)),
    ("(a|b)*ab(a|b)*", "ab", "star_free", "certificate", lambda c: (c["monoid"]["parents"].pop(), c["monoid"]["letters"].pop())),
    ("(a|b)*ab(a|b)*", "ab", "fo_mod", "certificate", lambda c: c.__setitem__("stability_index", c["stability_index"] + 1)),
    ("((a|b)(a|b))*", "ab", "fo_mod", "certificate", lambda c: c.__setitem__("stability_index", 1)),
    ("a*b*", "ab", "fo2", "certificate", lambda c: c.__setitem__("regular_elements", 99)),
    ("a*b*", "ab", "piecewise_testable", "certificate", lambda c: c.__setitem__("j_classes", 99)),
    ("a*b*", "ab", "ltl_p_y", "certificate", lambda c: c["maximal_idempotents"][0].__setitem__("eSe_size", 99)),
    ("a*b*", "ab", "ltl_p", "certificate", lambda c: c["topological_order"].reverse()),
    ("(aa)*", "a", "ltl_p_mod", "certificate", lambda c: c.__setitem__("k", 4)),
    ("(aa)*", "a", "group", "certificate", lambda c: c.__setitem__("letters", [])),
    ("(b*ab*a)*b*", "ab", "fo_mod", "witness", lambda w: w["group"]["permutations"][0].reverse()),
    ("(ab)*", "ab", "ltl_p", "witness", lambda w: w.__setitem__("v", ["a"])),
]
out = {"optimize": sys.flags.optimize, "cases": []}
for rx, al, key, field, corrupt in CASES:
    dfa = parse_regex(rx, list(al))
    record = copy.deepcopy(analyze(dfa, cross_check=True).classes[key].to_dict())
    replay(dfa, record)
    corrupt(record[field])
    try:
        replay(dfa, record)
        outcome = "accepted"
    except ReplayError as err:
        outcome = "ReplayError: " + str(err)
    out["cases"].append([rx, key, outcome])
# every word of every witness/certificate lengthened (test_every_replay_failure_carries_a_message)
for rx in ("(ab)*", "(aa)*", "a*b", "(a|b)*a(a|b)*"):
    dfa = parse_regex(rx, ["a", "b"])
    for key, res in analyze(dfa, cross_check=True).classes.items():
        record = res.to_dict()
        kind = "certificate" if record["member"] else "witness"
        ev = record.get(kind)
        if record["member"] is None or not isinstance(ev, dict):
            continue
        for name, value in ev.items():
            if isinstance(value, list) and all(isinstance(s, str) for s in value):
                bad = copy.deepcopy(record)
                bad[kind][name] = value + ["b", "a", "a"]
                try:
                    replay(dfa, bad)
                except ReplayError as err:
                    out["cases"].append([rx, key, "ReplayError: " + str(err)])
print(json.dumps(out))
'''


def test_tampered_evidence_is_refused_under_python_O() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-O", "-c", _TAMPER_SCRIPT], capture_output=True, text=True,
                          env=env, cwd=root, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["optimize"] == 1  # asserts really are stripped in the child
    fixed = out["cases"][:13]
    assert [c[2] for c in fixed if not c[2].startswith("ReplayError: ")] == []
    assert all(c[2].startswith(f"ReplayError: {c[1]}: ") for c in out["cases"])
    assert len(out["cases"]) > 13  # the lengthened words were refused too
    assert "ltl_p: the witness does not replay: check `" in fixed[-1][2] and "wit.v" in fixed[-1][2]


def test_no_assert_statement_in_the_replay_code() -> None:
    """Replay checks raise ReplayError explicitly; an ``assert`` there would vanish under ``-O``."""
    import ast
    from pathlib import Path

    import langclass.core.algebra.classes as pkg

    found = []
    for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    "replay" in fn.name or fn.name in ("check_context", "idempotent_word", "_check_listed", "qr_witness_words")
                    or (path.name == "replaykit.py")):
                found += [f"{path.name}:{n.lineno} in {fn.name}" for n in ast.walk(fn) if isinstance(n, ast.Assert)]
    assert found == []
