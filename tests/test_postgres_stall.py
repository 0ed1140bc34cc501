"""A PostgreSQL that accepts connections and stops answering (issue 35, item 4): requests and
``/readyz`` answer 503 within a bound instead of hanging for the whole stall.

A proxy in front of the test server stands in for a stopped server process: while "stalled" it
reads what the client sends (so the client's kernel sees every byte acknowledged — no TCP timeout
can fire) and forwards nothing either way. Before: every database request waited for the stall
(29.8 s measured); the statement timeout is the server's and never arrived.

Liveness bounds (60 s) rather than timings: the request must end while the stall lasts.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.postgres


class StallProxy:
    """A TCP proxy to ``target``; ``stalled`` stops all forwarding (bytes read and dropped)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.stalled = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if self.stalled.is_set():
                continue  # read and dropped: acknowledged by the kernel, never answered
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        """Shut every socket down before closing it: a shutdown wakes the pump threads blocked in
        ``recv`` (a bare close does not), so none lives on to read from a later socket that reuses
        its descriptor number (that stole the next test's traffic)."""
        for s in [self.server, *self.sockets]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


@pytest.fixture
def proxied(postgres_url: str) -> Any:
    from langclass.app.store.db import upgrade

    upgrade(postgres_url)
    url = make_url(postgres_url)
    proxy = StallProxy((url.host or "127.0.0.1", url.port or 5432))
    yield proxy, url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    proxy.close()


def _ends(fn: Any) -> list[Any]:
    """``fn()``'s result or exception, from a thread given 60 s (a liveness bound)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "still waiting for the stalled database"
    return out


def test_a_statement_to_a_stalled_server_fails_within_the_bound(proxied: Any) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from langclass.app.store.db import Database

    proxy, url = proxied
    db = Database(url, connect_timeout_s=2, statement_timeout_s=1)
    try:
        with db.session_scope() as session:  # a pooled connection, in use before the stall
            assert session.execute(text("SELECT 1")).scalar() == 1
        proxy.stalled.set()

        def query() -> Any:
            with db.session_scope() as session:
                return session.execute(text("SELECT count(*) FROM languages")).scalar()

        (outcome,) = _ends(query)
        assert isinstance(outcome, DBAPIError), outcome
        (outcome,) = _ends(db.ping)
        assert isinstance(outcome, DBAPIError), outcome
        proxy.stalled.clear()  # the stall over: a fresh connection answers
        assert _ends(db.ping) == [None]
    finally:
        proxy.stalled.clear()
        db.dispose()


def test_requests_and_readyz_answer_503_during_the_stall(proxied: Any, make_client: Any) -> None:
    proxy, url = proxied
    client = make_client(url, classify_isolation="thread", worker_slots=0, db_connect_timeout_s=2, db_statement_timeout_s=1)
    assert client.get("/v1/languages").status_code == 200 and client.get("/readyz").status_code == 200
    proxy.stalled.set()
    try:
        (r,) = _ends(lambda: client.get("/v1/languages"))
        assert r.status_code == 503 and r.json()["code"] == "not-ready", r.text
        (r,) = _ends(lambda: client.get("/readyz"))
        assert r.status_code == 503 and r.json()["code"] == "not-ready", r.text
    finally:
        proxy.stalled.clear()
