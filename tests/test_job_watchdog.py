"""Issue 35, items 1 and 6: every job worker runs under a hard memory cap (a worker over it is killed
and its job fails with ``memory-limit``, not retried), and a running job whose run ignores its
cancel is ended by killing its worker within ``job_cancel_grace_s`` (the executor's watchdog,
:mod:`langclass.app.execution.watchdog`). Ordering checks with generous timeouts, no timing asserts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langclass.app.execution.executor import LocalExecutor
from langclass.app.execution.watchdog import HOST_SHARE, default_worker_cap, host_memory_bytes
from langclass.app.execution.worker import WorkerConfig
from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database, upgrade

from test_jobs_repo import add_job, add_language, row

KINDS = {"train": "test_jobs_support:alloc_job", "construct": "test_jobs_support:stubborn_job",
         "sectors": "test_jobs_support:sleep_job"}


def wait_for(cond: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def pid_gone(pid: int) -> bool:
    return not jobrepo.pid_alive(pid)


@pytest.fixture
def db_url(sqlite_url: str) -> Any:
    upgrade(sqlite_url)
    d = Database(sqlite_url)
    yield sqlite_url, d
    d.dispose()


def executor(url: str, **kw: Any) -> LocalExecutor:
    return LocalExecutor(WorkerConfig(database_url=url, lease_s=2.0, kinds=KINDS), 1, eager=True, log_level="warning", **kw)


def started(trace: Path) -> list[int]:
    return sorted(int(p.stem) for p in trace.glob("*.start"))


@pytest.mark.slow
def test_a_job_over_the_memory_cap_is_killed_and_not_retried(db_url: Any, tmp_path: Path) -> None:
    url, db = db_url
    lid = add_language(db)
    ex = executor(url, max_rss_bytes=400 * 2**20)
    ex.start()
    try:
        first = wait_for(lambda: ex.pids()[0], 60, "the worker process")
        jid = add_job(db, lid, {"trace_dir": str(tmp_path), "mb": 1024, "piece_s": 0.02}, max_attempts=3)
        ex.notify()
        final = wait_for(lambda: row(db, jid).status if row(db, jid).status in jobrepo.TERMINAL else None, 60, "a final status")
        r = row(db, jid)
        assert final == "failed", r.error
        assert r.error["reason"] == "memory-limit" and r.error["setting"] == "LANGCLASS_JOB_WORKER_MAX_RSS_BYTES"
        assert r.error["value"] == 400 * 2**20 and r.error["rss_bytes"] > 400 * 2**20 and r.error["retrying"] is False
        assert r.attempts == 1 and started(tmp_path) == [first]  # never started again
        wait_for(lambda: pid_gone(first), 30, "the killed worker to be gone")
        # the job stays failed while a fresh worker serves the queue
        wait_for(lambda: ex.pids()[0] not in (None, first), 60, "a fresh worker")
        ok = add_job(db, lid, {"trace_dir": str(tmp_path / "small"), "mb": 32})
        ex.notify()
        wait_for(lambda: row(db, ok).status == "succeeded", 60, "a small job on the fresh worker")
        assert row(db, jid).status == "failed" and row(db, jid).attempts == 1
        assert ex.describe()["watchdog_kills"]["memory-limit"] == 1
    finally:
        ex.stop(timeout=10)


@pytest.mark.slow
def test_a_cancel_the_run_ignores_kills_its_worker(db_url: Any, tmp_path: Path) -> None:
    url, db = db_url
    lid = add_language(db)
    ex = executor(url, cancel_grace_s=1.0)
    ex.start()
    try:
        jid = add_job(db, lid, {"trace_dir": str(tmp_path), "sleep_s": 120}, kind="construct")
        ex.notify()
        pid = wait_for(lambda: started(tmp_path), 60, "the job to start")[0]
        with db.session_scope() as s:
            jobrepo.request_cancel(s, jid)
        wait_for(lambda: row(db, jid).status == "cancelled", 30, "the job cancelled")
        wait_for(lambda: pid_gone(pid), 30, "its worker process gone")
        r = row(db, jid)
        assert r.error["reason"] == "cancelled" and "killed" in r.error["detail"] and r.attempts == 1
        assert not (tmp_path / f"{pid}.done").exists()
    finally:
        ex.stop(timeout=10)


@pytest.mark.slow
def test_a_run_that_polls_stops_itself_at_once_and_keeps_its_worker(db_url: Any, tmp_path: Path) -> None:
    """A cooperative run sees the cancel from the heartbeat's poll (``cancel_poll_s``) before the grace
    ends, stores its partial result, and its worker process lives on."""
    url, db = db_url
    lid = add_language(db)
    ex = executor(url, cancel_grace_s=30.0)  # the kill path cannot be what ends it
    ex.start()
    try:
        jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 6000, "step_s": 0.01}, kind="sectors")
        ex.notify()
        pid = wait_for(lambda: started(tmp_path), 60, "the job to start")[0]
        with db.session_scope() as s:
            jobrepo.request_cancel(s, jid)
        wait_for(lambda: row(db, jid).status == "cancelled", 25, "the job cancelled")  # well before 30 s
        r = row(db, jid)
        assert r.error["detail"] == "cancelled while running" and r.result["completed_steps"] < 6000
        assert jobrepo.pid_alive(pid) and ex.pids() == [pid]
    finally:
        ex.stop(timeout=10)


def test_slots_times_the_cap_stays_under_the_host_memory() -> None:
    host = host_memory_bytes()
    assert host is not None and host > 0  # Linux
    for slots in (1, 2, 4, 16):
        cap = default_worker_cap(slots)
        assert cap is not None and slots * cap <= host * HOST_SHARE + slots
        assert default_worker_cap(slots, 10 * host) == cap  # a larger setting is lowered
    assert default_worker_cap(2, 2**30) == min(2**30, default_worker_cap(2))


# --- the estimate of a whole job (stacked runs included) and its 422 --------------------------------

AB_STAR = {"alphabet": ["a", "b"], "states": [0, 1, 2], "initial": 0, "accepting": [0],
           "transitions": {"0": {"a": 1, "b": 2}, "1": {"a": 2, "b": 0}, "2": {"a": 2, "b": 2}}}
REPRODUCER = {"kind": "train", "encodings": ["rope", "nope", "sinusoidal", "alibi", "rope_periodic", "sinusoidal_periodic"],
              "seeds": [0, 1], "overrides": {"d_model": 256, "n_layers": 4, "batch_size": 256, "train_lengths": {"range": [1, 100]},
                                             "max_steps": 2, "test_lengths": {"range": [101, 102]}}}


def test_the_estimate_counts_every_run_of_a_stacked_group() -> None:
    from langclass.models.experiments.experiment import validate_spec
    from langclass.models.training.footprint import job_footprint

    spec = {k: v for k, v in REPRODUCER.items() if k != "kind"} | {"language": AB_STAR}
    v = validate_spec({**spec, "overrides": {**spec["overrides"], "d_model": 64}})  # small enough to pass
    one = job_footprint(v["model_configs"], v["settings"], n_seeds=1, n_learning_rates=1)
    twelve = job_footprint(v["model_configs"], v["settings"], n_seeds=2, n_learning_rates=1)
    alone = job_footprint(v["model_configs"], v["settings"], n_seeds=2, n_learning_rates=1, batched=False)
    assert twelve["largest_unit_runs"] == 12 and one["largest_unit_runs"] == 6 and alone["largest_unit_runs"] == 1
    assert twelve["largest_unit_bytes"] == 2 * one["largest_unit_bytes"]
    assert twelve["memory_bytes"] > one["memory_bytes"] > alone["memory_bytes"] - alone["largest_unit_bytes"]


def test_the_issue_reproducer_is_refused_before_it_starts(make_client: Any, _migrated_sqlite: str) -> None:
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0)
    lid = client.post("/v1/languages", json={"dfa": AB_STAR}).json()["id"]
    before = client.get("/v1/jobs").json()
    r = client.post(f"/v1/languages/{lid}/experiments", json=REPRODUCER)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "limit-exceeded" and body["limit"] == "job_max_memory_bytes"
    assert "job_max_memory_bytes" in body["detail"] and "12 runs trained together" in body["detail"]
    assert client.get("/v1/jobs").json() == before  # nothing queued
    one_run = {**REPRODUCER, "encodings": ["rope"], "seeds": [0]}  # the issue's accepted single run still fits
    assert client.post(f"/v1/languages/{lid}/experiments", json=one_run).status_code == 202


def test_the_memory_limit_names_the_setting(make_client: Any, _migrated_sqlite: str) -> None:
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, job_max_memory_bytes=2**30)
    lid = client.post("/v1/languages", json={"dfa": AB_STAR}).json()["id"]
    r = client.post(f"/v1/languages/{lid}/experiments", json={**REPRODUCER, "encodings": ["rope"], "seeds": [0]})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["limit"] == "job_max_memory_bytes" and body["setting"] == "LANGCLASS_JOB_MAX_MEMORY_BYTES"
    assert body["value"] == 2**30
