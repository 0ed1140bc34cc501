"""The census sweep as a job of the service (kind ``sweep``, ``/v1/sweeps``): 202 and the checks
before queueing (422 naming the field or limit, 404 for an unknown census run), a worker running a
tiny sweep to the same result as the use case, cancellation (queued, running, over the wall-clock
budget), the job list and page with a job that has no language, and sampling from a stored census run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import _empty_all_tables, make_settings

from langclass.models.experiments.sweep import SWEEP_CELL_ENCODINGS

TINY = {"max_steps": 2, "eval_per_length": 2, "test_lengths": {"range": [41, 44]}, "train_lengths": {"range": [1, 8]}}
SMALL = {"states": 2, "alphabet": 2, "per_cell": 1, "seed": 0, "overrides": TINY}

_MOST_PER_CELL = max(len(v) for v in SWEEP_CELL_ENCODINGS.values())
"""Runs of one language at most (one seed, one rate): the default trains each cell's own encodings."""


@pytest.fixture(scope="module")
def census2() -> Any:
    """Every language of at most 2 states over 2 letters, with per-language records."""
    from langclass.core.census.run import census

    return census(2, 2, keep_members=True)


@pytest.fixture
def sqlite_db(_migrated_sqlite: str) -> str:
    """The migrated SQLite database, emptied (the worker tests claim whatever is queued there)."""
    _empty_all_tables(_migrated_sqlite)
    return _migrated_sqlite


def _store_run(url: str, c: Any, data_dir: Path) -> str:
    from langclass.app.store.census_runs import save_run
    from langclass.app.store.db import get_database

    with get_database(make_settings(url)).session_scope() as session:
        return save_run(session, c, data_dir, code_version="test").id


def _run_row(url: str, run_id: str) -> Any:
    from langclass.app.usecases.sweep import load_census_run

    return load_census_run(run_id, url)


# --- the API ---------------------------------------------------------------------------------------


def test_post_sweep_is_queued_without_a_language_and_listed(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    r = client.post("/v1/sweeps", json=SMALL)
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/v1/sweeps/{job['id']}"
    assert job["kind"] == "sweep" and job["status"] == "queued" and job["language_id"] is None
    assert "language" not in job["links"] and job["links"]["heatmap"] == f"/v1/sweeps/{job['id']}/heatmap.png"
    assert job["spec"]["states"] == 2 and job["spec"]["census_run"] is None and job["spec"]["runs_bound"] == 7 * _MOST_PER_CELL
    assert job["report"] is None
    assert [j["id"] for j in client.get("/v1/sweeps").json()["items"]] == [job["id"]]
    # the generic job endpoints and pages cope with a job that has no language
    listing = client.get("/v1/jobs")
    assert listing.status_code == 200 and listing.json()["items"][0]["language_id"] is None
    assert [j["id"] for j in client.get("/v1/jobs", params={"kind": "sweep"}).json()["items"]] == [job["id"]]
    assert client.get(f"/v1/jobs/{job['id']}").json()["language_id"] is None
    page = client.get(f"/jobs/{job['id']}")
    assert page.status_code == 200 and "no single language" in page.text and "/languages/None" not in page.text
    assert client.get(f"/v1/sweeps/{job['id']}/heatmap.png").status_code == 409  # nothing to draw yet
    assert client.get(f"/v1/jobs/{job['id']}/plot.png").status_code == 409
    # a train job is not a sweep
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    train = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "train", "encodings": ["nope"]}).json()
    assert client.get(f"/v1/sweeps/{train['id']}").status_code == 404
    assert [j["id"] for j in client.get("/v1/sweeps").json()["items"]] == [job["id"]]
    assert client.get(f"/languages/{lid}").status_code == 200


def test_sweep_list_is_paginated(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    ids = [client.post("/v1/sweeps", json={**SMALL, "seed": s}).json()["id"] for s in range(3)]
    first = client.get("/v1/sweeps", params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["next_cursor"]
    second = client.get("/v1/sweeps", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert second["next_cursor"] is None
    assert [j["id"] for j in first["items"] + second["items"]] == ids[::-1]


@pytest.mark.parametrize("body,field,limit", [
    ({"bogus": 1}, "bogus", None),
    ({"per_cell": 0}, "per_cell", None),
    ({"profile": "gpu"}, "profile", None),
    ({"encodings": ["nope", "bogus"]}, "encodings[1]", None),
    ({"states": 5, "alphabet": 2}, "states", "max_sample_languages"),
    ({"states": 2, "per_cell": 1000, "profile": "paper"}, "per_cell", "max_sweep_runs"),  # cpu caps per_cell at 4
    ({"states": 2, "overrides": {"max_steps": 10**9}}, "overrides.max_steps", "job_max_steps"),
    ({"states": 2, "overrides": {"test_lengths": {"range": [41, 10_000_000]}}}, "overrides.test_lengths", "max_test_length"),
    ({"states": True}, "states", None),      # strict: true is not 1
    ({"per_cell": "1"}, "per_cell", None),   # nor "1"
])
def test_bad_sweep_requests_are_422_naming_the_field(make_client: Any, migrated_url: str, body: dict[str, Any],
                                                      field: str, limit: str | None) -> None:
    client = make_client(migrated_url, worker_slots=0)
    r = client.post("/v1/sweeps", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field, r.json()
    assert r.json().get("limit") == limit, r.json()
    assert client.get("/v1/sweeps").json()["items"] == []  # nothing queued


def test_census_run_unknown_404_and_misfit_422(make_client: Any, migrated_url: str, census2: Any, tmp_path: Path) -> None:
    client = make_client(migrated_url, worker_slots=0)
    r = client.post("/v1/sweeps", json={"census_run": "no-such-run"})
    assert r.status_code == 404 and r.json()["field"] == "census_run", r.text
    run_id = _store_run(migrated_url, census2, tmp_path)
    for body, field in (({"states": 3}, "states"), ({"alphabet": 3}, "alphabet")):
        r = client.post("/v1/sweeps", json={"census_run": run_id, **body})
        assert r.status_code == 422 and r.json()["field"] == field, r.text
    r = client.post("/v1/sweeps", json={"census_run": run_id, "per_cell": 1, "overrides": TINY})
    assert r.status_code == 202, r.text
    spec = r.json()["spec"]
    assert (spec["states"], spec["alphabet"], spec["census_run"]["id"]) == (2, 2, run_id)
    # the bound uses the run's cell sizes (≤ 2 states over 2 letters: no language in y_mod or sf)
    assert spec["runs_bound"] == 5 * _MOST_PER_CELL
    # the served spec names the data file, never the server path (the stored spec keeps it for the worker)
    assert "data_path" not in spec["census_run"] and spec["census_run"]["data_file"] == f"{run_id}.npz"
    assert str(tmp_path) not in r.text and str(tmp_path) not in client.get(r.headers["location"]).text


def test_sweep_of_an_altered_census_run_is_409_before_queueing(make_client: Any, migrated_url: str, census2: Any,
                                                             tmp_path: Path) -> None:
    client = make_client(migrated_url, worker_slots=0)
    run_id = _store_run(migrated_url, census2, tmp_path)
    with open(tmp_path / f"{run_id}.npz", "ab") as f:
        f.write(b"x")
    r = client.post("/v1/sweeps", json={"census_run": run_id, "per_cell": 1, "overrides": TINY})
    assert r.status_code == 409 and r.json()["code"] == "census-data-changed", r.text
    assert client.get("/v1/sweeps").json()["items"] == []  # nothing queued


# --- the worker ------------------------------------------------------------------------------------


def _strip(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if k != "wall_s"}


def test_worker_runs_a_sweep_job_like_the_use_case(make_client: Any, sqlite_db: str, tmp_path: Path) -> None:
    from langclass.app.execution.worker import Worker, WorkerConfig
    from langclass.app.usecases.sweep import run

    url = sqlite_db
    client = make_client(url, worker_slots=0)
    job = client.post("/v1/sweeps", json=SMALL).json()
    ckpt = tmp_path / "ckpt"
    cfg = WorkerConfig(database_url=url, lease_s=60, heartbeat_s=0.05, checkpoint_root=str(ckpt))
    assert Worker(cfg).run_once() == "succeeded"
    done = client.get(f"/v1/sweeps/{job['id']}").json()
    assert done["status"] == "succeeded", done["error"]
    res, rep = done["result"], done["report"]
    assert done["progress"]["step"] == done["progress"]["total"] == len(res["records"]) > 0
    assert not (ckpt / job["id"]).exists()  # the job's own directory is removed once it finished

    direct = run(2, 2, 1, 0, tmp_path / "direct", overrides=job["spec"]["overrides"], write=False)
    assert [_strip(r) for r in res["records"]] == [_strip(r) for r in direct["records"]]
    assert res["aggregate"] == direct["aggregate"] and res["contradictions"] == direct["contradictions"]
    assert res["sample"] == direct["sample"] and res["census_run"] is None and res["complete"] is True
    # the report: shares per cell × encoding, predicted encodings per cell, contradictions with languages
    assert set(rep["cells"]) == set(direct["aggregate"]["cells"])
    for cell, c in rep["cells"].items():
        assert c["encodings"] == direct["aggregate"]["cells"][cell]["encodings"]
        assert c["predicted"] == [e for e, s in c["encodings"].items() if s["predicted_majority"]]
    assert rep["cells"]["ltl_p"]["tested"] == 0 or "nope" in rep["cells"]["ltl_p"]["predicted"]
    from langclass.app.usecases.sweep import markdown_report

    assert rep["markdown"] == markdown_report(direct)
    for c in rep["contradictions"]:
        assert json.dumps(c["dfa"], separators=(",", ":")) in rep["markdown"]
    png = client.get(f"/v1/sweeps/{job['id']}/heatmap.png")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png" and png.content[:4] == b"\x89PNG"
    page = client.get(f"/jobs/{job['id']}")
    assert page.status_code == 200 and "sweep-heatmap" in page.text


def test_worker_resumes_a_sweep_from_its_checkpoint_directory(make_client: Any, sqlite_db: str, tmp_path: Path) -> None:
    """A retried attempt finds the finished languages in <checkpoint root>/<job id> and trains only the rest."""
    from langclass.app.execution.worker import Worker, WorkerConfig
    from langclass.app.usecases.sweep import run

    url = sqlite_db
    client = make_client(url, worker_slots=0)
    job = client.post("/v1/sweeps", json=SMALL).json()
    ckpt = tmp_path / "ckpt"
    first = run(2, 2, 1, 0, ckpt / job["id"], overrides=job["spec"]["overrides"], write=False)  # an earlier attempt's languages
    cfg = WorkerConfig(database_url=url, lease_s=60, heartbeat_s=0.05, checkpoint_root=str(ckpt))
    assert Worker(cfg).run_once() == "succeeded"
    res = client.get(f"/v1/sweeps/{job['id']}").json()["result"]
    assert res["resumed"] == len(first["records"]) == len(res["records"])
    assert res["records"] == first["records"]


def test_cancel_a_queued_sweep(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    job = client.post("/v1/sweeps", json=SMALL).json()
    r = client.delete(f"/v1/jobs/{job['id']}")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert client.get(f"/v1/sweeps/{job['id']}").json()["status"] == "cancelled"


def test_cancel_a_running_sweep_between_languages(make_client: Any, sqlite_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancellation requested after the first language: the worker stops at its next check and keeps
    the finished language as a partial report."""
    from langclass.app.execution.worker import Worker, WorkerConfig
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import get_database
    from langclass.models.experiments import sweep as sweep_model
    from langclass.models.experiments.experiment import ExperimentCancelled

    url = sqlite_db
    client = make_client(url, worker_slots=0)
    job = client.post("/v1/sweeps", json=SMALL).json()
    real = sweep_model.run_language
    calls: list[int] = []

    def run_language(*args: Any, should_cancel: Any = None, **kw: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            return real(*args, should_cancel=should_cancel, **kw)
        with get_database(make_settings(url)).session_scope() as session:
            assert jobrepo.request_cancel(session, job["id"]).cancel_requested
        for _ in range(3000):  # the heartbeat (every 0.05 s) reads the request; no timing is asserted
            if should_cancel():
                raise ExperimentCancelled({})
            import time

            time.sleep(0.01)
        raise AssertionError("should_cancel never turned True")

    monkeypatch.setattr(sweep_model, "run_language", run_language)
    cfg = WorkerConfig(database_url=url, lease_s=60, heartbeat_s=0.05)
    assert Worker(cfg).run_once() == "cancelled"
    out = client.get(f"/v1/sweeps/{job['id']}").json()
    assert out["status"] == "cancelled" and out["error"]["reason"] == "cancelled"
    assert len(out["result"]["records"]) == 1 and out["result"]["complete"] is False
    assert out["report"]["complete"] is False and sum(c["languages"] for c in out["report"]["cells"].values()) == 1
    assert len(calls) == 2  # no language started after the cancellation


def test_sweep_over_its_time_budget_fails_naming_the_limit(make_client: Any, sqlite_db: str) -> None:
    from langclass.app.execution.worker import Worker, WorkerConfig

    client = make_client(sqlite_db, worker_slots=0)
    job = client.post("/v1/sweeps", json=SMALL).json()
    assert Worker(WorkerConfig(database_url=sqlite_db, lease_s=60, time_limit_s=1e-6)).run_once() == "failed"
    out = client.get(f"/v1/sweeps/{job['id']}").json()
    assert out["error"]["reason"] == "limit-exceeded" and out["error"]["limit"] == "job_time_limit_s"
    assert out["result"]["complete"] is False and out["result"]["records"] == []


def test_run_sweep_job_with_a_census_run_names_it(migrated_url: str, census2: Any, tmp_path: Path) -> None:
    from langclass.app.usecases.sweep_jobs import SweepRequest, build_sweep_spec, run_sweep_job

    run_id = _store_run(migrated_url, census2, tmp_path / "data")
    row = _run_row(migrated_url, run_id)
    spec = build_sweep_spec(SweepRequest(census_run=run_id, per_cell=1, encodings=["nope"], overrides=TINY), census_run=row)
    reports: list[dict[str, Any]] = []
    res = run_sweep_job(spec, progress=reports.append)
    assert res["census_run"]["id"] == run_id and res["complete"] is True
    assert res["encodings"] == ["nope"] and all(list(r["encodings"]) == ["nope"] for r in res["records"])
    assert reports[0]["phase"] == "sampling" and reports[-1]["step"] == reports[-1]["total"] == len(res["records"])
    assert f"sampled from census run {run_id}" in __import__("langclass.app.usecases.sweep", fromlist=["x"]).markdown_report(res)


# --- sampling from a stored census run -------------------------------------------------------------


def test_sample_from_a_stored_run_draws_its_members_in_their_cells(migrated_url: str, census2: Any, tmp_path: Path) -> None:
    from langclass.app.store.census_runs import iter_members
    from langclass.app.usecases.sweep import draw
    from langclass.core.census.sample import CELL_KEYS, cell_of

    run_id = _store_run(migrated_url, census2, tmp_path)
    row = _run_row(migrated_url, run_id)
    members = {dfa.fingerprint(): profile for _i, dfa, profile in iter_members(row)}
    lengths = list(range(41, 45))
    for seed in range(4):
        langs, summary = draw(2, 2, 2, seed, lengths, census_run=row)
        assert langs
        for cell, dfa, prof in langs:
            assert dfa.fingerprint() in members  # a member of that run only
            assert cell_of(members[dfa.fingerprint()]) == cell and cell_of(prof) == cell  # in its own cell
            assert set(prof) == set(CELL_KEYS)
        # the run's order is the enumeration's: the same seed draws the same languages
        enum, enum_summary = draw(2, 2, 2, seed, lengths)
        assert [(c, d.fingerprint()) for c, d, _p in langs] == [(c, d.fingerprint()) for c, d, _p in enum]
        assert summary == enum_summary
    # states below the run's N: only its members of at most that many states
    langs, summary = draw(1, 2, 5, 0, None, census_run=row)
    assert summary["seen"] == census2.by_states[1] and all(d.num_states == 1 for _c, d, _p in langs)


def test_sample_from_a_stored_run_checks_fit(migrated_url: str, census2: Any, tmp_path: Path) -> None:
    from langclass.app.errors import NotFoundError
    from langclass.app.usecases.sweep import draw
    from langclass.core.base.errors import InputError

    row = _run_row(migrated_url, _store_run(migrated_url, census2, tmp_path))
    with pytest.raises(InputError) as err:
        draw(3, 2, 1, 0, None, census_run=row)
    assert err.value.field == "states"
    with pytest.raises(InputError) as err:
        draw(2, 3, 1, 0, None, census_run=row)
    assert err.value.field == "alphabet"
    with pytest.raises(NotFoundError):
        _run_row(migrated_url, "no-such-run")


def test_cli_sweep_from_a_census_run(sqlite_db: str, census2: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.app.settings import get_settings

    run_id = _store_run(sqlite_db, census2, tmp_path / "data")
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", sqlite_db)
    get_settings.cache_clear()
    try:
        out = tmp_path / "sw"
        r = CliRunner().invoke(app, ["sweep", "--census-run", run_id, "--per-cell", "1", "--out", str(out),
                                     "--overrides", json.dumps(TINY)])
        assert r.exit_code == 0, r.output
        data = json.loads((out / "sweep.json").read_text())
        assert data["census_run"]["id"] == run_id and (data["states"], data["alphabet"]) == (2, 2)
        assert f"sampled from census run {run_id}" in (out / "sweep.md").read_text()
        r = CliRunner().invoke(app, ["sweep", "--census-run", "no-such-run", "--out", str(tmp_path / "x")])
        assert r.exit_code == 2 and "no census run" in r.output
    finally:
        get_settings.cache_clear()


def test_only_a_sweep_job_may_lack_a_language(sqlite_db: str) -> None:
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import get_database

    with get_database(make_settings(sqlite_db)).session_scope() as session:
        with pytest.raises(ValueError):
            jobrepo.create_job(session, language_id=None, kind="train", spec={}, max_attempts=1)
        row = jobrepo.create_job(session, language_id=None, kind="sweep", spec={}, max_attempts=1)
        assert jobrepo.job_summary(row)["links"] == {"self": f"/v1/jobs/{row.id}", "sweep": f"/v1/sweeps/{row.id}",
                                                      "heatmap": f"/v1/sweeps/{row.id}/heatmap.png"}


def test_python_api_sweep_from_a_census_run(sqlite_db: str, census2: Any, tmp_path: Path) -> None:
    import langclass

    run_id = _store_run(sqlite_db, census2, tmp_path / "data")
    out = langclass.sweep(per_cell=1, out=str(tmp_path / "sw"), overrides=TINY, census_run=run_id, database_url=sqlite_db)
    assert out["census_run"]["id"] == run_id and (out["states"], out["alphabet"]) == (2, 2) and out["records"]
