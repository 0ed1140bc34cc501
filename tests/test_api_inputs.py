"""Hostile request bodies and HTTP edge cases: every one is a specific problem+json, never a 500.

Covers: lone surrogates (API and core parsers), duplicate JSON keys anywhere in a body, wrong
Content-Type (415), invalid UTF-8 and malformed JSON (400 ``malformed-json``), deep nesting (422
``max_json_depth``), 405 ``Allow`` headers and HEAD, problem docs as plain text, deleting a language
that has jobs (409 unless ``?cascade=true``), experiment field paths, and that every limit name
raised anywhere in ``langclass`` is a setting (or a documented fixed bound).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from langclass.core.base.errors import AlphabetError, DfaFormatError, LimitExceeded, RegexSyntaxError
from langclass.core.base.limits import Limits

ROOT = Path(__file__).resolve().parents[1]
JSON = {"content-type": "application/json"}


@pytest.fixture
def client(make_client: Any, _migrated_sqlite: str) -> Any:
    from conftest import _empty_all_tables

    _empty_all_tables(_migrated_sqlite)
    return make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0)


def _problem(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == code and body["status"] == status and body["type"] == f"/problems/{code}", body
    return body


# --- lone surrogates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,field",
    [
        ('{"regex":"a","alphabet":["a","\\ud800"]}', "alphabet[1]"),
        ('{"regex":"a\\ud800","alphabet":["a"]}', "regex"),
        ('{"formula":"a","alphabet":["\\udfff"]}', "alphabet[0]"),
        ('{"dfa":{"alphabet":["a"],"states":["\\ud800"],"initial":"\\ud800","accepting":[],"transitions":{}}}', "dfa.states[0]"),
        ('{"dfa":{"alphabet":["a"],"states":[0],"initial":0,"accepting":[],"transitions":{"0":{"\\ud800":0}}}}', "dfa.transitions.0.\\ud800"),
        ('{"regex":"a","alphabet":["a"],"name":"x\\ud800"}', "name"),
    ],
)
def test_lone_surrogates_are_422_naming_the_field(client: Any, raw: str, field: str) -> None:
    for path in ("/v1/classify", "/v1/languages"):
        body = _problem(client.post(path, content=raw, headers=JSON), 422, "invalid-input")
        assert body["field"] == field and "surrogate" in body["detail"]


def test_nul_in_name_or_tag_is_422_not_a_storage_error(client: Any) -> None:
    """PostgreSQL text columns cannot hold U+0000: refuse it at the boundary on every backend."""
    path = "/v1/languages"
    for raw, field in (('{"regex":"a","alphabet":["a"],"name":"x\\u0000y"}', "name"),
                       ('{"regex":"a","alphabet":["a"],"tags":["t\\u0000"]}', "tags[0]")):
        body = _problem(client.post(path, content=raw, headers=JSON), 422, "validation-error")
        assert "NUL" in body["detail"] and field.split("[")[0] in body["detail"], body


def test_nul_in_the_name_filter_is_422(client: Any) -> None:
    body = _problem(client.get("/v1/languages", params={"name": "\x00"}), 422, "invalid-input")
    assert body["field"] == "name"


def test_core_parsers_refuse_lone_surrogates() -> None:
    from langclass.core.logic.formulas import formula_to_dfa
    from langclass.core.ingest.parse import normalize_alphabet, parse_dfa_json, parse_regex

    with pytest.raises(AlphabetError) as e:
        normalize_alphabet(["a", "\ud800"])
    assert e.value.field == "alphabet[1]"
    with pytest.raises(AlphabetError):
        parse_regex("a", ["a", "\ud800"])
    with pytest.raises(RegexSyntaxError) as r:
        parse_regex("ab\udcff", ["a", "b"])
    assert r.value.extra["position"] == 2
    with pytest.raises(DfaFormatError):
        parse_dfa_json({"alphabet": ["a"], "states": ["\ud800"], "initial": "\ud800", "accepting": [], "transitions": {}})
    with pytest.raises(AlphabetError):
        parse_dfa_json({"alphabet": ["\ud800"], "states": [0], "initial": 0, "accepting": [], "transitions": {}})
    with pytest.raises(AlphabetError) as f:
        formula_to_dfa("a", ["a", "\ud800"], Limits())
    assert f.value.field == "alphabet[1]"


def test_problem_details_quoting_a_surrogate_still_render(client: Any) -> None:
    """A detail that quotes user input with a surrogate (here from the CLI-style DFA parser path)
    is escaped, not a 500."""
    from langclass.app.web.problems import problem_response

    resp = problem_response(422, "invalid-input", "Invalid input", "symbol '\ud800' unknown", field="x.\ud800")
    assert b"\\\\ud800" in resp.body


# --- duplicate keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,field,code",
    [
        ('{"regex":"a","alphabet":["a"],"alphabet":["a","b"]}', "alphabet", "invalid-input"),
        ('{"regex":"a","regex":"b","alphabet":["a","b"]}', "regex", "invalid-input"),
        ('{"regex":"a","alphabet":["a"],"tags":["x"],"name":"n","name":"m"}', "name", "invalid-input"),
        ('{"dfa":{"alphabet":["a"],"states":[0],"initial":0,"initial":0,"accepting":[],"transitions":{}}}', "dfa.initial", "invalid-dfa"),
    ],
)
def test_duplicate_keys_anywhere_are_refused(client: Any, raw: str, field: str, code: str) -> None:
    for path in ("/v1/classify", "/v1/languages"):
        body = _problem(client.post(path, content=raw, headers=JSON), 422, code)
        assert body["field"] == field and "duplicate JSON key" in body["detail"]


def test_duplicate_keys_in_experiment_bodies_are_refused(client: Any) -> None:
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    raw = '{"kind":"train","encodings":["nope"],"seeds":[0],"seeds":[1]}'
    body = _problem(client.post(f"/v1/languages/{lid}/experiments", content=raw, headers=JSON), 422, "invalid-input")
    assert body["field"] == "seeds"


# --- media type, encoding, syntax, depth --------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
     "application/json; charset=latin-1"],
)
def test_wrong_content_type_is_415(client: Any, content_type: str | None) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    for path in ("/v1/classify", "/v1/languages"):
        body = _problem(client.post(path, content=b'{"regex":"a","alphabet":["a"]}', headers=headers), 415, "unsupported-media-type")
        assert body["field"] == "Content-Type"
    ok = client.post("/v1/classify", content=b'{"regex":"a","alphabet":["a"]}', headers={"content-type": "application/json; charset=utf-8"})
    assert ok.status_code == 200
    assert client.post("/v1/classify", content=b'{"regex":"a","alphabet":["a"]}', headers={"content-type": "application/vnd.x+json"}).status_code == 200


def test_415_is_documented_in_openapi(client: Any) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "415" in paths["/v1/classify"]["post"]["responses"]
    assert "415" in paths["/v1/languages"]["post"]["responses"]
    assert "requestBody" in paths["/v1/classify"]["post"]  # the schema is intact


def test_invalid_utf8_and_malformed_json_are_specific(client: Any) -> None:
    body = _problem(client.post("/v1/classify", content=b'{"regex":"\xff","alphabet":["a"]}', headers=JSON), 400, "malformed-json")
    assert "UTF-8" in body["detail"] and body["position"] == 10
    body = _problem(client.post("/v1/classify", content=b'{"regex": "a",,}', headers=JSON), 400, "malformed-json")
    assert "line 1 column 15" in body["detail"] and body["position"] == 14
    body = _problem(client.post("/v1/classify", content=b'{"regex": NaN}', headers=JSON), 400, "malformed-json")  # NaN is not JSON


def test_deep_nesting_is_a_named_limit(make_client: Any, _migrated_sqlite: str) -> None:
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, max_json_depth=8)
    deep = "[" * 100_000 + "]" * 100_000
    body = _problem(client.post("/v1/classify", content=deep, headers=JSON), 422, "limit-exceeded")
    assert body["limit"] == "max_json_depth" and body["setting"] == "LANGCLASS_MAX_JSON_DEPTH"
    nine = '{"regex":"a","alphabet":["a"],"name":' + "[" * 8 + "]" * 8 + "}"
    body = _problem(client.post("/v1/classify", content=nine, headers=JSON), 422, "limit-exceeded")
    assert body["value"] == 8 and body["field"].startswith("name")
    # a DFA body is 4 levels deep: well inside the default
    dfa = {"dfa": {"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [0], "transitions": {"0": {"a": 0}}}}
    assert client.post("/v1/classify", json=dfa).status_code == 200


# --- methods ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path,allow",
    [("PUT", "/v1/languages", "GET, HEAD, POST"), ("POST", "/healthz", "GET, HEAD"), ("DELETE", "/v1/classify", "POST"),
     ("PUT", "/v1/languages/" + "0" * 64, "DELETE, GET, HEAD, PATCH"), ("HEAD", "/v1/classify", "POST")],
)
def test_405_names_the_allowed_methods(client: Any, method: str, path: str, allow: str) -> None:
    resp = client.request(method, path)
    assert resp.status_code == 405 and resp.headers["allow"] == allow
    if method != "HEAD":
        assert resp.json()["detail"] == f"{method} is not allowed on {path}"


def test_head_answers_like_get_without_a_body(client: Any) -> None:
    for path in ("/healthz", "/v1/languages", "/v1/encodings", "/problems"):
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code == 200
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
        assert head.headers["content-length"] == str(len(get.content))
    assert client.head("/v1/languages/" + "0" * 64).status_code == 404


# --- problem documentation ----------------------------------------------------------------------------


def test_problem_docs_are_plain_text(client: Any) -> None:
    doc = client.get("/problems/regex-syntax").json()
    assert "`" not in doc["description"] and "extra[" not in doc["description"]
    assert '"position" member' in doc["description"]
    for problem in client.get("/problems").json():
        assert "``" not in problem["description"] and ":class:" not in problem["description"], problem
    codes = {p["code"] for p in client.get("/problems").json()}
    assert {"malformed-json", "unsupported-media-type", "conflict", "limit-exceeded"} <= codes


def test_api_docs_list_every_problem_code(client: Any) -> None:
    """docs/api.md (the error table the README links to) names every problem code with its status."""
    doc = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for problem in client.get("/problems").json():
        assert re.search(rf"^\| `{re.escape(problem['code'])}` \| {problem['status']} \|", doc, re.M), problem["code"]


# --- deleting a language with jobs --------------------------------------------------------------------


def test_deleting_a_language_with_jobs_needs_cascade(client: Any) -> None:
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    job = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "train", "encodings": ["nope"], "seeds": [0]})
    assert job.status_code == 202, job.text
    jid = job.json()["id"]
    body = _problem(client.delete(f"/v1/languages/{lid}"), 409, "conflict")
    assert body["jobs"] == 1 and "cascade=true" in body["detail"] and body["field"] == "cascade"
    assert client.get(f"/v1/languages/{lid}").status_code == 200 and client.get(f"/v1/jobs/{jid}").status_code == 200
    assert client.delete(f"/v1/languages/{lid}", params={"cascade": "true"}).status_code == 204
    assert client.get(f"/v1/languages/{lid}").status_code == 404
    assert client.get(f"/v1/jobs/{jid}").status_code == 404
    # without jobs a plain DELETE works
    lid = client.post("/v1/languages", json={"regex": "a*", "alphabet": ["a", "b"]}).json()["id"]
    assert client.delete(f"/v1/languages/{lid}").status_code == 204


# --- experiment field paths ---------------------------------------------------------------------------


def test_unknown_encoding_name_is_reported_at_its_index(client: Any) -> None:
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "train", "encodings": ["nope", "bogus"], "seeds": [0]})
    body = _problem(r, 422, r.json()["code"])
    assert body["field"] == "encodings[1]", body


# --- formulas -----------------------------------------------------------------------------------------------


def test_formula_state_limit_is_hit_early(make_client: Any, _migrated_sqlite: str) -> None:
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, time_limit_s=20.0, max_states=20_000)
    body = _problem(client.post("/v1/classify", json={"formula": "Y^200 a", "alphabet": ["a", "b"]}), 422, "limit-exceeded")
    assert body["limit"] == "max_states" and body["setting"] == "LANGCLASS_MAX_STATES"


def test_mod_remainder_is_normalized_visibly(client: Any) -> None:
    r = client.post("/v1/classify", json={"formula": "MOD(2,5)", "alphabet": ["a", "b"]})
    assert r.status_code == 200
    src = r.json()["source"]
    assert src["formula"] == "MOD(2,5)" and src["parsed"] == "MOD(2,1)"
    assert src["notes"] == ["MOD(2,5) is read as MOD(2,1): the remainder is taken modulo m"]
    same = client.post("/v1/classify", json={"formula": "MOD(2,1)", "alphabet": ["a", "b"]}).json()
    assert same["id"] == r.json()["id"] and "notes" not in same["source"]


# --- every limit is named by a setting ---------------------------------------------------------------------


# Bounds fixed in code (not settings); docs/configuration.md documents each, with where it applies.
FIXED_LIMITS = {
    "max_sample_length", "max_ffn_inputs", "max_verify_words",
    "max_monomials", "max_census_languages", "max_window_states", "max_y_offset", "max_star_free_monoid",
    "max_star_free_nodes", "max_block_words", "max_marks", "certified_length_work", "lt_commutativity_work", "ltt_identity_work",
    "multiplication_table_entries", "max_nonstrict_i_variables", "orbit_work", "marked_work", "local_da_work",
    "replay_levels_max", "replay_work", "replay_table_entries", "replay_group_order",
    "max_sample_languages", "max_sweep_runs", "max_lengths", "crasp_work", "max_positions",
    "n_ctx", "tlens_max_n_ctx", "tlens_max_check_words",
}


def _raised_limit_names() -> set[str]:
    """Every limit name given as a string literal to ``LimitExceeded(...)``, ``TimeLimitExceeded(...)``,
    ``Limits.check(...)`` or a helper ``_limit_error(...)`` anywhere in ``langclass``."""
    names: set[str] = set()
    for path in (ROOT / "langclass").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if fname in ("LimitExceeded", "TimeLimitExceeded", "_limit_error") or (fname == "check" and isinstance(func, ast.Attribute) and "limit" in ast.unparse(func.value).lower()):
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.add(first.value)
    return names


def test_every_limit_name_is_a_setting_or_a_documented_fixed_bound() -> None:
    from langclass.app.settings import Settings, setting_for_limit

    names = _raised_limit_names()
    assert {"max_states", "max_monoid_size", "max_monoid_entries", "time_limit_s", "max_regex_length"} <= names
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name in sorted(names):
        if name in FIXED_LIMITS:
            assert f"`{name}`" in doc, f"fixed bound {name} is not documented in docs/configuration.md"
            continue
        assert name in Settings.model_fields, f"limit {name!r} has no LANGCLASS_ setting"
        assert setting_for_limit(name) in doc, f"{setting_for_limit(name)} is not documented in docs/configuration.md"
    # every Limits field is configurable
    for field in Limits.__dataclass_fields__:
        assert field in Settings.model_fields, field
    assert FIXED_LIMITS & set(Settings.model_fields) == set()


def test_monoid_entries_limit_is_configurable_end_to_end(make_client: Any, _migrated_sqlite: str) -> None:
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, max_monoid_entries=10)
    r = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
    assert r.status_code == 201, r.text
    body = _problem(client.get(f"/v1/languages/{r.json()['id']}/monoid"), 409, "conflict")
    assert body["limit"] == "max_monoid_entries" and body["value"] == 10 and body["setting"] == "LANGCLASS_MAX_MONOID_ENTRIES"


def test_time_limit_names_the_step(make_client: Any, _migrated_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cooperative deadline names the step; the kill backstop (a process that did not answer
    # within the grace) cannot. A long grace makes the cooperative path the one under test even on a
    # loaded machine (the kill itself is tested in the admission/time-limit tests).
    from langclass.app.execution import runner

    monkeypatch.setattr(runner, "kill_grace_s", lambda remaining: 120.0)
    for isolation in ("thread", "process"):
        # 2 s, not less: the budget counts from the request's arrival, so a hand-off slowed by a loaded
        # machine must not spend it before the worker starts (then no step could be named); the
        # language needs far longer than 2 s whatever the machine.
        client = make_client(_migrated_sqlite, classify_isolation=isolation, worker_slots=0, time_limit_s=2.0, max_states=10**6)
        body = _problem(client.post("/v1/classify", json={"regex": "(a|b)*a(a|b){18}", "alphabet": ["a", "b"]}), 422, "time-limit-exceeded")
        assert body["limit"] == "time_limit_s" and body["step"] and f"during {body['step']}" in body["detail"], body
        assert body["setting"] == "LANGCLASS_TIME_LIMIT_S"


def test_limit_error_class_carries_limit() -> None:
    err = LimitExceeded("max_states", 5)
    assert err.extra == {"limit": "max_states", "value": 5}
    assert re.search("max_states", err.detail)


def test_schemas_refuse_lone_surrogates() -> None:
    """The request models themselves (used from Python too) refuse lone surrogates, naming the field."""
    from pydantic import ValidationError

    from langclass.app.usecases.schemas import ClassifyInput, LanguageInput

    for data, loc in [({"regex": "a\ud800", "alphabet": ["a"]}, ("regex",)), ({"regex": "a", "alphabet": ["a", "\udfff"]}, ("alphabet", 1)),
                      ({"formula": "\ud800"}, ("formula",))]:
        with pytest.raises(ValidationError) as e:
            ClassifyInput(**data)
        assert e.value.errors()[0]["loc"] == loc and "surrogate" in e.value.errors()[0]["msg"]
    with pytest.raises(ValidationError):
        LanguageInput(regex="a", alphabet=["a"], tags=["ok", "x\ud800"])
    assert ClassifyInput(regex="(ab)*", alphabet=["a", "b"]).regex == "(ab)*"
