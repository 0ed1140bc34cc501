"""One code version: records (service, CLI) and job results are stamped by the same function."""

from __future__ import annotations

import pytest


def test_one_code_version_function() -> None:
    from langclass.app import service
    from langclass.models import experiment
    from langclass.version import code_version

    assert service.code_version is code_version and experiment.code_version is code_version


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
