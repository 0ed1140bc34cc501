"""A DFA given with its own state names gets its evidence shown in those names (issue 24 item 8).

The user's automaton below names its states 4, 3, 2, 1, 0 (integers), merged by minimization into
canonical states numbered breadth-first. The CLI table, the JSON record (a ``state_names`` field
beside the unchanged canonical evidence) and the language page show which canonical state each
name became, and the page and table show witnesses' states in the user's names with the canonical
number alongside.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.app.settings import get_settings
from langclass.core.algebra.classes import render, with_state_names
from langclass.core.classification.analysis import analyze
from langclass.core.drawing.svg import user_state_names
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex
from langclass.app.usecases.service import parse_language

# (aaa)* with b to a sink; states named by integers, the initial one 4; 1 duplicates 4 (merged)
DFA = {"alphabet": ["a", "b"], "states": [4, 3, 2, 1, 0], "initial": 4, "accepting": [4, 1],
       "transitions": {"4": {"a": 3, "b": 0}, "3": {"a": 2, "b": 0}, "2": {"a": 1, "b": 0}, "1": {"a": 3, "b": 0},
                       "0": {"a": 0, "b": 0}}}


def _names():
    parsed = parse_language(dfa=json.dumps(DFA), limits=Limits())
    return parsed, user_state_names(parsed.document, parsed.dfa)


def test_the_mapping_and_the_labels():
    parsed, names = _names()
    assert names == {0: ("4", "1"), 1: ("3",), 2: ("0",), 3: ("2",)}
    a = analyze(parsed.dfa)
    wit = a.classes["star_free"].witness.to_dict()
    shown = with_state_names(wit, names)
    assert shown["state"] == f"{', '.join(names[wit['state']])} (canonical {wit['state']})"
    assert shown["cycle"] == [f"{', '.join(names[q])} (canonical {q})" for q in wit["cycle"]]
    assert shown["word"] == wit["word"]  # words are not states
    assert wit["state"] == a.classes["star_free"].witness.state  # the record itself is untouched
    line = render(a.classes["star_free"], state_names=names)
    assert "canonical" in line and "cycle=[" in line


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_cli_table_and_json_name_the_users_states(tmp_path: Path) -> None:
    path = tmp_path / "dfa.json"
    path.write_text(json.dumps(DFA))
    runner = CliRunner()
    out = runner.invoke(app, ["classify", "--dfa", str(path)])
    assert out.exit_code == 0, out.output
    assert "your state names: 4, 1 → canonical 0; 3 → canonical 1; 0 → canonical 2; 2 → canonical 3" in out.stdout
    assert "(canonical " in out.stdout.split("your state names")[1]  # the evidence lines too
    out = runner.invoke(app, ["classify", "--dfa", str(path), "--json"])
    assert out.exit_code == 0, out.output
    record = json.loads(out.stdout)
    assert record["state_names"] == {"0": ["4", "1"], "1": ["3"], "2": ["0"], "3": ["2"]}
    # every other field as for the same language given as a regex (canonical numbers unchanged)
    plain = json.loads(runner.invoke(app, ["classify", "-r", "(aaa)*", "-a", "ab", "--json"]).stdout)
    assert "state_names" not in plain or plain["state_names"] is None
    assert record["classes"] == plain["classes"] and record["dfa"] == plain["dfa"]


def test_api_record_resource_and_page_name_the_users_states(api: Any) -> None:
    r = api.post("/v1/classify", json={"dfa": DFA})
    assert r.status_code == 200, r.text
    assert r.json()["state_names"] == {"0": ["4", "1"], "1": ["3"], "2": ["0"], "3": ["2"]}
    r = api.post("/v1/languages", json={"dfa": DFA, "name": "named"})
    assert r.status_code == 201, r.text
    lid = r.json()["id"]
    assert lid == parse_regex("(aaa)*", ["a", "b"]).fingerprint()
    assert api.get(f"/v1/languages/{lid}").json()["state_names"] == {"0": ["4", "1"], "1": ["3"], "2": ["0"], "3": ["2"]}
    page = api.get(f"/languages/{lid}").text
    assert "yours 4, 1 → canonical 0; yours 3 → canonical 1; yours 0 → canonical 2; yours 2 → canonical 3" in page
    assert "Your state names: 0 = " not in page
    wit = api.get(f"/v1/languages/{lid}").json()["classes"]["star_free"]["witness"]
    q = wit["state"]
    label = f"{', '.join({0: ['4', '1'], 1: ['3'], 2: ['0'], 3: ['2']}[q])} (canonical {q})"
    assert f'<span class="k">state</span> = <span class="v">{label}</span>' in page
