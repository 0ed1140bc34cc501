"""The embedded executor: spawned worker processes that start with work, survive SIGKILL of a
worker (retry, or a recorded failure once attempts are used up), honour cancellation, and pick up
queued and orphaned jobs after a service restart. Never a lost, stuck or doubly stored job.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database, upgrade
from langclass.app.execution.executor import LocalExecutor
from langclass.app.execution.worker import WorkerConfig

from test_jobs_repo import SUPPORT, add_job, add_language, row

pytestmark = pytest.mark.slow


def wait_for(cond: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def sqlite_db(sqlite_url: str) -> Any:
    """A migrated SQLite file (the process tests; the SIGKILL test also runs on PostgreSQL)."""
    upgrade(sqlite_url)
    d = Database(sqlite_url)
    yield sqlite_url, d
    d.dispose()


@pytest.fixture
def any_db(migrated_url: str) -> Any:
    d = Database(migrated_url)
    yield migrated_url, d
    d.dispose()


def make_executor(url: str, slots: int = 1, lease_s: float = 1.0) -> LocalExecutor:
    return LocalExecutor(WorkerConfig(database_url=url, lease_s=lease_s, kinds=SUPPORT), slots, log_level="warning")


def status(db: Database, jid: str) -> str:
    return row(db, jid).status


def started_pids(trace: Path) -> list[int]:
    return sorted(int(p.stem) for p in trace.glob("*.start"))


def test_workers_start_with_work_and_run_jobs_in_parallel(sqlite_db: Any, tmp_path: Path) -> None:
    url, db = sqlite_db
    lid = add_language(db)
    ex = make_executor(url, slots=2)
    ex.start()
    try:
        time.sleep(0.3)
        assert ex.pids() == [None, None]  # no work, no processes
        jobs = [add_job(db, lid, {"trace_dir": str(tmp_path / str(i)), "steps": 20, "step_s": 0.05}) for i in range(2)]
        ex.notify()  # after the commit, as the route does
        wait_for(lambda: all(status(db, j) == "succeeded" for j in jobs), 40, "both jobs")
        pids = {row(db, j).result["pid"] for j in jobs}
        assert len(pids) == 2  # one job per slot, both slots used
        assert all(row(db, j).attempts == 1 for j in jobs)
    finally:
        ex.stop(timeout=10)
    assert ex.pids() == [None, None]


@pytest.mark.parametrize("max_attempts", [2, 1])
def test_sigkill_of_a_worker_retries_or_fails_with_reason(any_db: Any, tmp_path: Path, max_attempts: int) -> None:
    url, db = any_db
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 30, "step_s": 0.05}, max_attempts=max_attempts)
    ex = make_executor(url)
    ex.start()
    try:
        ex.notify()
        victim = wait_for(lambda: started_pids(tmp_path), 30, "the job to start")[0]
        wait_for(lambda: (row(db, jid).progress or {}).get("step", 0) >= 2, 10, "progress")
        os.kill(victim, signal.SIGKILL)
        final = wait_for(lambda: status(db, jid) if status(db, jid) in jobrepo.TERMINAL else None, 40, "a final status")
        r = row(db, jid)
        if max_attempts == 2:
            assert final == "succeeded" and r.attempts == 2
            pids = started_pids(tmp_path)
            assert victim in pids and len(pids) == 2 and r.result["pid"] != victim
        else:
            assert final == "failed" and r.attempts == 1
            assert r.error["reason"] == "worker-lost" and r.error["retrying"] is False
            assert r.error["lease_owner"].split(":")[1] == str(victim)
        assert ex.restarts >= 1
    finally:
        ex.stop(timeout=10)


def test_cancel_running_job_stops_the_worker_run(sqlite_db: Any, tmp_path: Path) -> None:
    url, db = sqlite_db
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 2000, "step_s": 0.01})
    ex = make_executor(url)
    ex.start()
    try:
        ex.notify()
        wait_for(lambda: (row(db, jid).progress or {}).get("step", 0) >= 1, 30, "progress")
        with db.session_scope() as s:
            assert jobrepo.request_cancel(s, jid).cancel_requested
        wait_for(lambda: status(db, jid) == "cancelled", 10, "cancelled")
        r = row(db, jid)
        assert r.error["reason"] == "cancelled" and 0 < r.result["completed_steps"] < 2000
        assert not (tmp_path / f"{r.result.get('pid', 0)}.done").exists()
    finally:
        ex.stop(timeout=10)


def test_restart_recovers_orphaned_and_queued_jobs(sqlite_db: Any, tmp_path: Path) -> None:
    """A service that died left one job 'running' (its lease still valid) and one queued: the next
    start runs both — the orphan once its lease expires — with no notify needed."""
    url, db = sqlite_db
    lid = add_language(db)
    orphan = add_job(db, lid, {"trace_dir": str(tmp_path / "o"), "steps": 3, "step_s": 0.01})
    with db.session_scope() as s:
        held = jobrepo.claim(s, owner="dead-host:1", lease_s=1.5)  # its worker is gone
    assert held is not None and held.job_id == orphan
    queued = add_job(db, lid, {"trace_dir": str(tmp_path / "q"), "steps": 3, "step_s": 0.01})
    ex = make_executor(url)
    ex.start()
    try:
        wait_for(lambda: status(db, queued) == "succeeded", 30, "the queued job")
        wait_for(lambda: status(db, orphan) == "succeeded", 30, "the orphaned job")
        r = row(db, orphan)
        assert r.attempts == 2 and not r.lease_owner.startswith("dead-host:")
    finally:
        ex.stop(timeout=10)


def test_stop_releases_a_running_job_for_the_next_start(sqlite_db: Any, tmp_path: Path) -> None:
    url, db = sqlite_db
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 2000, "step_s": 0.01})
    ex = make_executor(url)
    ex.start()
    ex.notify()
    wait_for(lambda: (row(db, jid).progress or {}).get("step", 0) >= 1, 30, "progress")
    ex.stop(timeout=15)
    r = row(db, jid)
    assert r.status == "queued" and r.attempts == 0 and r.error["reason"] == "worker-stopped"


_SERVICE = """
import sys, time
sys.path.insert(0, {tests!r})
from langclass.app.execution.executor import LocalExecutor
from langclass.app.execution.worker import WorkerConfig
from test_jobs_repo import SUPPORT

if __name__ == "__main__":
    ex = LocalExecutor(WorkerConfig(database_url={url!r}, lease_s=30.0, kinds=SUPPORT), 1, eager=True, log_level="warning")
    ex.start()
    time.sleep(600)
"""


def test_workers_of_a_killed_service_release_their_job_and_exit(sqlite_db: Any, tmp_path: Path) -> None:
    """SIGKILL of the service process: its worker notices the orphaning, puts the job back in the
    queue at once (not after the 30 s lease) and exits — no unsupervised worker keeps running."""
    import subprocess
    import sys

    url, db = sqlite_db
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path / "t"), "steps": 3000, "step_s": 0.01})
    script = tmp_path / "service.py"
    script.write_text(_SERVICE.format(tests=str(Path(__file__).parent), url=url))
    service = subprocess.Popen([sys.executable, str(script)])
    try:
        worker_pid = wait_for(lambda: started_pids(tmp_path / "t"), 60, "the job to start")[0]
        service.kill()
        service.wait(10)
        wait_for(lambda: status(db, jid) == "queued", 15, "the job to be released")
        r = row(db, jid)
        assert r.attempts == 0 and r.error["reason"] == "worker-stopped"

        def gone() -> bool:
            try:
                os.kill(worker_pid, 0)
            except ProcessLookupError:
                return True
            return False

        wait_for(gone, 15, "the orphaned worker to exit")
    finally:
        if service.poll() is None:
            service.kill()
