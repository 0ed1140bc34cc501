"""Documented option bounds and help texts agree with the code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.models.construct.verify import MAX_RANDOM_LENGTH

ROOT = Path(__file__).resolve().parents[1]


def test_formulas_md_states_the_random_max_length_bound_the_code_enforces() -> None:
    """(Before: docs/formulas.md said "at most 5000" while CLI and API took up to 100 000.)"""
    row = next(line for line in (ROOT / "docs" / "formulas.md").read_text().splitlines()
               if line.startswith("| `--random-max-length`"))
    stated = re.search(r"at most ([\d ]+)", row)
    assert stated is not None, row
    assert int(stated.group(1).replace(" ", "")) == MAX_RANDOM_LENGTH


def test_sectors_help_shows_the_range_notation_not_the_deprecated_one() -> None:
    out = CliRunner().invoke(app, ["sectors", "--help"], terminal_width=200).output
    assert "41..100" in out and "41-100" not in out


def test_classify_json_prints_the_record_post_v1_classify_returns(make_client: Any, sqlite_url: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """README: ``classify --json`` prints the record POST /v1/classify returns — the same keys and
    values (``period`` of every class included), timings aside. (Before: the CLI left ``period`` out.)"""
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", sqlite_url)
    out = CliRunner().invoke(app, ["classify", "--regex", "(ab)*|a", "--alphabet", "ab", "--json"])
    assert out.exit_code == 0, out.output
    cli = json.loads(out.output)
    api = make_client(sqlite_url, classify_isolation="thread").post(
        "/v1/classify", json={"regex": "(ab)*|a", "alphabet": ["a", "b"]}).json()
    cli.pop("timings_ms"), api.pop("timings_ms")
    assert cli == api
