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
    from langclass.core.census.run import census

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
    # the run without a filter too (before: 200 with its counts, while the page answered 409)
    for url, params in ((f"/v1/census/{run_id}/languages", {}), (f"/v1/census/{run_id}", {"in": "ltl_p"}),
                        (f"/v1/census/{run_id}", {}), (f"/census/{run_id}", {}),
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


# --- a finished census: no checkpoint left, honest seconds ------------------------------------------


def test_seconds_are_the_shards_compute_seconds_resumed_ones_included(tmp_path: Path) -> None:
    """Each shard reports 1.0 s (fixed, not measured): the run's seconds are the sum over every
    shard, those read from the checkpoint of the interrupted first attempt included."""
    from dataclasses import replace

    from langclass.core.census.run import census, run_shard

    path = tmp_path / "c.jsonl"
    ran: list[str] = []

    def interrupted(todo, keys):
        for s in todo:
            if len(ran) == 3:
                raise KeyboardInterrupt
            ran.append(s.id)
            yield replace(run_shard(s, keys), seconds=1.0)

    with pytest.raises(KeyboardInterrupt):
        census(3, 2, runner=interrupted, checkpoint=path, shard_target=16)

    def one_second(todo, keys):
        for s in todo:
            yield replace(run_shard(s, keys), seconds=1.0)

    resumed = census(3, 2, runner=one_second, checkpoint=path, shard_target=16)
    assert resumed.resumed == 3 and resumed.seconds == pytest.approx(resumed.shards * 1.0)
    assert resumed.to_dict()["seconds"] == pytest.approx(resumed.shards) and "wall_seconds" in resumed.to_dict()
    whole = census(3, 2, runner=one_second, checkpoint=path, shard_target=16)  # read back whole
    assert whole.resumed == whole.shards and whole.seconds == pytest.approx(whole.shards * 1.0)


def _cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.app.settings import get_settings

    monkeypatch.setenv("LANGCLASS_DATABASE_URL", f"sqlite:///{tmp_path}/cli.db")
    monkeypatch.setenv("LANGCLASS_CENSUS_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        return CliRunner().invoke(app, ["census", "--states", "2", "--alphabet", "2", "--jobs", "1", "--no-progress",
                                        "--checkpoint", str(tmp_path / "ck.jsonl"), *args])
    finally:
        get_settings.cache_clear()


def test_a_stored_census_removes_its_checkpoint_and_a_rerun_counts_afresh(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    ck = tmp_path / "ck.jsonl"
    first = _cli(tmp_path, monkeypatch, "--json")
    assert first.exit_code == 0, first.output
    d1 = json.loads(first.stdout)
    assert not ck.exists() and not (tmp_path / "ck.jsonl.members").exists()
    assert d1["same_runs"] == [] and d1["resumed_shards"] == 0
    second = _cli(tmp_path, monkeypatch)
    assert second.exit_code == 0, second.output
    assert "from the checkpoint" not in second.stdout and "s of compute" in second.stdout
    assert f"stored before with the same N, K and classes: {d1['run_id']}" in second.stdout
    third = json.loads(_cli(tmp_path, monkeypatch, "--json").stdout)
    assert third["resumed_shards"] == 0 and len(third["same_runs"]) == 2 and d1["run_id"] in third["same_runs"]
    from langclass.app.store import census_runs
    from langclass.app.store.db import Database

    db = Database(f"sqlite:///{tmp_path}/cli.db")
    try:
        with db.session_scope() as session:
            row = census_runs.get_run(session, d1["run_id"])
            rec = census_runs.run_record(row)
    finally:
        db.dispose()
    assert rec["seconds"] == pytest.approx(d1["seconds"], abs=0.006)  # stored unrounded, printed to 0.01
    assert rec["wall_seconds"] == d1["wall_seconds"]
    assert not ck.exists()
    nostore = _cli(tmp_path, monkeypatch, "--no-store")
    assert nostore.exit_code == 0 and "not stored" in nostore.stdout and not ck.exists()


def test_a_census_that_fails_before_it_is_stored_keeps_its_checkpoint(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from langclass.app.cli import census as cli_census

    def broken(result: Any, settings: Any) -> Any:
        raise KeyboardInterrupt  # as a kill between the last shard and the stored run

    monkeypatch.setattr(cli_census, "_store", broken)
    out = _cli(tmp_path, monkeypatch)
    assert out.exit_code != 0
    ck = tmp_path / "ck.jsonl"
    assert ck.exists() and len(ck.read_text().splitlines()) > 1
    assert list((tmp_path / "ck.jsonl.members").glob("*.npz"))
    monkeypatch.undo()
    again = _cli(tmp_path, monkeypatch)
    assert again.exit_code == 0, again.output
    assert "from the checkpoint" in again.stdout and not ck.exists()
