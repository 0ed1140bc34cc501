"""``POST /v1/languages:batch`` (bounded, each item like ``POST /v1/languages``, failures as problems)
and ``GET /v1/languages?format=csv`` (export with the next page in ``Link``), on both backends."""

from __future__ import annotations

import csv
import json
import io
from typing import Any

from langclass.app.web.routes.batch import MAX_BATCH_LANGUAGES
from langclass.core.classification.analysis import analyze
from langclass.core.algebra.lattice import CLASS_KEYS
from langclass.core.ingest.parse import parse_regex


def test_batch_stores_reports_and_is_idempotent(api: Any) -> None:
    body = {"languages": [
        {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "ab"},
        {"regex": "(a", "alphabet": ["a", "b"]},
        {"formula": "P(b & Y a)", "alphabet": ["a", "b", "c"], "tags": ["f"]},
        {"regex": "(ab)*", "alphabet": ["x"]},
    ]}
    r = api.post("/v1/languages:batch", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["created"], out["existing"], out["errors"]) == (2, 0, 2)
    items = out["items"]
    assert [it["index"] for it in items] == [0, 1, 2, 3]
    assert items[0]["status"] == 201 and items[0]["id"] == parse_regex("(ab)*", ["a", "b"]).fingerprint()
    assert items[0]["classes"] == analyze(parse_regex("(ab)*", ["a", "b"])).members
    assert items[1]["status"] == 422 and items[1]["problem"]["code"] == "regex-syntax" and items[1]["problem"]["field"] == "regex"
    assert items[3]["status"] == 422 and items[3]["problem"]["code"] == "unknown-symbol"
    # the stored record is the one POST /v1/languages stores
    assert api.get(f"/v1/languages/{items[2]['id']}").json()["tags"] == ["f"]
    again = api.post("/v1/languages:batch", json={"languages": body["languages"][:1]}).json()
    assert again["existing"] == 1 and again["items"][0]["status"] == 200


def test_batch_is_bounded(api: Any) -> None:
    too_many = {"languages": [{"regex": "a", "alphabet": ["a"]}] * (MAX_BATCH_LANGUAGES + 1)}
    r = api.post("/v1/languages:batch", json=too_many)
    assert r.status_code == 422 and "languages" in r.text
    assert api.post("/v1/languages:batch", json={"languages": []}).status_code == 422
    assert api.post("/v1/languages:batch", json={"languages": [], "x": 1}).status_code == 422


def test_csv_export_pages(api: Any) -> None:
    regexes = ["(ab)*", "a*", "(aa)*", "a(a|b)*"]
    for i, rx in enumerate(regexes):
        alpha = ["a"] if set(rx) <= set("a()*") else ["a", "b"]
        assert api.post("/v1/languages", json={"regex": rx, "alphabet": alpha, "name": f"n{i}", "tags": ["x", "y"]}).status_code == 201
    r = api.get("/v1/languages", params={"format": "csv", "limit": 3})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert len(rows) == 3 and rows[0]["name"] == "n0" and json.loads(rows[0]["tags"]) == ["x", "y"] and rows[0]["source"] == "(ab)*"
    assert rows[0]["ltl_p_mod"] == "true" and rows[0]["ltl_p"] == "false" and set(CLASS_KEYS) <= set(rows[0])
    link = r.headers["link"]
    assert link.endswith('rel="next"') and "format=csv" in link
    nxt = api.get(link[1:link.index(">")])
    rest = list(csv.DictReader(io.StringIO(nxt.text)))
    assert [x["name"] for x in rest] == ["n3"] and "link" not in nxt.headers
    filtered = list(csv.DictReader(io.StringIO(api.get("/v1/languages", params={"format": "csv", "class": "group"}).text)))
    assert sorted(x["source"] for x in filtered) == ["(aa)*", "a*"]  # a* over {a} is trivially a group language
    assert api.get("/v1/languages", params={"format": "xml"}).status_code == 422


def test_a_schema_invalid_item_is_answered_in_its_row(api: Any) -> None:
    """One item with an unknown key, a NUL in a tag, or no object at all does not cost the batch:
    each gets 422 ``validation-error`` naming the field inside the item, the valid ones are stored."""
    body = {"languages": [
        {"regex": "(aa)*", "alphabet": ["a"]},
        {"regex": "a*", "alphabet": ["a"], "colour": "red", "name": "typo"},
        {"regex": "b*", "alphabet": ["b"], "tags": ["ok", "n\u0000l"]},
        "(ab)*",
        {"regex": "(ab)*", "alphabet": ["a", "b"]},
    ]}
    r = api.post("/v1/languages:batch", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["created"], out["existing"], out["errors"]) == (2, 0, 3)
    items = out["items"]
    assert [it["status"] for it in items] == [201, 422, 422, 422, 201]
    extra, nul, not_object = (items[i]["problem"] for i in (1, 2, 3))
    assert extra["code"] == "validation-error" and extra["field"] == "colour" and items[1]["name"] == "typo"
    assert extra["detail"].startswith("body.languages[1].colour: ")
    assert nul["code"] == "validation-error" and nul["field"] == "tags[1]" and "NUL" in nul["detail"]
    assert not_object["code"] == "validation-error" and not_object["detail"].startswith("body.languages[3]: ")
    assert api.get(f"/v1/languages/{items[4]['id']}").status_code == 200
    # only the envelope is checked as a whole
    assert api.post("/v1/languages:batch", json={"languages": "(ab)*"}).status_code == 422
