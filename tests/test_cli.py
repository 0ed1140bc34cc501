"""The ``langclass`` CLI: classify (table and --json), db commands, and ``serve`` end to end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app, parse_alphabet
from langclass.app.settings import get_settings
from langclass.core.ingest.parse import parse_regex

runner = CliRunner()


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_parse_alphabet() -> None:
    assert parse_alphabet("ab") == ["a", "b"]
    assert parse_alphabet("x1,x2") == ["x1", "x2"]
    assert parse_alphabet("x, y") == ["x", "y"]


def test_comma_can_be_an_alphabet_symbol() -> None:
    assert parse_alphabet("a,\\,") == ["a", ","]
    assert parse_alphabet(",") == [","]
    assert parse_alphabet("\\,,x") == [",", "x"]
    assert parse_alphabet("a,\\\\") == ["a", "\\"]
    result = runner.invoke(app, ["classify", "--regex", "(a\\,)*", "--alphabet", "a,\\,", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["alphabet"] == ["a", ","]
    assert record["classes"]["ltl_p_mod"]["period"] == 2
    # an empty symbol says how to write a comma
    result = runner.invoke(app, ["classify", "--regex", "a", "--alphabet", "a,,"])
    assert result.exit_code == 2 and "invalid-alphabet" in result.output and "\\," in result.output


def test_classify_json_is_the_api_record() -> None:
    result = runner.invoke(app, ["classify", "--regex", "(ab)*", "--alphabet", "ab", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["id"] == parse_regex("(ab)*", ["a", "b"]).fingerprint()
    assert record["classes"]["ltl_p_mod"]["member"] is True and record["classes"]["ltl_p_mod"]["period"] == 2
    for key in ("alphabet", "source", "dfa", "num_states", "monoid", "classes", "encodings", "code_version"):
        assert key in record


def test_classify_table_and_dfa_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["classify", "-r", "(a|b)*a", "-a", "ab"])
    assert result.exit_code == 0, result.output
    assert "LTL[P,Y]" in result.stdout or "ltl_p_y" in result.stdout
    dfa = {"alphabet": ["a", "b"], "states": ["p", "q"], "initial": "p", "accepting": ["q"],
           "transitions": {"p": {"a": "q", "b": "p"}, "q": {"a": "q", "b": "p"}}}
    path = tmp_path / "dfa.json"
    path.write_text(json.dumps(dfa))
    result = runner.invoke(app, ["classify", "--dfa", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["id"] == parse_regex("(a|b)*a", ["a", "b"]).fingerprint()


@pytest.mark.parametrize(
    "args,code",
    [
        (["classify", "-r", "(ab", "-a", "ab"], "regex-syntax"),
        (["classify", "-r", "(ab)*"], "invalid-alphabet"),
        (["classify", "-r", "abc", "-a", "ab"], "unknown-symbol"),
        (["classify", "--dfa", "/nonexistent/dfa.json"], "invalid-input"),
    ],
)
def test_classify_errors_exit_2_naming_the_problem(args: list[str], code: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"({code})" in result.stderr
    as_json = runner.invoke(app, [*args, "--json"])
    assert as_json.exit_code == 2 and json.loads(as_json.stderr)["error"]["code"] == code


def test_classify_bad_dfa_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"alphabet": ["a"], "alphabet": ["b"]}')
    result = runner.invoke(app, ["classify", "--dfa", str(path)])
    assert result.exit_code == 2 and "(invalid-dfa)" in result.stderr
    path.write_text("{not json")
    result = runner.invoke(app, ["classify", "--dfa", str(path)])
    assert result.exit_code == 2 and "(invalid-dfa)" in result.stderr


def test_db_commands(tmp_path: Path) -> None:
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    status = json.loads(runner.invoke(app, ["db", "current"]).stdout)
    assert status["at_head"] and status["current"] == status["head"]
    assert runner.invoke(app, ["db", "downgrade", "base"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["db", "current"]).stdout)["current"] == []


# --- serve end to end ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(db_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env["LANGCLASS_DATABASE_URL"] = db_url
    proc = subprocess.Popen(
        [sys.executable, "-m", "langclass.app.cli.commands", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stdout.read().decode() if proc.stdout else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("server did not become ready")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_serve_migrates_serves_and_persists_across_restart(tmp_path: Path) -> None:
    """The README's promise: serve on the embedded default, POST (ab)*, restart, still there."""
    db_url = f"sqlite:///{tmp_path / 'served.db'}"  # a fresh file: `serve` must migrate it itself
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _start(db_url, port)
    try:
        r = httpx.post(f"{base}/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}, timeout=60)
        assert r.status_code == 201, r.text
        created: dict[str, Any] = r.json()
        assert created.pop("already_stored") is False and created.pop("labels_not_applied") is None
        assert created["classes"]["ltl_p_mod"]["member"] is True and created["classes"]["ltl_p_mod"]["period"] == 2
    finally:
        _stop(proc)
    proc = _start(db_url, port)
    try:
        assert httpx.get(f"{base}/v1/languages/{created['id']}", timeout=60).json() == created
        listed = httpx.get(f"{base}/v1/languages", params={"class": "ltl_p_mod", "member": "true"}, timeout=60).json()
        assert [i["id"] for i in listed["items"]] == [created["id"]]
    finally:
        _stop(proc)


def test_cli_refuses_lone_surrogates_cleanly() -> None:
    """Undecodable argv bytes arrive as lone surrogates (surrogateescape): a typed error, exit 2."""
    result = runner.invoke(app, ["classify", "--regex", "a\udcff", "--alphabet", "a"])
    assert result.exit_code == 2, result.output
    assert "error (regex-syntax) [regex]" in result.stderr and "surrogate" in result.stderr
    result = runner.invoke(app, ["classify", "--regex", "a", "--alphabet", "a,\udcff"])
    assert result.exit_code == 2 and "error (invalid-alphabet) [alphabet[1]]" in result.stderr


def test_cli_limit_errors_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCLASS_MAX_STATES", "3")
    get_settings.cache_clear()
    result = runner.invoke(app, ["classify", "--regex", "(a|b)*a(a|b)", "--alphabet", "ab"])
    assert result.exit_code == 2
    assert "limit=max_states" in result.stderr and "setting=LANGCLASS_MAX_STATES" in result.stderr


def test_cli_invalid_settings_exit_2_without_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCLASS_API_KEYS", "RealSecretKey-9f8e7d6c,abc")
    get_settings.cache_clear()
    result = runner.invoke(app, ["classify", "--regex", "a", "--alphabet", "a"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error (invalid-settings): LANGCLASS_API_KEYS: entry 1 (0-based, comma-separated) is a placeholder or shorter than 8 characters"
    )
    assert "RealSecretKey" not in result.output


def test_cli_formula_notes_mod_remainder() -> None:
    result = runner.invoke(app, ["classify", "--formula", "MOD(2,5)", "--alphabet", "a"])
    assert result.exit_code == 0, result.output
    assert "note: MOD(2,5) is read as MOD(2,1): the remainder is taken modulo m" in result.stdout


def test_classify_table_pluralizes_counts() -> None:
    one = runner.invoke(app, ["classify", "-r", "a*", "-a", "a"])
    assert one.exit_code == 0, one.output
    assert "minimal DFA: 1 state over" in one.stdout
    assert "syntactic monoid: 1 element (" in one.stdout and "1 idempotent," in one.stdout and "1 D-class," in one.stdout
    assert "1 states" not in one.stdout and "1 elements" not in one.stdout
    two = runner.invoke(app, ["classify", "-r", "(ab)*", "-a", "ab"])
    assert two.exit_code == 0, two.output
    assert "minimal DFA: 3 states over" in two.stdout and "D-classes" in two.stdout
