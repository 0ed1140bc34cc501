"""Queries that refuse typos, and stored records a user can curate (issue: verdicts and interfaces).

* unknown or repeated query parameters answer 422 ``validation-error`` naming the parameter, on
  every route (one app-wide dependency, :mod:`langclass.app.web.query`);
* ``POST /v1/classify`` takes the same body as ``POST /v1/languages`` (name and tags checked, ignored);
* the name limit speaks of characters;
* ``PATCH /v1/languages/{id}`` replaces name/tags, refuses duplicate tags; the listing filters by
  ``tag`` and shows the source; a re-POST says that the stored record came back unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI, Query

AB = {"regex": "(ab)*", "alphabet": ["a", "b"]}


def _problem(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == code, body
    return body


# --- strict queries -----------------------------------------------------------------------------


def test_unknown_query_parameter_is_refused_naming_it(api: Any) -> None:
    api.post("/v1/languages", json=AB)
    body = _problem(api.get("/v1/languages?clas=ltl_p_mod"), 422, "validation-error")
    assert body["field"] == "clas"
    assert body["errors"][0]["location"] == "query" and body["errors"][0]["type"] == "unknown_parameter"
    assert "did you mean 'class'" in body["detail"]
    # the correct spelling still works
    assert api.get("/v1/languages?class=ltl_p_mod").status_code == 200


def test_repeated_query_parameter_is_refused(api: Any) -> None:
    body = _problem(api.get("/v1/languages?class=ltl_p&class=ltl_p_mod"), 422, "validation-error")
    assert body["field"] == "class" and body["errors"][0]["type"] == "repeated_parameter"
    assert "2 times" in body["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/languages/0000/dfa?fromat=dot",
        "/v1/languages/0000/monoid?ofset=3",
        "/v1/jobs?stauts=queued",
        "/v1/encodings?x=1",
        "/healthz?verbose=1",
        "/problems?code=x",
    ],
)
def test_every_route_refuses_unknown_query_parameters(api: Any, path: str) -> None:
    """The check runs before the route (a missing language would be 404 otherwise)."""
    body = _problem(api.get(path), 422, "validation-error")
    assert body["field"] == path.split("?")[1].split("=")[0]


def test_every_documented_operation_refuses_unknown_query_parameters(api: Any) -> None:
    """Every operation of the OpenAPI document (so a route added later cannot miss the check)."""
    import re

    operations = [(path, method) for path, item in api.get("/openapi.json").json()["paths"].items() for method in item]
    assert len(operations) >= 15
    for path, method in operations:
        url = re.sub(r"\{[^}]+\}", "0", path) + "?zz_typo=1"
        body = _problem(api.request(method.upper(), url), 422, "validation-error")
        assert body["field"] == "zz_typo", (method, path, body)


def test_repeat_allowed_for_list_parameters() -> None:
    """A list-typed parameter may repeat; a scalar one may not."""
    from fastapi.testclient import TestClient

    from langclass.app.web.problems import install_problem_handlers
    from langclass.app.web.query import strict_query

    app = FastAPI(dependencies=[Depends(strict_query)])
    install_problem_handlers(app)

    @app.get("/t")
    def t(k: Annotated[list[int], Query()] = [], one: int = 0) -> dict[str, Any]:  # noqa: B006
        return {"k": k, "one": one}

    client = TestClient(app)
    assert client.get("/t?k=1&k=2&one=3").json() == {"k": [1, 2], "one": 3}
    assert client.get("/t?one=1&one=2").status_code == 422


# --- classify takes the labels; the name limit says characters ------------------------------------


def test_classify_accepts_and_ignores_name_and_tags(api: Any) -> None:
    r = api.post("/v1/classify", json={**AB, "name": "(ab)*", "tags": ["periodic"]})
    assert r.status_code == 200, r.text
    assert "name" not in r.json() and "tags" not in r.json()
    # … and checks them like POST /v1/languages
    _problem(api.post("/v1/classify", json={**AB, "tags": [""]}), 422, "validation-error")


@pytest.mark.parametrize("path", ["/v1/classify", "/v1/languages"])
def test_name_limit_is_stated_in_characters(api: Any, path: str) -> None:
    body = _problem(api.post(path, json={**AB, "name": "x" * 201}), 422, "validation-error")
    assert body["field"] == "name"
    assert "200 characters" in body["detail"] and "items" not in body["detail"]
    assert api.post(path, json={**AB, "name": "x" * 200}).status_code in (200, 201)


# --- curating stored records ----------------------------------------------------------------------


def test_repost_says_the_stored_record_came_back_unchanged(api: Any) -> None:
    first = api.post("/v1/languages", json={**AB, "name": "old", "tags": ["a"]})
    assert first.status_code == 201 and first.json()["already_stored"] is False
    again = api.post("/v1/languages", json={"regex": "(ab)*|(ab)*ab", "alphabet": ["a", "b"], "name": "new", "tags": ["a"]})
    assert again.status_code == 200
    body = again.json()
    assert body["already_stored"] is True
    assert body["name"] == "old" and body["labels_not_applied"] == {"name": "new"}
    assert "already_stored" not in api.get(f"/v1/languages/{body['id']}").json()


def test_patch_replaces_labels(api: Any) -> None:
    lid = api.post("/v1/languages", json={**AB, "name": "old", "tags": ["a"]}).json()["id"]
    r = api.patch(f"/v1/languages/{lid}", json={"tags": ["periodic", "even"]})
    assert r.status_code == 200, r.text
    assert r.json()["tags"] == ["periodic", "even"] and r.json()["name"] == "old"  # name left out: kept
    r = api.patch(f"/v1/languages/{lid}", json={"name": None})
    assert r.json()["name"] is None and r.json()["tags"] == ["periodic", "even"]
    stored = api.get(f"/v1/languages/{lid}").json()
    assert stored["name"] is None and stored["tags"] == ["periodic", "even"]
    assert stored["classes"]["ltl_p_mod"]["member"] is True  # the classification is untouched


def test_a_blank_name_is_no_name(api: Any) -> None:
    """PATCH (and POST) normalise an empty or white-space-only name to null. (Before: "" and "   "
    were stored as names.)"""
    lid = api.post("/v1/languages", json={**AB, "name": "old"}).json()["id"]
    for blank in ("", "   ", "\t\n"):
        assert api.patch(f"/v1/languages/{lid}", json={"name": "x"}).json()["name"] == "x"
        r = api.patch(f"/v1/languages/{lid}", json={"name": blank})
        assert r.status_code == 200 and r.json()["name"] is None, r.text
        assert api.get(f"/v1/languages/{lid}").json()["name"] is None
    other = api.post("/v1/languages", json={"regex": "a*", "alphabet": ["a", "b"], "name": "  "})
    assert other.status_code == 201 and other.json()["name"] is None


def test_patch_refuses_duplicate_tags_unknown_fields_and_missing_languages(api: Any) -> None:
    lid = api.post("/v1/languages", json=AB).json()["id"]
    body = _problem(api.patch(f"/v1/languages/{lid}", json={"tags": ["x", "y", "x"]}), 422, "validation-error")
    assert body["field"] == "tags" and "'x' is given twice" in body["detail"]
    _problem(api.patch(f"/v1/languages/{lid}", json={"regex": "a"}), 422, "validation-error")
    _problem(api.patch(f"/v1/languages/{lid}", json={"tags": None}), 422, "invalid-input")
    _problem(api.patch("/v1/languages/" + "0" * 64, json={"name": "x"}), 404, "not-found")
    # POST refuses duplicate tags too
    _problem(api.post("/v1/languages", json={**AB, "tags": ["x", "x"]}), 422, "validation-error")


def test_patch_needs_a_key_when_writes_need_one(make_client: Any, migrated_url: str) -> None:
    key = "test-key-0123456789"
    client = make_client(migrated_url, api_keys=key, require_key_for_writes=True)
    lid = client.post("/v1/languages", json=AB, headers={"Authorization": f"Bearer {key}"}).json()["id"]
    _problem(client.patch(f"/v1/languages/{lid}", json={"name": "x"}), 401, "unauthorized")
    assert client.patch(f"/v1/languages/{lid}", json={"name": "x"}, headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_tag_filter_matches_whole_tags(api: Any) -> None:
    ab = api.post("/v1/languages", json={**AB, "tags": ["periodic", "x\"periodic"]}).json()["id"]
    a = api.post("/v1/languages", json={"regex": "a*", "alphabet": ["a", "b"], "tags": ["periodically"]}).json()["id"]
    b = api.post("/v1/languages", json={"regex": "b*", "alphabet": ["a", "b"], "tags": ["x\"periodic"]}).json()["id"]
    ids = lambda q: [item["id"] for item in api.get("/v1/languages", params=q).json()["items"]]  # noqa: E731
    assert ids({"tag": "periodic"}) == [ab]
    assert ids({"tag": "periodically"}) == [a]
    assert sorted(ids({"tag": "x\"periodic"})) == sorted([ab, b])
    assert ids({"tag": "period"}) == []
    assert ids({"tag": "periodic", "class": "ltl_p_mod"}) == [ab]


def test_list_items_carry_the_source(api: Any) -> None:
    api.post("/v1/languages", json=AB)
    api.post("/v1/languages", json={"dfa": {"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [0],
                                            "transitions": {"0": {"a": 0}}}})
    items = api.get("/v1/languages").json()["items"]
    sources = {item["source"]["kind"]: item["source"] for item in items}
    assert sources["regex"] == {"kind": "regex", "regex": "(ab)*", "alphabet": ["a", "b"]}
    assert sources["dfa"] == {"kind": "dfa"}


def test_dot_export_keeps_the_users_state_names(api: Any) -> None:
    dfa = {"alphabet": ["a", ",", "b"], "states": ["s", "t"], "initial": "s", "accepting": ["s"],
           "transitions": {"s": {"a": "t", ",": "t"}, "t": {"b": "s"}}}
    lid = api.post("/v1/languages", json={"dfa": dfa}).json()["id"]
    dot = api.get(f"/v1/languages/{lid}/dfa", params={"format": "dot"}).text
    assert 'label="0 (s)"' in dot and 'label="1 (t)"' in dot and 'label="2"' in dot  # 2: the added sink
    assert '0 -> 1 [label="\\"a\\", \\",\\""];' in dot
