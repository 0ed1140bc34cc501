"""A database that stops answering fails requests with 503 within the timeouts (issue 24, item 9).

Before: no connect or statement timeout — during an outage where the server accepts connections
but never answers (a paused server, a partition), every GET hung for the whole outage. Here a
local socket that accepts and then says nothing stands for that server; the call runs in a thread
joined with a generous bound, so a hang fails the test instead of blocking it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from langclass.app.store.db import Database


@pytest.fixture
def silent_server() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                held.append(conn)  # accepted, never answered
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    srv.close()


def _within(fn: Any, bound_s: float) -> tuple[bool, Any]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - returned for the assertion
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(bound_s)
    return (not t.is_alive()), (out[0] if out else None)


def test_connecting_to_a_silent_server_fails_within_the_connect_timeout(silent_server: int) -> None:
    db = Database(f"postgresql+psycopg://u@127.0.0.1:{silent_server}/x", connect_timeout_s=1, statement_timeout_s=2)
    t0 = time.monotonic()
    finished, outcome = _within(db.ping, 30)
    assert finished, "ping hung on a server that never answers"
    assert isinstance(outcome, OperationalError) and time.monotonic() - t0 < 30


def test_a_get_during_the_outage_answers_503(make_client: Any, silent_server: int) -> None:
    client = make_client(f"postgresql+psycopg://u@127.0.0.1:{silent_server}/x", db_connect_timeout_s=1, db_statement_timeout_s=2,
                         worker_slots=0)
    finished, r = _within(lambda: client.get("/v1/languages"), 60)
    assert finished, "GET /v1/languages hung during the outage"
    assert r.status_code == 503 and r.json()["code"] == "not-ready" and "Retry-After" in r.headers


@pytest.mark.postgres
def test_a_statement_over_the_timeout_is_cancelled_and_the_schema_is_kept(postgres_url: str) -> None:
    from sqlalchemy import text

    db = Database(postgres_url, statement_timeout_s=0.5)
    try:
        with db.engine.connect() as conn:
            path = conn.execute(text("SHOW search_path")).scalar_one()
            with pytest.raises(OperationalError, match="statement timeout"):
                conn.execute(text("SELECT pg_sleep(5)"))
    finally:
        db.dispose()
    assert path != '"$user", public'  # the test URL's own options (its schema) survive the added timeout
