"""The unary-temporal classes through the service: stored, filtered, exported, on the pages."""

from __future__ import annotations

import csv
import io
from typing import Any

from langclass.core.algebra.classes import TEMPORAL_KEYS


def test_ltl_p_y_mod_is_stored_filtered_and_exported(api: Any) -> None:
    member = api.post("/v1/languages", json={"regex": "((a|b)(a|b))*(a|b)a", "alphabet": ["a", "b"]})
    outside = api.post("/v1/languages", json={"regex": "(a|b|c)*ac*", "alphabet": ["a", "b", "c"]})
    assert member.status_code == 201 and outside.status_code == 201, (member.text, outside.text)
    m, o = member.json(), outside.json()
    assert m["classes"]["ltl_p_y_mod"]["member"] is True and m["classes"]["ltl_p_y_mod"]["period"] == 2
    assert o["classes"]["ltl_p_y_mod"]["member"] is False and o["classes"]["ltl_p_y_mod"]["witness"]["relation"] == "R"
    assert m["encodings"]["soft"]["name"] == "periodic RoPE with period 2 + recency heads, all lengths"
    assert o["encodings"]["soft"]["outside"]["class"] == "ltl_p_y_mod"
    for key in TEMPORAL_KEYS:
        assert key in m["classes"] and key in o["classes"]
    ids = lambda **p: [it["id"] for it in api.get("/v1/languages", params=p).json()["items"]]  # noqa: E731
    assert ids(**{"class": "ltl_p_y_mod", "member": "true"}) == [m["id"]]
    assert ids(**{"class": "ltl_p_y_mod", "member": "false"}) == [o["id"]]
    assert set(ids(**{"class": "fo2_succ_mod", "member": "true"})) == {m["id"]} | ({o["id"]} if o["classes"]["fo2_succ_mod"]["member"] else set())
    rows = list(csv.DictReader(io.StringIO(api.get("/v1/languages", params={"format": "csv"}).text)))
    assert {r["id"]: r["ltl_p_y_mod"] for r in rows} == {m["id"]: "true", o["id"]: "false"}
    page = api.get("/languages", params={"class": "ltl_p_y_mod", "member": "true"})
    assert page.status_code == 200 and f'data-id="{m["id"]}"' in page.text and f'data-id="{o["id"]}"' not in page.text
    lang = api.get(f"/languages/{m['id']}")
    assert lang.status_code == 200 and "LTL[P,Y,MOD]" in lang.text and "(m = 2)" in lang.text
    assert 'data-class="ltl_p_y_mod"' in lang.text  # the lattice picture draws it
