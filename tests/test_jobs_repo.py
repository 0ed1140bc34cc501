"""The jobs repository and the worker's run of one claim, on SQLite and PostgreSQL.

Claims must be exclusive under concurrency, leases must expire into a retry or a recorded failure,
a stale holder must never store, and every outcome of a job function must be recorded with its
reason. Job functions here are the small ones of ``test_jobs_support`` (the real training runs in
``test_jobs_api``).
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from langclass.app.store import jobs as jobrepo
from langclass.app.store import repository as repo
from langclass.app.store.db import Database, upgrade
from langclass.app.store.orm import utcnow
from langclass.app.execution.worker import Worker, WorkerConfig, run_claim

SUPPORT = {"train": "test_jobs_support:sleep_job", "construct": "test_jobs_support:failing_job"}


def add_language(db: Database, lid: str = "a" * 64) -> str:
    with db.session_scope() as s:
        repo.insert_language(
            s, fingerprint=lid, name=None, tags=[], alphabet=["a", "b"], source={"kind": "test"},
            dfa={"alphabet": ["a", "b"], "states": [0, 1], "initial": 0, "accepting": [0],
                 "transitions": {"0": {"a": 1, "b": 1}, "1": {"a": 0, "b": 0}}},
            num_states=2, analysis={"classes": {}}, code_version="test",
        )
    return lid


def add_job(db: Database, lid: str, spec: dict[str, Any] | None = None, *, kind: str = "train", max_attempts: int = 3) -> str:
    with db.session_scope() as s:
        return jobrepo.create_job(s, language_id=lid, kind=kind, spec=spec or {}, max_attempts=max_attempts).id


def row(db: Database, job_id: str) -> jobrepo.JobRow:
    with db.session_scope() as s:
        r = jobrepo.get_job(s, job_id)
        assert r is not None
        return r


@pytest.fixture
def db(migrated_url: str) -> Any:
    d = Database(migrated_url)
    yield d
    d.dispose()


def test_orm_matches_migration_for_jobs(database_url: str) -> None:
    """Alembic finds no difference between JobRow and migration 0002."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from langclass.app.store.orm import Base

    upgrade(database_url)
    d = Database(database_url)
    try:
        with d.engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    finally:
        d.dispose()
    assert [x for x in diffs if "jobs" in repr(x)] == []


def test_claims_are_exclusive_under_concurrency(db: Database, migrated_url: str) -> None:
    """Six claimants (own engines = own connections) race for 40 jobs: each job is claimed exactly once."""
    lid = add_language(db)
    ids = {add_job(db, lid, {"i": i}) for i in range(40)}
    got: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def claimant(n: int) -> None:
        d = Database(migrated_url)
        try:
            while True:
                with d.session_scope() as s:
                    c = jobrepo.claim(s, owner=f"t{n}", lease_s=60)
                if c is None:
                    return
                with lock:
                    got.append(c.job_id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            d.dispose()

    threads = [threading.Thread(target=claimant, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert sorted(got) == sorted(ids)  # none twice, none missed
    with db.session_scope() as s:
        rows = list(s.scalars(select(jobrepo.JobRow)))
    assert all(r.status == "running" and r.attempts == 1 and r.started_at is not None for r in rows)


def test_claim_order_kinds_and_uncommitted_jobs(db: Database) -> None:
    """Oldest first; only the asked kinds; a job in an uncommitted or rolled-back transaction is invisible."""
    lid = add_language(db)
    first = add_job(db, lid, kind="construct")
    second = add_job(db, lid, kind="train")
    with db.session_scope() as s:
        c = jobrepo.claim(s, owner="w", lease_s=60, kinds=("train",))
    assert c is not None and c.job_id == second and c.kind == "train" and c.attempt == 1
    # an uncommitted insert is not claimable; after rollback it does not exist
    s1 = db.sessionmaker()
    pending = jobrepo.create_job(s1, language_id=lid, kind="train", spec={}, max_attempts=3).id
    with db.session_scope() as s2:  # a reader (SQLite: a writer would wait for s1's lock)
        assert s2.scalar(select(jobrepo.JobRow.id).where(jobrepo.JobRow.id == pending)) is None
        assert jobrepo.count_claimable(s2) == 1  # only `first`
    s1.rollback()
    s1.close()
    with db.session_scope() as s:
        assert jobrepo.get_job(s, pending) is None
        c2 = jobrepo.claim(s, owner="w", lease_s=60)
    assert c2 is not None and c2.job_id == first


def test_lease_expiry_requeues_then_fails_with_reason(db: Database) -> None:
    lid = add_language(db)
    jid = add_job(db, lid, max_attempts=2)
    for attempt in (1, 2):
        with db.session_scope() as s:
            c = jobrepo.claim(s, owner="w", lease_s=60)
        assert c is not None and c.attempt == attempt
        with db.session_scope() as s:  # a recoverer whose clock is past the lease (no sleeping)
            assert jobrepo.recover_expired(s, now=utcnow() + timedelta(seconds=59)) == {"requeued": 0, "failed": 0, "cancelled": 0}
            counts = jobrepo.recover_expired(s, now=utcnow() + timedelta(seconds=61))
        r = row(db, jid)
        if attempt == 1:
            assert counts == {"requeued": 1, "failed": 0, "cancelled": 0}
            assert r.status == "queued" and r.lease_owner is None
            assert r.error["reason"] == "worker-lost" and r.error["retrying"] is True
        else:
            assert counts == {"requeued": 0, "failed": 1, "cancelled": 0}
            assert r.status == "failed" and r.finished_at is not None
            assert r.error["reason"] == "worker-lost" and r.error["retrying"] is False and r.error["attempt"] == 2
        # the stale holder can neither heartbeat nor store
        with db.session_scope() as s:
            assert jobrepo.heartbeat(s, c) == (False, False)
            assert jobrepo.finish(s, c, status="succeeded", result={"x": 1}) is False
    assert row(db, jid).result is None


def test_heartbeat_keeps_the_lease_and_cancel_is_seen(db: Database) -> None:
    lid = add_language(db)
    jid = add_job(db, lid)
    queued = add_job(db, lid)
    with db.session_scope() as s:
        c = jobrepo.claim(s, owner="w", lease_s=60)
    assert c is not None and c.job_id == jid
    claimed_until = row(db, jid).lease_expires_at
    for _ in range(3):
        before = utcnow()
        with db.session_scope() as s:
            assert jobrepo.heartbeat(s, c, progress={"step": 1}) == (True, False)
        # the lease now runs lease_s from the beat: a recoverer just before that end sees nothing to do
        assert row(db, jid).lease_expires_at >= before + timedelta(seconds=60)
        with db.session_scope() as s:
            assert jobrepo.recover_expired(s, now=before + timedelta(seconds=59.9)) == {"requeued": 0, "failed": 0, "cancelled": 0}
    assert row(db, jid).lease_expires_at >= claimed_until
    with db.session_scope() as s:
        assert jobrepo.request_cancel(s, jid).status == "running"
        assert jobrepo.request_cancel(s, queued).status == "cancelled"
        assert jobrepo.heartbeat(s, c) == (True, True)
        assert jobrepo.claim(s, owner="w2", lease_s=1) is None  # the cancelled one is not claimable
    r = row(db, jid)
    assert r.cancel_requested and r.progress == {"step": 1}


def test_expire_leases_of_a_dead_owner(db: Database) -> None:
    lid = add_language(db)
    a, b = add_job(db, lid), add_job(db, lid)
    with db.session_scope() as s:
        ca = jobrepo.claim(s, owner="host:11", lease_s=600)
        cb = jobrepo.claim(s, owner="host:111", lease_s=600)
        assert jobrepo.expire_leases_of(s, "host:11") == 1  # a prefix match is not enough: 111 keeps its lease
        assert jobrepo.recover_expired(s)["requeued"] == 1
    assert (row(db, ca.job_id).status, row(db, cb.job_id).status) == ("queued", "running")
    assert {a, b} == {ca.job_id, cb.job_id}


def test_list_jobs_paginates_newest_first(db: Database) -> None:
    lid = add_language(db)
    other = add_language(db, "b" * 64)
    ids = [add_job(db, lid) for _ in range(5)]
    add_job(db, other)
    seen: list[str] = []
    cursor = None
    with db.session_scope() as s:
        while True:
            rows, cursor = jobrepo.list_jobs(s, limit=2, cursor=cursor, language_id=lid)
            seen += [r.id for r in rows]
            if cursor is None:
                break
    assert seen == list(reversed(ids))


# --- run_claim: every outcome recorded ---------------------------------------------------------


def _config(url: str, **kw: Any) -> WorkerConfig:
    return WorkerConfig(database_url=url, lease_s=kw.pop("lease_s", 2.0), heartbeat_s=kw.pop("heartbeat_s", 0.05), kinds=SUPPORT, **kw)


def test_run_claim_success_stores_result_and_progress(db: Database, migrated_url: str, tmp_path: Path) -> None:
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 5, "step_s": 0.03})
    w = Worker(_config(migrated_url), db=db)
    assert w.run_once() == "succeeded"
    r = row(db, jid)
    assert r.status == "succeeded" and r.error is None and r.result["steps"] == 5
    assert r.progress["step"] == 5 and r.progress["total"] == 5
    assert r.finished_at >= r.started_at >= r.created_at
    assert w.run_once() is None


@pytest.mark.parametrize("which,reason", [("input", "invalid-spec"), ("bug", "run-error")])
def test_run_claim_failures_are_recorded_not_retried(db: Database, migrated_url: str, which: str, reason: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING")
    lid = add_language(db)
    jid = add_job(db, lid, {"error": which}, kind="construct")
    assert Worker(_config(migrated_url), db=db).run_once() == "failed"
    r = row(db, jid)
    assert r.status == "failed" and r.attempts == 1 and r.error["reason"] == reason
    if which == "input":
        assert r.error["field"] == "seeds" and r.error["code"] == "invalid-input"
    else:
        # a typed reason; the message and traceback stay in the worker's log (any reader sees the job)
        assert r.error["type"] == "RuntimeError" and "RuntimeError" in r.error["detail"]
        assert "traceback" not in r.error and "boom" not in str(r.error) and "failing_job" not in str(r.error)
        assert "boom" in caplog.text and "failing_job" in caplog.text and jid in caplog.text  # the log has it all


# The tests below never race a timer against the run: whatever should interrupt the run (a cancel,
# a shutdown, a stolen lease) is in place before run_claim starts, and the job function would run
# for minutes unless the worker's heartbeat (every 50 ms) or its polling sees it.
ENDLESS = {"steps": 100_000, "step_s": 0.01}


def test_run_claim_cancel_while_running_keeps_partial(db: Database, migrated_url: str, tmp_path: Path) -> None:
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), **ENDLESS})
    with db.session_scope() as s:
        c = jobrepo.claim(s, owner="w", lease_s=60)
    _cancel(db, jid)  # running: only cancel_requested is set; the first heartbeat reads it
    assert row(db, jid).status == "running"
    assert run_claim(db, c, _config(migrated_url)) == "cancelled"
    r = row(db, jid)
    assert r.status == "cancelled" and r.error["reason"] == "cancelled"
    assert 0 <= r.result["completed_steps"] < ENDLESS["steps"]


def _cancel(db: Database, jid: str) -> None:
    with db.session_scope() as s:
        jobrepo.request_cancel(s, jid)


def test_run_claim_stopping_worker_releases_job(db: Database, migrated_url: str, tmp_path: Path) -> None:
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), **ENDLESS})
    with db.session_scope() as s:
        c = jobrepo.claim(s, owner="w", lease_s=60)
    stopping = threading.Event()
    stopping.set()
    assert run_claim(db, c, _config(migrated_url), stopping=stopping) == "released"
    r = row(db, jid)
    assert r.status == "queued" and r.attempts == 0 and r.error["reason"] == "worker-stopped"


def test_run_claim_lost_lease_discards_outcome(db: Database, migrated_url: str, tmp_path: Path) -> None:
    """A holder whose job was taken away (lease expired, requeued, claimed again) stops and stores nothing.

    The job is taken away before the stale holder runs, not by a timer during the run: a timer
    raced the holder's heartbeat, and on PostgreSQL a heartbeat that loses (its conditional
    UPDATE re-checks the requeued row) briefly locks that row, so the thief's ``SKIP LOCKED``
    claim found nothing and the job stayed queued (the old flaky ``'queued' == 'running'``).
    """
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), **ENDLESS})
    with db.session_scope() as s:
        c = jobrepo.claim(s, owner="stale", lease_s=60)
    with db.session_scope() as s:
        s.execute(update(jobrepo.JobRow).where(jobrepo.JobRow.id == jid).values(lease_expires_at=utcnow() - timedelta(seconds=1)))
        assert jobrepo.recover_expired(s)["requeued"] == 1
        stolen = jobrepo.claim(s, owner="new", lease_s=60)
    assert stolen is not None and stolen.job_id == jid
    assert run_claim(db, c, _config(migrated_url)) == "lost"
    r = row(db, jid)
    assert r.status == "running" and r.attempts == 2 and r.lease_owner == stolen.token and r.result is None


def test_train_jobs_get_a_per_job_checkpoint_dir_removed_at_the_end(db: Database, migrated_url: str, tmp_path: Path) -> None:
    lid = add_language(db)
    jid = add_job(db, lid, {})
    cfg = WorkerConfig(database_url=migrated_url, lease_s=2.0, kinds={"train": "test_jobs_support:spec_echo_job"}, checkpoint_root=str(tmp_path))
    assert Worker(cfg, db=db).run_once() == "succeeded"
    assert row(db, jid).result["checkpoint_dir"] == str(tmp_path / jid)
    assert not (tmp_path / jid).exists()
