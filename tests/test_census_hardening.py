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


# --- stored runs: data files checked on every read, no server paths -------------------------------

from typing import Any  # noqa: E402

from conftest import make_settings  # noqa: E402


@pytest.fixture(scope="module")
def two() -> Any:
    from langclass.core.census import census

    return census(2, 2, keep_members=True)


def _store(url: str, c: Any, data_dir: Path) -> str:
    from langclass.app.store.census_runs import save_run
    from langclass.app.store.db import get_database

    with get_database(make_settings(url)).session_scope() as session:
        return save_run(session, c, data_dir, code_version="test").id


def _problem(r: Any, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers["content-type"]
    body = r.json()
    assert body["code"] == code, body
    return body


@pytest.mark.parametrize("change", ["append", "delete"])
def test_a_data_file_changed_after_a_first_read_is_refused(api: Any, migrated_url: str, two: Any, tmp_path: Path,
                                                           change: str) -> None:
    run_id = _store(migrated_url, two, tmp_path)
    f = tmp_path / f"{run_id}.npz"
    assert api.get(f"/v1/census/{run_id}/languages").status_code == 200  # read once: now cached
    assert api.get(f"/census/{run_id}", params={"in": "ltl_p"}).status_code == 200
    if change == "append":
        with open(f, "ab") as fh:
            fh.write(b"\0")
    else:
        f.unlink()
    for url, params in ((f"/v1/census/{run_id}/languages", {}), (f"/v1/census/{run_id}", {"in": "ltl_p"}),
                        (f"/census/{run_id}", {"in": "ltl_p"}), (f"/census/{run_id}/languages/3", {})):
        r = api.get(url, params=params, headers={"Accept": "application/json"}, follow_redirects=False)
        body = _problem(r, 409, "census-data-changed")
        assert body["reason"] == ("altered" if change == "append" else "missing")
        assert body["file"] == f.name and str(tmp_path) not in r.text and body["field"] == "run"


def test_an_altered_file_of_the_same_size_is_refused_after_a_first_read(api: Any, migrated_url: str, two: Any,
                                                                        tmp_path: Path) -> None:
    run_id = _store(migrated_url, two, tmp_path)
    f = tmp_path / f"{run_id}.npz"
    assert api.get(f"/v1/census/{run_id}/languages").status_code == 200
    raw = bytearray(f.read_bytes())
    raw[-1] ^= 0xFF
    tmp = tmp_path / "x.tmp"
    tmp.write_bytes(bytes(raw))
    tmp.replace(f)  # same size, new inode
    body = _problem(api.get(f"/v1/census/{run_id}/languages"), 409, "census-data-changed")
    assert body["reason"] == "altered"


def test_run_resources_name_the_file_not_the_server_path(api: Any, migrated_url: str, two: Any, tmp_path: Path) -> None:
    run_id = _store(migrated_url, two, tmp_path)
    listing = api.get("/v1/census")
    one = api.get(f"/v1/census/{run_id}")
    for r in (listing, one):
        assert r.status_code == 200 and str(tmp_path) not in r.text
    assert one.json()["data"]["file"] == f"{run_id}.npz" and "path" not in one.json()["data"]
    assert listing.json()["items"][0]["data"]["file"] == f"{run_id}.npz"
    assert str(tmp_path) not in api.get(f"/census/{run_id}").text


# --- opening a member under LANGCLASS_REQUIRE_KEY_FOR_WRITES ----------------------------------------

KEY = "census-key-0123456789"


def test_opening_a_member_that_needs_a_key_is_a_problem_for_json_clients(make_client: Any, migrated_url: str,
                                                                         two: Any, tmp_path: Path) -> None:
    run_id = _store(migrated_url, two, tmp_path)
    client = make_client(migrated_url, api_keys=KEY, require_key_for_writes=True)
    url = f"/census/{run_id}/languages/10"
    body = _problem(client.get(url, headers={"Accept": "application/json"}, follow_redirects=False), 403, "forbidden")
    assert "stores it as a language" in body["detail"] and "sign in" in body["detail"]
    page = client.get(url, headers={"Accept": "text/html"}, follow_redirects=False)
    assert page.status_code == 403 and page.headers["content-type"].startswith("text/html")
    assert "stores it as a language" in page.text and "/problems/forbidden" in page.text
    _problem(client.get(url, headers={"Accept": "application/json", "Authorization": "Bearer wrong-key-0000000"},
                        follow_redirects=False), 401, "unauthorized")
    ok = client.get(url, headers={"Authorization": f"Bearer {KEY}"}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"].startswith("/languages/")
    codes = {p["code"]: p["status"] for p in client.get("/problems").json()}
    assert codes["forbidden"] == 403 and codes["census-data-changed"] == 409
