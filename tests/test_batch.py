"""``langclass classify --batch``: the 42 ground-truth languages give 42 rows that match the
single-language answers; errors are rows; an interrupted run resumes without duplicates; CSV in/out."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _ground_truth import LANGUAGES
from langclass.app.cli.batch import COLUMNS, classify_row, done_rows, run_batch
from langclass.app.cli.commands import app
from langclass.app.settings import get_settings
from langclass.core.classification.analysis import analyze
from langclass.core.algebra.lattice import CLASS_KEYS
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _write_ground_truth(path: Path) -> None:
    with path.open("w") as fh:
        for lang in LANGUAGES:
            fh.write(json.dumps({"regex": lang["regex"], "alphabet": lang["alphabet"], "name": lang["id"],
                                 "tags": ["ground-truth"]}) + "\n")


@pytest.mark.slow
def test_ground_truth_batch_interrupted_then_resumed(tmp_path: Path) -> None:
    """The done-when of the batch: interrupt a run of the 42 ground-truth languages (SIGINT once a
    few rows are on disk), rerun the same command: 42 rows, each once, equal to the single answers."""
    src, out = tmp_path / "gt.jsonl", tmp_path / "out.jsonl"
    _write_ground_truth(src)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LANGCLASS_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    args = ["classify", "--batch", str(src), "-o", str(out), "-j", "2", "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "langclass.app.cli.commands", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):  # wait (event, not time) for the first rows: they are flushed one by one
            if (out.exists() and len(out.read_text().splitlines()) >= 3) or proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(done_rows(out)) >= 3
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["row"] for r in rows) == list(range(1, 43))  # every row exactly once
    for row in rows:
        lang = LANGUAGES[row["row"] - 1]
        assert row["name"] == lang["id"] and row["status"] == "ok" and row["tags"] == ["ground-truth"]
        dfa = parse_regex(lang["regex"], lang["alphabet"])
        single = analyze(dfa)
        assert row["id"] == dfa.fingerprint() and row["num_states"] == dfa.num_states
        assert {k: row[k] for k in CLASS_KEYS} == single.members
        assert row["soft_encoding"] == single.encodings["soft"]["encoding"]
    again = runner.invoke(app, args)  # nothing left to do
    assert again.exit_code == 0 and "0 rows written" in again.stdout
    assert len(out.read_text().splitlines()) == 42


def test_errors_are_rows_and_resume_skips_done_rows(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join([
        json.dumps({"regex": "(ab)*", "alphabet": "ab"}),
        json.dumps({"regex": "(a", "alphabet": "ab"}),
        "not json",
        json.dumps({"regex": "a", "alphabet": "ab", "colour": "red"}),
        json.dumps({"formula": "Y a", "alphabet": ["a", "b"]}),
        json.dumps({"dfa": {"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [0], "transitions": {}}}),
    ]) + "\n")
    # a previous run that was killed after row 1 and in the middle of writing another row
    first = classify_row(1, {"regex": "(ab)*", "alphabet": "ab"}, Limits())
    out.write_text(json.dumps(first) + "\n" + '{"row": 5, "na')
    assert done_rows(out) == {1}  # the partial line is cut off
    counts = run_batch(src, out, limits=Limits(), jobs=1)
    assert counts == {"done": 5, "skipped": 1, "errors": 3}
    rows = {r["row"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == [1, 2, 3, 4, 5, 6]
    assert rows[2]["status"] == "error" and rows[2]["error_code"] == "regex-syntax" and rows[2]["error_field"] == "regex"
    assert rows[3]["status"] == "error" and "JSON" in rows[3]["error_detail"]
    assert rows[4]["status"] == "error" and rows[4]["error_field"] == "colour"
    assert rows[5]["status"] == "ok" and rows[5]["kind"] == "formula"
    assert rows[6]["status"] == "ok" and rows[6]["num_states"] == 2  # missing edges go to a sink


def test_csv_in_and_out(tmp_path: Path) -> None:
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    with src.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "regex", "alphabet", "tags", "dfa"])
        w.writerow(["ab", "(ab)*", "ab", "x;y", ""])
        w.writerow(["dfa", "", "", "", json.dumps({"alphabet": ["a", "b"], "states": ["p"], "initial": "p",
                                                  "accepting": ["p"], "transitions": {"p": {"a": "p", "b": "p"}}})])
    counts = run_batch(src, out, limits=Limits(), jobs=1)
    assert counts["done"] == 2 and counts["errors"] == 0
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(COLUMNS)
    assert json.loads(rows[0]["tags"]) == ["x", "y"] and rows[0]["ltl_p_mod"] == "true" and rows[0]["ltl_p"] == "false"
    assert rows[1]["num_states"] == "1" and rows[1]["group"] == "true"
    assert run_batch(src, out, limits=Limits())["skipped"] == 2


def test_cli_refuses_bad_batch_arguments(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("x")
    r = runner.invoke(app, ["classify", "--batch", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and "batch" in r.stderr
    r = runner.invoke(app, ["classify", "--batch", str(src)])
    assert r.exit_code == 2 and "--output" in r.stderr


@pytest.mark.parametrize("jobs", [1, 2])
def test_rows_are_written_in_input_order(tmp_path: Path, jobs: int) -> None:
    """Unreadable rows (bad JSON) and classified rows interleave in input order, serial or parallel."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = []
    for i in range(9):
        lines.append("not json" if i % 3 == 1 else json.dumps({"regex": "(ab)*" if i % 2 else "((a|b)(a|b))*b*", "alphabet": "ab"}))
    src.write_text("\n".join(lines) + "\n")
    counts = run_batch(src, out, limits=Limits(), jobs=jobs)
    assert counts == {"done": 9, "skipped": 0, "errors": 3}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["row"] for r in rows] == list(range(1, 10))
    assert [r["status"] for r in rows] == ["error" if i % 3 == 1 else "ok" for i in range(9)]
