"""Limit errors name their field and position; contradictory list filters are 422; the Python API
refuses unknown construct options and takes a time limit and a parameter budget; replay reads the
API's DFA JSON (harden-cli issues)."""

from __future__ import annotations

from typing import Any

import pytest

from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.base.limits import Limits

JSON = {"content-type": "application/json"}


@pytest.fixture
def client(make_client: Any, _migrated_sqlite: str) -> Any:
    from conftest import _empty_all_tables

    _empty_all_tables(_migrated_sqlite)
    return make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0)


@pytest.mark.parametrize("body,limit,field,position", [
    ({"regex": "a" * 10_001, "alphabet": ["a"]}, "max_regex_length", "regex", None),
    ({"regex": "a", "alphabet": [chr(0x100 + i) for i in range(65)]}, "max_alphabet", "alphabet", None),
    ({"formula": "MOD(997,0) & MOD(991,0) & MOD(983,0)", "alphabet": ["a", "b"]}, "max_states", "formula", None),
    ({"formula": "Y^1000 a & Y^999 a & Y^998 b", "alphabet": ["a", "b"]}, "max_states", "formula", None),
    ({"formula": "MOD(99999999999999999999,1)", "alphabet": ["a", "b"]}, "max_repetition", "formula", 4),
    ({"formula": "Y^99999 a", "alphabet": ["a", "b"]}, "max_repetition", "formula", 0),
])
def test_limit_errors_name_field_and_position(client: Any, body: dict, limit: str, field: str, position: int | None) -> None:
    resp = client.post("/v1/languages", json=body)
    assert resp.status_code == 422, resp.text
    problem = resp.json()
    assert problem["code"] == "limit-exceeded" and problem["limit"] == limit, problem
    assert problem["field"] == field, problem
    if position is not None:
        assert problem["position"] == position and f"at position {position}" in problem["detail"], problem


@pytest.mark.parametrize("query,names", [
    ("min_states=5&max_states=2", ("min_states", "max_states")),
    ("states=3&min_states=5", ("states", "min_states")),
    ("states=9&max_states=5", ("states", "max_states")),
])
def test_contradictory_state_filters_are_422(client: Any, query: str, names: tuple[str, ...]) -> None:
    resp = client.get(f"/v1/languages?{query}")
    assert resp.status_code == 422, resp.text
    problem = resp.json()
    assert problem["code"] == "invalid-input"
    for name in names:
        assert name in problem["detail"], problem
    assert client.get("/v1/languages?min_states=2&max_states=2&states=2").status_code == 200


@pytest.mark.parametrize("kwargs,named", [({"bogus": 1}, "bogus"), ({"time_limit": 5}, "time_limit_s"),
                                          ({"max_params": 5}, "max_parameters")])
def test_python_construct_refuses_unknown_keywords(kwargs: dict, named: str) -> None:
    import langclass

    with pytest.raises(InputError) as info:
        langclass.construct(regex="(ab)*", alphabet="ab", **kwargs)
    assert named in str(info.value) and "all_words_up_to" in str(info.value)


def test_python_construct_time_limit_and_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import langclass
    import langclass.models.construct.verify as verify

    seen: dict[str, Any] = {}

    def fake(spec: dict, limits: Limits) -> dict:
        seen.update(spec=spec, limits=limits)
        return {"exact": True}

    monkeypatch.setattr(verify, "run_construction", fake)
    langclass.construct(regex="(ab)*", alphabet="ab", time_limit_s=5, max_parameters=1234,
                        limits=Limits(max_parameters=10_000))
    assert seen["limits"].time_limit_s == 5.0 and seen["spec"]["max_parameters"] == 1234
    with pytest.raises(InputError):
        langclass.construct(regex="(ab)*", alphabet="ab", time_limit_s=0)


def test_python_construct_budget_only_lowers_the_limit() -> None:
    import langclass

    with pytest.raises(LimitExceeded) as info:
        langclass.construct(regex="0*((11)+0+|1(11)*(00)+)*1*", alphabet="01", max_parameters=200_000,
                            limits=Limits(max_parameters=1000))
    assert info.value.extra["limit"] == "max_parameters"


def test_replay_reads_the_api_dfa_json() -> None:
    import langclass
    from langclass.core.algebra.classes import ReplayError, replay

    record = langclass.classify("(ab)*", alphabet="ab").to_dict()
    for key in ("ltl_p", "ltl_p_mod", "star_free"):
        replay(record["dfa"], record["classes"][key])
    with pytest.raises(InputError):
        replay({"alphabet": ["a"], "transitions": "nope"}, record["classes"]["ltl_p"])
    other = langclass.classify("a*", alphabet="ab").to_dict()
    with pytest.raises(ReplayError):
        replay(other["dfa"], record["classes"]["ltl_p"])
