"""The service's limits (``LANGCLASS_MAX_STATES``, ``LANGCLASS_TIME_LIMIT_S``, …) reach the job
functions: a construct job parses, synthesizes and verifies under them, not the library defaults."""

from __future__ import annotations

import dataclasses
from typing import Any

from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database
from langclass.app.execution.executor import worker_config
from langclass.app.execution.worker import WorkerConfig, run_claim
from langclass.core.base.limits import Limits
from test_jobs_repo import add_job, add_language, row

SPEC = {"formula": "P(b & Y a)", "alphabet": ["a", "b"], "options": {"all_words_up_to": 2, "random_words": 2,
                                                                   "random_max_length": 8, "beyond_n_max": False}}


def _run(url: str, limits: dict[str, Any] | None) -> jobrepo.JobRow:
    db = Database(url)
    try:
        jid = add_job(db, add_language(db), dict(SPEC), kind="construct")
        with db.session_scope() as s:
            held = jobrepo.claim(s, owner="w", lease_s=60)
        run_claim(db, held, WorkerConfig(database_url=url, lease_s=60, limits=limits))
        return row(db, jid)
    finally:
        db.dispose()


def test_construct_jobs_run_under_the_services_limits(migrated_url: str) -> None:
    tight = dataclasses.asdict(Limits(max_states=2))
    r = _run(migrated_url, tight)
    assert r.status == "failed" and r.error["reason"] == "limit-exceeded", r.error
    assert r.error["limit"] == "max_states" and r.error["value"] == 2


def test_the_same_job_under_the_defaults_succeeds(migrated_url: str) -> None:
    r = _run(migrated_url, None)
    assert r.status == "succeeded", r.error
    assert r.result["exact"] is True


def test_worker_config_carries_the_settings_limits(migrated_url: str) -> None:
    from conftest import make_settings

    cfg = worker_config(make_settings(migrated_url, max_states=77, time_limit_s=5.0))
    assert cfg.limits is not None and Limits(**cfg.limits) == Limits(max_states=77, time_limit_s=5.0)
