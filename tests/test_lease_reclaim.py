"""After a whole-group kill, the restarted service takes back at once the jobs whose recorded lease
owner — this host, a pid that no longer runs — is recognisably dead (issue 24, item 9).

Before: such a job waited for its lease (60 s by default) to expire. Both backends.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest

from langclass.app.execution.executor import LocalExecutor
from langclass.app.execution.worker import WorkerConfig
from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database

from test_jobs_repo import add_job, add_language, row


@pytest.fixture
def db(migrated_url: str) -> Any:
    d = Database(migrated_url)
    yield d
    d.dispose()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid  # reaped: no process has it (until the kernel hands it out again)


def test_leases_of_dead_local_owners_end_at_start(db: Database, migrated_url: str) -> None:
    lid = add_language(db)
    host = socket.gethostname()[:100]
    dead, live = add_job(db, lid), add_job(db, lid)
    other = add_job(db, lid)
    with db.session_scope() as s:
        held_dead = jobrepo.claim(s, owner=f"{host}:{_dead_pid()}", lease_s=3600)
        held_live = jobrepo.claim(s, owner=jobrepo.new_owner_id(), lease_s=3600)  # this process: alive
        held_other = jobrepo.claim(s, owner="another-host:1", lease_s=3600)
    assert [h.job_id for h in (held_dead, held_live, held_other)] == [dead, live, other]
    with db.session_scope() as s:
        assert jobrepo.count_claimable(s) == 0  # every lease has an hour to go

    executor = LocalExecutor(WorkerConfig(database_url=migrated_url), 0)
    try:
        assert executor.reclaim_dead_local_leases() == 1
    finally:
        executor.db.dispose()
    with db.session_scope() as s:
        assert jobrepo.count_claimable(s) == 1
        assert jobrepo.recover_expired(s)["requeued"] == 1
    assert row(db, dead).status == "queued"
    assert row(db, live).status == "running" and row(db, other).status == "running"


def test_pid_alive() -> None:
    import os

    assert jobrepo.pid_alive(os.getpid())
    assert not jobrepo.pid_alive(_dead_pid())
