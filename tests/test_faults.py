"""Faults: a result computed during a database outage is kept, orphaned jobs cancel at once,
downgrades keep data unless forced, outages do not flood the log, secrets stay out of the access
log, and a stalled request body ends. No test here waits on a clock: outages are injected,
clocks are fake, and ages are written into rows."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import update
from sqlalchemy.exc import OperationalError

from langclass.app.store import jobs as jobrepo
from langclass.app.execution import worker as workermod
from langclass.app.store.db import Database
from langclass.app.store.orm import utcnow
from langclass.app.execution.worker import LogThrottle, WorkerConfig, run_claim

from test_jobs_repo import SUPPORT, add_job, add_language, row


@pytest.fixture
def db(migrated_url: str) -> Any:
    d = Database(migrated_url)
    yield d
    d.dispose()


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def _outage(monkeypatch: pytest.MonkeyPatch, failures: int) -> list[int]:
    real = jobrepo.finish
    calls = [0]

    def flaky(*a: Any, **k: Any) -> bool:
        calls[0] += 1
        if calls[0] <= failures:
            raise OperationalError("UPDATE jobs", {}, Exception("server closed the connection unexpectedly"))
        return real(*a, **k)

    monkeypatch.setattr(jobrepo, "finish", flaky)
    return calls


def test_a_result_finished_during_an_outage_is_stored_after_retries(db: Database, migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(workermod, "_now", clock.now)
    monkeypatch.setattr(workermod, "_sleep", clock.sleep)
    jid = add_job(db, add_language(db), {"trace_dir": str(tmp_path), "steps": 1, "step_s": 0.0})
    with db.session_scope() as s:
        held = jobrepo.claim(s, owner="w", lease_s=60)
    calls = _outage(monkeypatch, 3)
    assert run_claim(db, held, WorkerConfig(database_url=migrated_url, lease_s=60, kinds=SUPPORT)) == "succeeded"
    assert calls[0] == 4 and clock.sleeps == [0.5, 1.0, 2.0]
    r = row(db, jid)
    assert r.status == "succeeded" and r.attempts == 1 and r.result["steps"] == 1


def test_retries_stop_before_the_lease_ends(db: Database, migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(workermod, "_now", clock.now)
    monkeypatch.setattr(workermod, "_sleep", clock.sleep)
    jid = add_job(db, add_language(db), {"trace_dir": str(tmp_path), "steps": 1, "step_s": 0.0})
    with db.session_scope() as s:
        held = jobrepo.claim(s, owner="w", lease_s=10)
    _outage(monkeypatch, 10**6)
    with pytest.raises(OperationalError):
        run_claim(db, held, WorkerConfig(database_url=migrated_url, lease_s=10, kinds=SUPPORT))
    assert sum(clock.sleeps) < 10 and clock.sleeps[:3] == [0.5, 1.0, 2.0]
    assert row(db, jid).status == "running"  # left to lease expiry and a retry, as before


def test_cancelling_an_orphaned_running_job_is_immediate(db: Database) -> None:
    lid = add_language(db)
    orphan, alive = add_job(db, lid), add_job(db, lid)
    with db.session_scope() as s:
        jobrepo.claim(s, owner="dead", lease_s=60)
        jobrepo.claim(s, owner="alive", lease_s=60)
        # the dead holder's last heartbeat was 31 s ago (more than half its 60 s lease)
        s.execute(update(jobrepo.JobRow).where(jobrepo.JobRow.id == orphan).values(
            heartbeat_at=utcnow() - timedelta(seconds=31), lease_expires_at=utcnow() + timedelta(seconds=29)))
        s.commit()
        assert jobrepo.request_cancel(s, orphan).status == "cancelled"
        r = jobrepo.request_cancel(s, alive)
        assert r.status == "running" and r.cancel_requested
    assert row(db, orphan).error["reason"] == "cancelled" and "presumed lost" in row(db, orphan).error["detail"]


def test_downgrade_refuses_to_delete_rows_without_force(database_url: str) -> None:
    from langclass.app.store.db import downgrade, stored_rows, upgrade
    from langclass.core.base.errors import InputError

    upgrade(database_url)
    d = Database(database_url)
    try:
        jid = add_job(d, add_language(d))
    finally:
        d.dispose()
    with pytest.raises(InputError) as info:
        downgrade(database_url, "0001")
    assert info.value.extra["rows"]["jobs"] == 1 and "--force" in info.value.detail
    assert stored_rows(database_url)["jobs"] == 1  # nothing was dropped
    downgrade(database_url, "0001", force=True)
    assert "jobs" not in stored_rows(database_url) and jid


def test_cli_db_downgrade_exits_2_without_force(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.app.store.db import upgrade
    from langclass.app.settings import get_settings

    upgrade(database_url)
    d = Database(database_url)
    try:
        add_language(d)
    finally:
        d.dispose()
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", database_url)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["db", "downgrade", "base"])
        assert result.exit_code == 2 and "--force" in result.output
        assert CliRunner().invoke(app, ["db", "downgrade", "base", "--force"]).exit_code == 0
    finally:
        get_settings.cache_clear()


def test_an_outage_logs_one_traceback_then_one_line_per_interval(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    monkeypatch.setattr(workermod, "_now", clock.now)
    throttle = LogThrottle(60.0)
    log = logging.getLogger("langclass.test-throttle")
    caplog.set_level(logging.INFO, logger="langclass.test-throttle")
    for _ in range(120):  # two minutes of failures every second
        try:
            raise OperationalError("SELECT 1", {}, Exception("connection refused"))
        except OperationalError:
            throttle.exception(log, "loop", "worker: loop error")
        clock.t += 1.0
    records = [r for r in caplog.records if r.name == "langclass.test-throttle"]
    assert len(records) == 2
    assert records[0].exc_info is not None and records[1].exc_info is None
    assert "59 more like it" in records[1].getMessage()
    throttle.clear("loop")
    try:
        raise OperationalError("SELECT 1", {}, Exception("again"))
    except OperationalError:
        throttle.exception(log, "loop", "worker: loop error")
    assert caplog.records[-1].exc_info is not None


def test_api_key_in_the_query_never_reaches_the_access_log(make_client: Any, migrated_url: str) -> None:
    from langclass.app.web.security import RedactQuerySecrets

    make_client(migrated_url, worker_slots=0)  # the lifespan installs the filter
    access = logging.getLogger("uvicorn.access")
    assert any(isinstance(f, RedactQuerySecrets) for f in access.filters)
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5000", "GET", "/v1/jobs?api_key=s3cr3t-key-value&limit=5", "1.1", 200), None)
    for f in access.filters:
        f.filter(record)
    message = record.getMessage()
    assert "s3cr3t" not in message and "api_key=***&limit=5" in message


def test_a_stalled_body_ends_with_408(migrated_url: str) -> None:
    """The client declares 100 bytes, sends 10 and stops: the read times out (budget 0.2 s, the
    client would never send more)."""
    from langclass.app.main import create_app

    from conftest import make_settings

    app = create_app(make_settings(migrated_url, body_read_timeout_s=0.2, worker_slots=0))
    sent: list[dict[str, Any]] = []

    async def main() -> None:
        chunks = [{"type": "http.request", "body": b'{"regex": ', "more_body": True}]

        async def receive() -> dict[str, Any]:
            if chunks:
                return chunks.pop(0)
            await anyio.sleep_forever()
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
                 "path": "/v1/classify", "raw_path": b"/v1/classify", "query_string": b"", "root_path": "",
                 "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "app": app}
        with anyio.fail_after(60):
            await app(scope, receive, send)

    anyio.run(main)
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 408
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert b"request-timeout" in body
