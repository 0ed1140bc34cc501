"""One code version: records (service, CLI) and job results are stamped by the same function."""

from __future__ import annotations

import pytest


def test_one_code_version_function() -> None:
    from langclass.app.usecases import service
    from langclass.models.experiments import experiment
    from langclass.version import code_version

    assert service.code_version is code_version and experiment.code_version is code_version


def test_construct_result_carries_the_code_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A construct job's result is stamped like a train job's (the container check found it unstamped)."""
    from langclass.models.construct import verify
    from langclass.version import code_version

    assert verify.code_version is code_version
    monkeypatch.setenv("LANGCLASS_CODE_VERSION", "build-43")
    result = verify.run_construction({"regex": "(ab)*", "alphabet": ["a", "b"], "all_words_up_to": 3, "random_words": 1})
    assert result["exact"] is True
    assert result["code_version"] == "build-43"


def test_code_version_is_the_package_version_plus_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    from langclass.version import code_version, package_version

    monkeypatch.delenv("LANGCLASS_CODE_VERSION", raising=False)
    assert code_version().split("+g")[0] == package_version()
    monkeypatch.setenv("LANGCLASS_CODE_VERSION", "build-42")
    assert code_version() == "build-42"


def test_record_and_cli_agree(api: object) -> None:
    from langclass.version import code_version

    record = api.post("/v1/classify", json={"regex": "a*", "alphabet": ["a"]}).json()  # type: ignore[attr-defined]
    assert record["code_version"] == code_version()
    assert api.get("/openapi.json").json()["info"]["version"] == code_version()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_classify_and_construct_n_max_agree_at_one_score_scale() -> None:
    """classify certifies conventional RoPE at C = DEFAULT_PARAMS.C; construct defaults to a smaller
    C_Y (for target_length) and says so; built at C_y = C, it certifies classify's very N_max."""
    import json

    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.core.precision.encoding_choice import DEFAULT_PARAMS

    runner = CliRunner()
    lang = ["-r", "(a|b)*ab", "-a", "ab"]
    classified = json.loads(runner.invoke(app, ["classify", *lang, "--json"]).stdout)
    soft = classified["encodings"]["soft"]
    assert soft["encoding"] == "rope" and soft["parameters"]["C"] == DEFAULT_PARAMS.C
    assert "construct" in soft["parameters"]["construct_note"]
    quick = ["--all-words", "3", "--random-words", "1"]
    at_c = runner.invoke(app, ["construct", *lang, *quick, "--c-y", repr(DEFAULT_PARAMS.C), "--json"])
    assert at_c.exit_code == 0, at_c.output
    assert json.loads(at_c.stdout)["n_max"] == soft["parameters"]["n_max"]
    default = runner.invoke(app, ["construct", *lang, *quick])
    assert default.exit_code == 0, default.output
    line = next(x for x in default.stdout.splitlines() if x.startswith("N_max"))
    assert "--target-length 300" in line and f"C = {DEFAULT_PARAMS.C:g}" in line


def test_package_declares_the_pyproject_version_and_code_version_uses_it(monkeypatch) -> None:
    import tomllib
    from pathlib import Path

    import langclass
    from langclass.version import code_version, package_version

    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["version"]
    assert langclass.__version__ == declared
    assert package_version() == declared
    monkeypatch.delenv("LANGCLASS_CODE_VERSION", raising=False)
    assert code_version().split("+g")[0] == declared
