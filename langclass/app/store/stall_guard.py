"""A client-side bound on every PostgreSQL round trip, for a server that stops answering.

``statement_timeout`` is enforced by the server, and ``tcp_user_timeout`` and keepalives by the
kernels: none fires when the server process is stopped (SIGSTOP, a frozen VM, a hung backend)
while its kernel still acknowledges the bytes sent — the client then waits for an answer for the
whole stall (measured: 29.8 s, every database request and ``/readyz``). :func:`guard_stalls` arms a
timer around each statement (and around the pool's liveness ping on checkout); if it fires, the
connection's socket is shut down, the blocked read returns at once, the driver raises
``OperationalError``, SQLAlchemy discards the connection, and the request answers 503
``not-ready`` (the problem handlers map the error).

The bound is the statement timeout plus a grace period (:data:`GRACE_S`), so a statement the server
itself stops at its ``statement_timeout`` fails the ordinary way first.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

from sqlalchemy import event, exc as sa_exc
from sqlalchemy.engine import Engine

__all__ = ["guard_stalls", "GRACE_S"]

log = logging.getLogger("langclass.app")

GRACE_S = 2.0
"""Seconds past the statement timeout before a round trip is cut (the server's own timeout first)."""

_KEY = "langclass_stall_timer"


def _cut(dbapi_conn: Any, bound_s: float) -> None:
    """Shut the connection's socket down (both ways): the read blocked on it returns at once. A
    duplicate of the descriptor is used, so the driver still owns (and later closes) its own."""
    try:
        fd = dbapi_conn.pgconn.socket
        dup = socket.socket(fileno=os.dup(fd))
    except Exception:  # noqa: BLE001 - the connection is already closed: nothing is blocked on it
        return
    try:
        log.warning("database round trip unanswered after %.1f s: the connection is cut (the server stopped answering?)", bound_s)
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()


def _arm(dbapi_conn: Any, bound_s: float) -> threading.Timer:
    timer = threading.Timer(bound_s, _cut, args=(dbapi_conn, bound_s))
    timer.daemon = True
    timer.start()
    return timer


def guard_stalls(engine: Engine, statement_timeout_s: float) -> None:
    """Bound every statement of ``engine`` (a PostgreSQL engine with psycopg 3) and the liveness
    ping of each pool checkout to ``statement_timeout_s + GRACE_S`` seconds of waiting for the
    server (see the module docstring). The engine must not use ``pool_pre_ping``: the checkout
    ping here replaces it (the same check, guarded)."""
    bound = statement_timeout_s + GRACE_S

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: Any) -> None:
        conn.info[_KEY] = _arm(conn.connection.dbapi_connection, bound)

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: Any) -> None:
        timer = conn.info.pop(_KEY, None)
        if timer is not None:
            timer.cancel()

    @event.listens_for(engine, "handle_error")
    def _error(context: Any) -> None:
        conn = context.connection
        timer = conn.info.pop(_KEY, None) if conn is not None else None
        if timer is not None:
            timer.cancel()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        # pessimistic disconnect handling (SQLAlchemy's recipe), with the stall bound: a dead or
        # stalled pooled connection is discarded and the pool connects afresh (connect_timeout)
        timer = _arm(dbapi_conn, bound)
        try:
            cur = dbapi_conn.cursor()
            try:
                cur.execute("SELECT 1")
            finally:
                cur.close()
        except Exception as err:  # noqa: BLE001 - any driver error: this connection is unusable
            raise sa_exc.DisconnectionError(f"pooled connection unusable: {type(err).__name__}") from err
        finally:
            timer.cancel()
