"""The class ``crasp`` through the service: stored, filtered, exported as CSV, on the pages and in the
lattice picture; the causal encoding answer in the record (issue 32, item 6)."""

from __future__ import annotations

import csv
import io
from typing import Any

from langclass.core.algebra.classes import replay


def test_crasp_is_stored_filtered_exported_and_drawn(api: Any) -> None:
    member = api.post("/v1/languages", json={"regex": "(ab|ba)*", "alphabet": ["a", "b"]})
    outside = api.post("/v1/languages", json={"regex": "(bab|b)*", "alphabet": ["a", "b"]})
    assert member.status_code == 201 and outside.status_code == 201, (member.text, outside.text)
    m, o = member.json(), outside.json()
    assert m["classes"]["crasp"]["member"] is True and m["classes"]["crasp"]["certificate"]["program"]["ops"]
    assert o["classes"]["crasp"]["member"] is False and o["classes"]["crasp"]["witness"]["letter"] == "a"
    for rec in (m, o):  # the records a client gets replay on the DFA the service returns
        replay(rec["dfa"], rec["classes"]["crasp"])
    assert m["encodings"]["causal"]["encoding"] == "nope" and o["encodings"]["causal"]["encoding"] is None
    ids = lambda **p: [it["id"] for it in api.get("/v1/languages", params=p).json()["items"]]  # noqa: E731
    assert ids(**{"class": "crasp", "member": "true"}) == [m["id"]]
    assert ids(**{"class": "crasp", "member": "false"}) == [o["id"]]
    rows = list(csv.DictReader(io.StringIO(api.get("/v1/languages", params={"format": "csv"}).text)))
    assert {r["id"]: r["crasp"] for r in rows} == {m["id"]: "true", o["id"]: "false"}
    page = api.get("/languages", params={"class": "crasp", "member": "true"})
    assert page.status_code == 200 and f'data-id="{m["id"]}"' in page.text and f'data-id="{o["id"]}"' not in page.text
    lang = api.get(f"/languages/{m['id']}")
    assert lang.status_code == 200 and "C-RASP" in lang.text and 'data-class="crasp"' in lang.text
