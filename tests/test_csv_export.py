"""Both CSV exports are safe and complete (issue 24 item 6).

``GET /v1/languages?format=csv`` and ``classify --batch -o out.csv`` share one writer: the same
columns; cells a spreadsheet would read as a formula (``= + - @ TAB CR``) are prefixed with ``'``; a
bare CR in a name is quoted and does not start a row; the alphabet is JSON (symbols may hold spaces),
a DFA source is its JSON, and the period and encodings are there.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.app.cli.batch import COLUMNS, run_batch
from langclass.app.usecases.export_csv import CSV_COLUMNS, FORMULA_PREFIXES, csv_cell, csv_rows
from langclass.core.base.limits import Limits

RISKY_NAMES = ["=HYPERLINK(\"http://x\",\"y\")", "+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR first", "a\rb", "=+-@"]
API_NAMES = [n for n in RISKY_NAMES if n.isprintable()]
"""The API refuses control characters in names (422), so its CSV sees the printable risky names only."""


def _risky(cell: str) -> bool:
    return cell.startswith(FORMULA_PREFIXES)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("=+-@\t\r\n,\"' ab;")), max_size=12), min_size=1, max_size=5))
def test_no_cell_is_read_as_a_formula_and_rows_survive_a_round_trip(names):
    text = csv_rows({"name": n, "tags": [n], "row": i} for i, n in enumerate(names))
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 1 + len(names)  # a CR or LF inside a cell never starts a row
    for row, n in zip(rows[1:], names):
        assert all(not _risky(c) for c in row)
        name = row[CSV_COLUMNS.index("name")]
        assert name == ("'" + n if _risky(n) else n)
        assert json.loads(row[CSV_COLUMNS.index("tags")].removeprefix("'")) == [n]


def test_cells():
    assert csv_cell(None) == "" and csv_cell(True) == "true" and csv_cell(False) == "false"
    assert csv_cell(["a b", "c"]) == '["a b","c"]'
    assert csv_cell("-1") == "'-1" and csv_cell(3) == "3"


def _api_rows(api: Any, **params: Any) -> list[dict[str, str]]:
    r = api.get("/v1/languages", params={"format": "csv", **params})
    assert r.status_code == 200
    return list(csv.DictReader(io.StringIO(r.text, newline="")))


def test_api_csv_neutralizes_formulas_and_carries_every_column(api: Any) -> None:
    for name in RISKY_NAMES:
        if name not in API_NAMES:
            assert api.post("/v1/languages", json={"regex": "a", "alphabet": ["a"], "name": name}).status_code == 422
    for i, name in enumerate(API_NAMES):
        body = {"regex": "(ab)*" if i % 2 else "(aa)*", "alphabet": ["a", "b"] if i % 2 else ["a"],
                "name": name, "tags": ["=cmd|' /C calc'!A0", "ok"]}
        if i >= 2:
            body["regex"] = f"(ab)*{'a' * i}"
            body["alphabet"] = ["a", "b"]
        assert api.post("/v1/languages", json=body).status_code == 201
    dfa = {"alphabet": ["a b", "-c"], "states": ["p", "q", "r"], "initial": "p", "accepting": ["p"],
           "transitions": {"p": {"a b": "q", "-c": "r"}, "q": {"a b": "p", "-c": "r"}, "r": {"a b": "r", "-c": "r"}}}
    assert api.post("/v1/languages", json={"dfa": dfa, "name": "dfa"}).status_code == 201
    r = api.get("/v1/languages", params={"format": "csv", "limit": 50})
    assert r.text.count("\r\n") == len(API_NAMES) + 2  # header + rows
    rows = _api_rows(api, limit=50)
    assert list(rows[0]) == list(CSV_COLUMNS) == list(COLUMNS)
    assert len(rows) == len(API_NAMES) + 1
    for row in rows:
        assert [c for c in row.values() if _risky(c)] == []
    by_name = {row["name"]: row for row in rows}
    assert by_name["'=HYPERLINK(\"http://x\",\"y\")"]["status"] == "ok"
    assert by_name["'@SUM(A1)"]["kind"] == "regex" and by_name["'=+-@"]["source"].startswith("(ab)*")
    assert json.loads(by_name["'+1"]["tags"]) == ["=cmd|' /C calc'!A0", "ok"]
    d = by_name["dfa"]
    assert json.loads(d["alphabet"]) == ["a b", "-c"]  # unambiguous, also for symbols with spaces
    assert json.loads(d["source"]) == dfa  # the DFA, not an empty cell
    assert d["period"] == "2" and d["ltl_p_mod"] == "true"
    assert d["soft_encoding"] and d["hard_encoding"]


def test_batch_csv_neutralizes_formulas_and_matches_the_api_columns(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.csv"
    with src.open("w") as fh:
        for name in RISKY_NAMES:
            fh.write(json.dumps({"regex": "(aa)*", "alphabet": ["a"], "name": name, "tags": ["@x"]}) + "\n")
        fh.write(json.dumps({"regex": "=1+(", "alphabet": ["="], "name": "bad"}) + "\n")
    run_batch(src, out, limits=Limits(), jobs=1)
    raw = out.read_bytes()
    assert raw.count(b"\r\n") == len(RISKY_NAMES) + 2
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(CSV_COLUMNS)
    for row in rows:
        assert [c for c in row.values() if _risky(c)] == []
    assert [r["name"] for r in rows[:len(RISKY_NAMES)]] == ["'" + n if _risky(n) else n for n in RISKY_NAMES]
    ok = rows[0]
    assert ok["period"] == "2" and json.loads(ok["alphabet"]) == ["a"] and ok["source"] == "(aa)*"
    assert rows[-1]["status"] == "error" and rows[-1]["name"] == "bad"
    assert run_batch(src, out, limits=Limits())["skipped"] == len(RISKY_NAMES) + 1  # resumes by row
