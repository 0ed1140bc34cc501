"""Regressions of the census hardening: a finished run leaves no checkpoint and records honest
seconds, the repository ships no census data, a data file altered or deleted after a first read is
refused (409), responses name no server path, and the page that opens a member answers a refusal
as a problem when JSON is asked for."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_census_dir_is_ignored_and_nothing_in_it_is_tracked() -> None:
    from langclass.app.settings import Settings

    default = Path(Settings(database_url="sqlite:///./langclass.db").census_directory)
    assert default.name == "langclass-census"
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    rel = Path(default.as_posix().removeprefix("./"))
    tracked = subprocess.run(["git", "ls-files", "--", str(rel)], cwd=ROOT, capture_output=True, text=True, check=True)
    assert tracked.stdout == "", f"census data tracked in git: {tracked.stdout.split()}"
    for probe in (rel / "0000.npz", Path("data") / rel / "0000.npz"):  # beside ./langclass.db or any SQLite file
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", str(probe)], cwd=ROOT)
        assert ignored.returncode == 0, f"{probe} is not ignored by .gitignore"
