"""The REST API end to end on SQLite and PostgreSQL (``api`` is parametrized over both backends).

Expected class memberships come from the vendored ground truth (``tests/ground_truth.json``,
computed by brute force on the syntactic monoid), not from the code under test.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import pytest
from _ground_truth import BY_ID, EXPECTED_TO_KEY

from langclass.core.ingest.parse import parse_regex

GROUND_TRUTH = BY_ID
GT_TO_CLASS = EXPECTED_TO_KEY

SAMPLE = ["aa_star", "ab_star", "starts_with_a", "ends_with_a", "parity"]
SAMPLE = [k for k in SAMPLE if k in GROUND_TRUTH] or list(GROUND_TRUTH)[:5]

KEY = "test-key-0123456789"


def _regex_body(gt_id: str, **extra: Any) -> dict[str, Any]:
    lang = GROUND_TRUTH[gt_id]
    return {"regex": lang["regex"], "alphabet": lang["alphabet"], **extra}


def _dfa_body(gt_id: str) -> dict[str, Any]:
    lang = GROUND_TRUTH[gt_id]
    return {"dfa": {"alphabet": lang["alphabet"], **lang["dfa"]}}


def _is_problem(resp: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json"), resp.headers["content-type"]
    body = resp.json()
    for member in ("type", "title", "status", "detail", "code"):
        assert member in body, body
    assert body["status"] == status and body["type"] == f"/problems/{body['code']}"
    if code is not None:
        assert body["code"] == code, body
    return body


# --- classification -------------------------------------------------------------------------


def test_ab_star_is_ltl_p_mod_with_period_2(api: Any) -> None:
    r = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"], "name": "(ab)*", "tags": ["periodic"]})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["id"] == parse_regex("(ab)*", ["a", "b"]).fingerprint()
    assert r.headers["location"] == f"/v1/languages/{body['id']}"
    assert body["classes"]["ltl_p_mod"]["member"] is True
    assert body["classes"]["ltl_p_mod"]["period"] == 2
    assert body["classes"]["ltl_p"]["member"] is False
    assert body["num_states"] == 3 and body["alphabet"] == ["a", "b"]
    assert body["name"] == "(ab)*" and body["tags"] == ["periodic"]
    assert body["source"] == {"kind": "regex", "regex": "(ab)*", "alphabet": ["a", "b"]}
    for field in ("dfa", "monoid", "encodings", "created_at", "code_version"):
        assert field in body
    listed = api.get("/v1/languages", params={"class": "ltl_p_mod", "member": "true"}).json()
    assert [item["id"] for item in listed["items"]] == [body["id"]]


@pytest.mark.parametrize("gt_id", SAMPLE)
def test_classes_agree_with_ground_truth(api: Any, gt_id: str) -> None:
    lang = GROUND_TRUTH[gt_id]
    body = api.post("/v1/classify", json=_regex_body(gt_id)).json()
    assert body["num_states"] == lang["extra"]["min_dfa_states"]
    for gt_key, class_key in GT_TO_CLASS.items():
        assert body["classes"][class_key]["member"] is lang["expected"][gt_key], (gt_id, class_key)
    period = body["classes"]["ltl_p_mod"].get("period")
    assert period == lang["expected"]["min_k"], (gt_id, period)


def test_post_is_idempotent_across_spellings_and_input_kinds(api: Any) -> None:
    first = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"], "name": "first"})
    assert first.status_code == 201
    again = api.post("/v1/languages", json={"regex": "((ab)*)*(ab)*", "alphabet": ["a", "b"], "name": "second"})
    assert again.status_code == 200, again.text
    # the stored record, labels unchanged, and the answer says so
    stored = {k: v for k, v in first.json().items() if k not in ("already_stored", "labels_not_applied")}
    assert again.json() == {**stored, "already_stored": True, "labels_not_applied": {"name": "second"}}
    as_dfa = api.post("/v1/languages", json=_dfa_body("ab_star"))
    assert as_dfa.status_code == 200 and as_dfa.json()["id"] == first.json()["id"]
    # another alphabet is another language
    other = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b", "c"]})
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert len(api.get("/v1/languages").json()["items"]) == 2


def test_concurrent_posts_of_one_language_store_one_record(api: Any) -> None:
    """Spellings of one language posted at the same time: exactly one 201, the rest 200, one row."""
    from concurrent.futures import ThreadPoolExecutor

    spellings = ["(a|b)*a", "(b*a)+", "(a|b)*a(a*)", "((a|b)*a)+", "b*a((a|b)*a)?", "(a|b)*(a|ba)a*"]
    with ThreadPoolExecutor(len(spellings)) as pool:
        responses = list(pool.map(lambda r: api.post("/v1/languages", json={"regex": r, "alphabet": ["a", "b"]}), spellings))
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * (len(spellings) - 1) + [201], [r.text for r in responses]
    assert len({r.json()["id"] for r in responses}) == 1
    assert len(api.get("/v1/languages").json()["items"]) == 1


def test_dfa_input_with_string_states_and_partial_transitions(api: Any) -> None:
    dfa = {"alphabet": ["a", "b"], "states": ["s", "t"], "initial": "s", "accepting": ["s"], "transitions": {"s": {"a": "t"}, "t": {"b": "s"}}}
    r = api.post("/v1/languages", json={"dfa": dfa})
    assert r.status_code == 201, r.text
    assert r.json()["id"] == parse_regex("(ab)*", ["a", "b"]).fingerprint()
    assert r.json()["source"] == {"kind": "dfa", "dfa": dfa}


def test_formula_input(api: Any) -> None:
    """Past-LTL formulas are a third input kind: Y a = Σ*a, MOD(2,1) over {a} = (aa)*."""
    r = api.post("/v1/languages", json={"formula": "Y a", "alphabet": ["a", "b"]})
    assert r.status_code == 201, r.text
    assert r.json()["id"] == parse_regex("(a|b)*a", ["a", "b"]).fingerprint()
    assert r.json()["source"] == {"kind": "formula", "formula": "Y a", "alphabet": ["a", "b"], "parsed": "Y a"}
    again = api.post("/v1/languages", json={"regex": "(a|b)*a", "alphabet": ["a", "b"]})
    assert again.status_code == 200 and again.json()["id"] == r.json()["id"]
    aa = api.post("/v1/classify", json={"formula": "MOD(2,1)", "alphabet": ["a"]}).json()
    assert aa["id"] == parse_regex("(aa)*", ["a"]).fingerprint()
    problem = _is_problem(api.post("/v1/classify", json={"formula": "P (a &", "alphabet": ["a", "b"]}), 422, "formula-syntax")
    assert problem["field"].startswith("formula")
    _is_problem(api.post("/v1/classify", json={"formula": "P a"}), 422, "invalid-alphabet")
    _is_problem(api.post("/v1/classify", json={"formula": "P c", "alphabet": ["a", "b"]}), 422, "unknown-symbol")


def test_classify_does_not_store(api: Any) -> None:
    r = api.post("/v1/classify", json={"regex": "a(a|b)*", "alphabet": ["a", "b"]})
    assert r.status_code == 200
    assert r.json()["classes"]["ltl_p"]["member"] is True
    assert api.get("/v1/languages").json()["items"] == []
    assert api.get(f"/v1/languages/{r.json()['id']}").status_code == 404
    stored = api.post("/v1/languages", json={"regex": "a(a|b)*", "alphabet": ["a", "b"]}).json()
    for key in ("id", "classes", "monoid", "encodings", "num_states", "dfa"):
        assert stored[key] == r.json()[key]


def test_sub_resources(api: Any) -> None:
    lid = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    assert api.get(f"/v1/languages/{lid}").json()["id"] == lid
    dfa = api.get(f"/v1/languages/{lid}/dfa").json()
    assert dfa["alphabet"] == ["a", "b"] and len(dfa["states"]) == 3
    again = api.post("/v1/classify", json={"dfa": dfa}).json()
    assert again["id"] == lid  # exported DFA parses back to the same language
    dot = api.get(f"/v1/languages/{lid}/dfa", params={"format": "dot"})
    assert dot.status_code == 200 and dot.headers["content-type"].startswith("text/vnd.graphviz")
    assert dot.text.lstrip().startswith("digraph")
    monoid = api.get(f"/v1/languages/{lid}/monoid", params={"limit": 2})
    assert monoid.status_code == 200, monoid.text
    page = monoid.json()
    assert page["id"] == lid and page["size"] == 6  # syntactic monoid of (ab)*: {1, a, b, ab, ba, 0}
    assert len(page["elements"]) == 2
    rest = api.get(f"/v1/languages/{lid}/monoid", params={"offset": 2, "limit": 100}).json()
    elements = page["elements"] + rest["elements"]
    words = [tuple(e["word"]) for e in elements]
    assert len(words) == 6 and len(set(words)) == 6
    # replay on the DFA: the words act as 6 distinct transformations, and "idempotent" means w·w acts as w
    machine = parse_regex("(ab)*", ["a", "b"])
    act = {w: tuple(machine.run(list(w), q) for q in range(machine.num_states)) for w in words}
    assert len(set(act.values())) == 6
    for e in elements:
        w = tuple(e["word"])
        assert e["idempotent"] == (act[w] == tuple(machine.run(list(w) * 2, q) for q in range(machine.num_states))), w
    assert sum(e["idempotent"] for e in elements) == page["idempotents"] == 4
    enc = api.get(f"/v1/languages/{lid}/encodings").json()
    assert enc["id"] == lid and enc["classes"]["ltl_p_mod"] is True and set(enc["encodings"]) >= {"soft", "hard"}
    catalogue = api.get("/v1/encodings")
    assert catalogue.status_code == 200 and len(catalogue.json()) >= 3


def test_filters_and_pagination(api: Any) -> None:
    ids = {}
    for gt_id in SAMPLE:
        r = api.post("/v1/languages", json=_regex_body(gt_id, name=GROUND_TRUTH[gt_id]["name"]))
        assert r.status_code == 201, r.text
        ids[gt_id] = r.json()["id"]
    for gt_key, class_key in GT_TO_CLASS.items():
        for member in (True, False):
            got = set()
            cursor = None
            while True:
                params = {"class": class_key, "member": str(member).lower(), "limit": 2}
                if cursor:
                    params["cursor"] = cursor
                page = api.get("/v1/languages", params=params).json()
                got |= {item["id"] for item in page["items"]}
                assert all(item["classes"][class_key] is member for item in page["items"])
                cursor = page["next_cursor"]
                if not cursor:
                    break
            expect = {ids[g] for g in SAMPLE if GROUND_TRUTH[g]["expected"][gt_key] is member}
            assert got == expect, (class_key, member)
    unary = {ids[g] for g in SAMPLE if len(GROUND_TRUTH[g]["alphabet"]) == 1}
    assert {i["id"] for i in api.get("/v1/languages", params={"alphabet_size": 1}).json()["items"]} == unary
    two = {ids[g] for g in SAMPLE if GROUND_TRUTH[g]["extra"]["min_dfa_states"] == 2}
    assert {i["id"] for i in api.get("/v1/languages", params={"states": 2}).json()["items"]} == two
    named = api.get("/v1/languages", params={"name": "OVER {A}"}).json()["items"]
    assert {i["id"] for i in named} == {ids[g] for g in SAMPLE if "over {a}" in GROUND_TRUTH[g]["name"].lower()}
    # pages of one, in a stable order, cover everything exactly once
    seen: list[str] = []
    cursor = None
    while True:
        page = api.get("/v1/languages", params={"limit": 1, **({"cursor": cursor} if cursor else {})}).json()
        seen += [i["id"] for i in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [i["id"] for i in api.get("/v1/languages", params={"limit": 200}).json()["items"]]
    assert sorted(seen) == sorted(ids.values())


def test_delete(api: Any) -> None:
    lid = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    assert api.delete(f"/v1/languages/{lid}").status_code == 204
    _is_problem(api.get(f"/v1/languages/{lid}"), 404, "not-found")
    _is_problem(api.delete(f"/v1/languages/{lid}"), 404, "not-found")
    assert api.get("/v1/languages", params={"class": "ltl_p_mod"}).json()["items"] == []


def test_persistence_across_app_instances(make_client: Any, migrated_url: str) -> None:
    first = make_client(migrated_url)
    created = first.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"], "name": "kept"}).json()
    first.__exit__(None, None, None)
    second = make_client(migrated_url)
    got = second.get(f"/v1/languages/{created['id']}")
    created.pop("already_stored"), created.pop("labels_not_applied")  # only in POST answers
    assert got.status_code == 200 and got.json() == created
    assert second.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).status_code == 200


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,code,field",
    [
        ({"regex": "(ab", "alphabet": ["a", "b"]}, "regex-syntax", "regex"),
        ({"regex": "ac", "alphabet": ["a", "b"]}, "unknown-symbol", "regex"),
        ({"regex": "(ab)*"}, "invalid-alphabet", "alphabet"),
        ({"regex": "a", "alphabet": []}, "invalid-alphabet", "alphabet"),
        ({"regex": "a", "alphabet": ["a", "a"]}, "invalid-alphabet", "alphabet"),
        ({"regex": "a", "alphabet": ["a"], "dfa": {"alphabet": ["a"]}}, "invalid-input", "dfa"),
        ({}, "invalid-input", "regex"),
        ({"dfa": {"alphabet": ["a"], "states": [0], "initial": 1, "accepting": [], "transitions": {}}}, "invalid-dfa", None),
        ({"dfa": {"alphabet": ["a"], "states": [0, 1], "initial": 0, "accepting": [], "transitions": {"0": {"a": [0, 1]}}}}, "invalid-dfa", None),
        ({"dfa": {"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [], "transitions": {"0": {"z": 0}}}}, None, None),
        ({"regex": 5, "alphabet": ["a"]}, "validation-error", "regex"),
        ({"regex": "a", "alphabet": ["a"], "colour": "red"}, "validation-error", "colour"),
    ],
)
def test_invalid_languages_are_422_naming_the_problem(api: Any, body: dict, code: str | None, field: str | None) -> None:
    for path in ("/v1/classify", "/v1/languages"):
        problem = _is_problem(api.post(path, json=body), 422, code)
        if field is not None:
            assert re.split(r"[.\[]", problem.get("field", ""))[0] == field, problem
        elif code == "invalid-dfa" or "dfa" in body:
            assert problem.get("field", "").startswith("dfa"), problem


def test_duplicate_json_keys_in_a_dfa_are_rejected(api: Any) -> None:
    raw = b'{"dfa": {"alphabet": ["a"], "states": [0, 1], "initial": 0, "accepting": [0], "transitions": {"0": {"a": 1}, "0": {"a": 0}}}}'
    problem = _is_problem(api.post("/v1/classify", content=raw, headers={"content-type": "application/json"}), 422, "invalid-dfa")
    assert problem["field"] == "dfa.transitions.0"


def test_limits_are_named(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, max_states=4)
    problem = _is_problem(client.post("/v1/classify", json={"regex": "(a|b)*a(a|b)(a|b)", "alphabet": ["a", "b"]}), 422)
    assert problem["code"] == "limit-exceeded" and problem["limit"] == "max_states" and problem["value"] == 4
    problem = _is_problem(make_client(migrated_url, max_regex_length=5).post("/v1/classify", json={"regex": "aaaaaaaaaa", "alphabet": ["a"]}), 422)
    assert problem["limit"] == "max_regex_length"


def test_monoid_over_its_cap_is_stored_as_undecided(make_client: Any, migrated_url: str) -> None:
    """Over max_monoid_size the automaton-decidable classes are still answered; the others are
    null (undecided), are in neither member=true nor member=false listings, and the monoid page
    names the limit."""
    client = make_client(migrated_url, max_monoid_size=3)
    r = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["classes"]["ltl_p_mod"]["member"] is True and body["classes"]["ltl_p"]["member"] is False
    undecided = [k for k, v in body["classes"].items() if v["member"] is None]
    assert undecided, body["classes"]
    key = undecided[0]
    for member in ("true", "false"):
        assert client.get("/v1/languages", params={"class": key, "member": member}).json()["items"] == []
    # a read of a stored language is not an invalid request: 409 with the reason and the stored summary
    problem = _is_problem(client.get(f"/v1/languages/{body['id']}/monoid"), 409, "conflict")
    assert problem["limit"] == "max_monoid_size" and problem["value"] == 3 and problem["setting"] == "LANGCLASS_MAX_MONOID_SIZE"
    assert "cannot be listed" in problem["detail"] and problem["monoid"] == body["monoid"]


def test_http_errors_are_problems(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, max_body_bytes=2048)
    _is_problem(client.get("/v1/nowhere"), 404, "not-found")
    _is_problem(client.get("/v1/languages/" + "0" * 64), 404, "not-found")
    p = _is_problem(client.put("/v1/languages"), 405, "method-not-allowed")
    assert p["instance"] == "/v1/languages"
    big = {"regex": "a" * 5000, "alphabet": ["a"]}
    _is_problem(client.post("/v1/classify", json=big), 413, "payload-too-large")

    def chunks():  # no Content-Length: the streamed body is counted
        for _ in range(10):
            yield b" " * 1000

    _is_problem(client.post("/v1/classify", content=chunks(), headers={"content-type": "application/json"}), 413, "payload-too-large")
    _is_problem(client.post("/v1/classify", content=b"{not json", headers={"content-type": "application/json"}), 400, "malformed-json")
    _is_problem(client.get("/v1/languages", params={"cursor": "garbage"}), 400, "invalid-cursor")
    _is_problem(client.get("/v1/languages", params={"member": "true"}), 422, "invalid-input")
    _is_problem(client.get("/v1/languages", params={"class": "no_such_class"}), 422, "invalid-input")
    _is_problem(client.get("/v1/languages", params={"limit": 0}), 422, "validation-error")
    _is_problem(client.get("/v1/languages", params={"member": "maybe", "class": "ltl_p"}), 422, "validation-error")
    _is_problem(client.get("/v1/languages/x/dfa", params={"format": "svg"}), 422, "validation-error")
    doc = client.get("/problems/limit-exceeded")
    assert doc.status_code == 200 and doc.json()["status"] == 422


def test_time_limit_is_named_and_the_next_request_is_served(make_client: Any, migrated_url: str) -> None:
    """A request that hits the time limit ends in 422 naming time_limit_s and the step; the worker
    that ran it is replaced, so the next request is served. (That health checks and reads stay
    answered meanwhile is tested deterministically in test_admission.py.)"""
    client = make_client(migrated_url, time_limit_s=1.0, max_monoid_size=10**7, max_states=10**6)
    heavy = {"regex": "(a|b)*a(a|b){18}", "alphabet": ["a", "b"]}  # 2^19 subsets to determinize
    problem = _is_problem(client.post("/v1/classify", json=heavy), 422, "time-limit-exceeded")
    assert problem["limit"] == "time_limit_s" and problem["value"] == 1.0
    assert problem["step"] == "subset construction" and problem["setting"] == "LANGCLASS_TIME_LIMIT_S"
    pool = client.app.state.runner.pool  # a killed worker's replacement starts in the background
    end = time.monotonic() + 120
    while pool.idle_count() < 1 and time.monotonic() < end:
        time.sleep(0.05)
    ok = client.post("/v1/classify", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
    assert ok.status_code == 200


# --- access ----------------------------------------------------------------------------------


def test_api_keys(make_client: Any, migrated_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = make_client(migrated_url, api_keys=KEY)
    created = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
    assert created.status_code == 201  # storing is open by default
    lid = created.json()["id"]
    assert client.get(f"/v1/languages/{lid}").status_code == 200  # reads are open
    p = _is_problem(client.delete(f"/v1/languages/{lid}"), 401, "unauthorized")
    assert p["field"] == "Authorization"
    r = client.delete(f"/v1/languages/{lid}", headers={"Authorization": "Bearer wrong-key-9999"})
    _is_problem(r, 401, "unauthorized")
    assert "invalid_token" in r.headers["www-authenticate"]
    _is_problem(client.delete(f"/v1/languages/{lid}", headers={"Authorization": f"Basic {KEY}"}), 401)
    _is_problem(client.delete(f"/v1/languages/{lid}", headers={"Authorization": f"Bearer {KEY}x"}), 401)
    assert client.delete(f"/v1/languages/{lid}", headers={"Authorization": f"Bearer {KEY}"}).status_code == 204
    assert KEY not in caplog.text


def test_api_keys_for_writes(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, api_keys=f"{KEY},second-key-abcdef", require_key_for_writes=True)
    body = {"regex": "(ab)*", "alphabet": ["a", "b"]}
    _is_problem(client.post("/v1/languages", json=body), 401, "unauthorized")
    assert client.post("/v1/classify", json=body).status_code == 200  # computing without storing stays open
    assert client.post("/v1/languages", json=body, headers={"Authorization": "Bearer second-key-abcdef"}).status_code == 201


def test_placeholder_keys_are_refused() -> None:
    from langclass.app.settings import Settings, SettingsError

    with pytest.raises(SettingsError):
        Settings(api_keys="changeme")
    assert Settings(api_keys=" k1-abcdefgh , k2-abcdefgh ").api_keys == ["k1-abcdefgh", "k2-abcdefgh"]


# --- probes ----------------------------------------------------------------------------------


def test_health_and_readiness(api: Any) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_unmigrated_database_is_alive_but_not_ready(make_client: Any, database_url: str) -> None:
    fresh = make_client(database_url)
    assert fresh.get("/healthz").status_code == 200
    _is_problem(fresh.get("/readyz"), 503, "not-ready")


def test_openapi_documents_every_route_with_examples(api: Any) -> None:
    schema = api.get("/openapi.json").json()
    paths = schema["paths"]
    for path in ("/v1/languages", "/v1/classify", "/v1/languages/{language_id}", "/v1/languages/{language_id}/dfa",
                 "/v1/languages/{language_id}/monoid", "/v1/languages/{language_id}/encodings", "/v1/encodings",
                 "/healthz", "/readyz"):
        assert path in paths, path
    post = paths["/v1/languages"]["post"]
    assert "201" in post["responses"] and "200" in post["responses"] and "422" in post["responses"]
    assert "application/problem+json" in post["responses"]["422"]["content"]
    assert schema["components"]["schemas"]["LanguageInput"].get("examples")
