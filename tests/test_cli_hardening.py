"""Bad CLI input is a clear message and exit status 2, never a traceback (harden-cli issues).

Covers: ``serve --port`` out of range, OS errors on user-given paths (``classify --batch -o``,
``sweep --out``, ``census --checkpoint``, ``LANGCLASS_CENSUS_DIR``) checked before the work,
unknown revisions for ``db upgrade|downgrade``, ``construct --max-parameters`` only lowering the
setting, construct errors naming CLI flags, and argument errors printed before any progress bar.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.app.settings import get_settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _refused(args: list[str], *needles: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, result.output
    return result.output


@pytest.mark.parametrize("port", ["99999", "65536", "0", "-1"])
def test_serve_port_out_of_range_is_exit_2(port: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail(f"served on port {k.get('port')}"))
    _refused(["serve", "--port", port, "--no-migrate"], "--port")


def test_makefile_serve_passes_the_port_to_the_flag() -> None:
    make = (Path(__file__).resolve().parents[1] / "Makefile").read_text(encoding="utf-8")
    assert "langclass serve --host $(HOST) --port $(PORT)" in make


@pytest.fixture
def batch_file(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text('{"regex": "(ab)*", "alphabet": "ab"}\n', encoding="utf-8")
    return src


@pytest.mark.parametrize("output,reason", [("/nonexistent-dir/x.csv", "does not exist"),
                                           ("/proc/x.jsonl", "/proc/x.jsonl")])
def test_batch_output_that_cannot_be_created_is_exit_2(batch_file: Path, output: str, reason: str) -> None:
    _refused(["classify", "--batch", str(batch_file), "-o", output, "--no-progress"], "error (invalid-input)", reason)


def test_batch_output_directory_and_suffix_refused_before_the_progress_bar(batch_file: Path, tmp_path: Path) -> None:
    out = _refused(["classify", "--batch", str(batch_file), "-o", str(tmp_path)], "error (invalid-input)")
    assert "classify" not in out.split("error")[0]  # no bar drawn first
    out = _refused(["classify", "--batch", str(batch_file), "-o", str(tmp_path / "out.xlsx")], ".jsonl or .csv")
    assert out.startswith("error (invalid-input)"), out


def test_batch_output_in_a_file_parent_is_exit_2(batch_file: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    _refused(["classify", "--batch", str(batch_file), "-o", str(afile / "x.jsonl"), "--no-progress"], "not a directory")


def test_sweep_out_naming_a_file_is_exit_2(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    _refused(["sweep", "--out", str(afile), "--per-cell", "1", "--states", "1", "--alphabet", "1"],
             "error (invalid-input)", str(afile))


def test_sweep_bad_overrides_has_the_error_prefix(tmp_path: Path) -> None:
    _refused(["sweep", "--out", str(tmp_path / "s"), "--overrides", "notjson"], "error (invalid-input)", "--overrides")


def test_census_checkpoint_directory_is_exit_2_before_work(tmp_path: Path) -> None:
    out = _refused(["census", "--states", "2", "--alphabet", "2", "--checkpoint", str(tmp_path), "--no-store"],
                   "error (invalid-input)", "is a directory")
    assert "census shards" not in out


def test_census_dir_naming_a_file_is_refused_before_the_census(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    monkeypatch.setenv("LANGCLASS_CENSUS_DIR", str(afile))
    get_settings.cache_clear()
    import langclass.core.census.run as core_census

    def no_work(*a: object, **k: object) -> None:
        raise AssertionError("the census ran before the directory was checked")

    monkeypatch.setattr(core_census, "census", no_work)
    _refused(["census", "--states", "2", "--alphabet", "2", "--no-checkpoint"], "LANGCLASS_CENSUS_DIR", "not a directory")


def test_census_over_the_bound_refused_before_the_progress_bar() -> None:
    out = _refused(["census", "--states", "7", "--no-store", "--no-checkpoint"], "max_census_languages")
    assert out.startswith("error (limit-exceeded)"), out


def test_unknown_revision_is_refused_as_unknown_never_inviting_force() -> None:
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    assert runner.invoke(app, ["classify", "--regex", "a", "--alphabet", "a"]).exit_code == 0
    for args in (["db", "downgrade", "bogusrev", "--force"], ["db", "downgrade", "bogusrev"], ["db", "upgrade", "bogusrev"]):
        out = _refused(args, "unknown revision 'bogusrev'", "[revision]")
        assert "--force" not in out
    status = runner.invoke(app, ["db", "current"])
    assert json.loads(status.stdout)["at_head"] is True


def test_construct_max_parameters_only_lowers_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from langclass.app.cli.construct import construct_limits

    monkeypatch.setenv("LANGCLASS_MAX_PARAMETERS", "1000")
    get_settings.cache_clear()
    assert construct_limits(None, 200_000).max_parameters == 1000
    assert construct_limits(None, 500).max_parameters == 500
    out = _refused(["construct", "--regex", "0*((11)+0+|1(11)*(00)+)*1*", "--alphabet", "01",
                    "--max-parameters", "200000"], "limit-exceeded", "max_parameters")
    assert "1000" in out


def test_construct_errors_name_the_cli_flag() -> None:
    out = _refused(["construct", "--regex", "a", "--alphabet", "ab", "--all-words", "99999999"], "--all-words")
    assert "all_words_up_to" not in out
