"""The classification worker's response bytes (``service.classification_json``, validated through
``schemas.ServedClassification``) are those of the published response model ``schemas.Classification``
— validate, then ``dump_json(by_alias=True)``, as FastAPI's ``response_model`` does — on real records
and on records whose evidence was bent (missing optional keys, unknown keys, ambiguous shapes,
non-objects), and the two accept and refuse the same records."""

from __future__ import annotations

import copy
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from langclass.app.usecases import service
from langclass.app.usecases.schemas import Classification
from langclass.core.base.limits import DEFAULT_LIMITS, Limits

sys.path.insert(0, str(Path(__file__).parent))
from _ground_truth import LANGUAGES  # noqa: E402

PUBLISHED = TypeAdapter(Classification)


def _published(record: dict) -> bytes:
    return PUBLISHED.dump_json(PUBLISHED.validate_python(record, from_attributes=True), by_alias=True)


def _same(record: dict) -> None:
    try:
        want = _published(record)
    except ValidationError:
        with pytest.raises(ValidationError):
            service.classification_json(record)
        return
    assert service.classification_json(record) == want


def _record(**language) -> dict:
    parsed, analysis = service.parse_and_analyze(limits=DEFAULT_LIMITS, **language)
    return service.classification_record(parsed, analysis, "test")


@pytest.mark.parametrize("lang", LANGUAGES, ids=[lang["id"] for lang in LANGUAGES])
def test_ground_truth_records_serialize_as_the_published_model(lang):
    _same(_record(regex=lang["regex"], alphabet=lang["alphabet"]))


@st.composite
def dfa_bodies(draw):
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 3))
    sigma = "abc"[:k]
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return {"alphabet": list(sigma), "states": [str(q) for q in range(n)], "initial": "0",
            "accepting": [str(q) for q in range(n) if acc[q]],
            "transitions": {str(q): {sigma[a]: str(table[q][a]) for a in range(k)} for q in range(n)}}


@settings(max_examples=60, deadline=None)
@given(dfa_bodies())
def test_random_records_serialize_as_the_published_model(body):
    _same(_record(dfa=body))


def _evidences(record: dict):
    """(holder, key) of every certificate / witness in the record, nested implied evidence included."""
    for res in record["classes"].values():
        for key in ("certificate", "witness"):
            ev = res.get(key)
            if isinstance(ev, dict):
                yield res, key
                for inner in ("certificate", "witness"):
                    if isinstance(ev.get(inner), dict):
                        yield ev, inner


def test_bent_evidence_is_accepted_and_refused_alike():
    rng = random.Random(7)
    base = [_record(regex=r, alphabet=list("ab")) for r in ("(ab)*", "(aa)*", "a*b*", "(a|b)*a(a|b)", "((a|b)(a|b))*",
                                                           "(a|ba)*b?", "b*ab*", "(a|b)*ab(a|b)*")]
    base.append(_record(dfa={"alphabet": ["a", "b", "c"], "states": [0, 1, 2], "initial": 0, "accepting": [0],
                             "transitions": {"0": {"a": 1, "b": 0, "c": 2}, "1": {"a": 0, "b": 2, "c": 1},
                                             "2": {"a": 2, "b": 1, "c": 0}}}, ))
    bends = [
        lambda ev: ev.pop("check", None),  # an optional key left out
        lambda ev: ev.pop(next(iter(ev))),  # a required key left out: only the plain object accepts it
        lambda ev: ev.__setitem__("unknown", 1),  # an unknown key: only the plain object accepts it
        lambda ev: ev.pop("kind", None),  # a counter without its kind: two shapes allow the keys
        lambda ev: ev.pop("monoid", None),
        lambda ev: ev.__setitem__("check", 3),  # a value of the wrong type
        lambda ev: ev.__setitem__(next(iter(ev)), {"x": [1]}),
        lambda ev: ev.clear(),
    ]
    cases = 0
    for rec in base:
        _same(rec)
        for i in range(len(list(_evidences(rec)))):
            for bend in bends:
                bent = copy.deepcopy(rec)
                holder, key = list(_evidences(bent))[i]
                bend(holder[key])
                _same(bent)
                cases += 1
        for holder, key in list(_evidences(copy.deepcopy(rec)))[:3]:  # not an object at all
            for value in ("text", [1, 2], 5, None):
                bent = copy.deepcopy(rec)
                h, k = next((h, k) for h, k in _evidences(bent) if k == key and h.get("key", h.get("implied_by")) ==
                            holder.get("key", holder.get("implied_by")))
                h[k] = value
                _same(bent)
                cases += 1
    assert cases > 500
    # a whole record of the wrong shape is refused by both
    bad = copy.deepcopy(base[0])
    bad["classes"]["ltl_p"]["member"] = "maybe"
    _same(bad)


def test_limits_still_leave_the_same_bytes():
    rec = _record(regex="(a|b)*a(a|b){3}", alphabet=["a", "b"])
    _same(rec)
    parsed, analysis = service.parse_and_analyze(regex="(a|b)*a(a|b){5}", alphabet=["a", "b"],
                                                 limits=Limits(max_monoid_size=20))
    _same(service.classification_record(parsed, analysis, "test"))
