"""Liveness and readiness probes."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request

from langclass.app.store.db import Database, schema_status
from ..problems import NotReadyError, problem_responses
from langclass.app.usecases.schemas import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness: the process answers", responses=problem_responses(422))
async def healthz() -> dict[str, str]:
    """Always ``{"status": "ok"}`` while the process serves requests (no database access, no thread:
    it answers on the event loop whatever the classify load)."""
    return {"status": "ok"}


@router.get(
    "/readyz", response_model=Readiness, summary="Readiness: database reachable, schema at head", responses=problem_responses(422, 503)
)
async def readyz(request: Request) -> dict[str, object]:
    """``ready`` when the database answers and its schema is at the newest migration, else 503.

    The check runs in a thread of the probe's own limiter (:func:`probe_threads`, 2 threads), never
    in the shared thread pool, so a saturated pool (database reads, page renders) cannot delay it."""
    db: Database = request.app.state.db

    def check() -> dict[str, object]:
        try:
            db.ping()
            status = schema_status(db.engine, db.url)
        except Exception as exc:  # any driver error means "not ready"
            raise NotReadyError(f"database unreachable: {type(exc).__name__}") from exc
        if not status["at_head"]:
            raise NotReadyError(
                f"database schema at {status['current'] or 'no revision'}, expected {status['head']}; run `langclass db upgrade`",
                schema_revision=status["current"],
                schema_head=status["head"],
            )
        return {"status": "ready", "database": db.engine.dialect.name, "schema_revision": status["current"], "schema_head": status["head"]}

    bound = ready_timeout_s(request.app.state.settings)
    with anyio.move_on_after(bound):
        # a server that accepts connections but stops answering (a stopped process: its kernel still
        # acknowledges, so no TCP timeout fires) would hold the check for the whole stall; the probe
        # answers 503 at the bound instead and leaves the stuck thread behind
        return await anyio.to_thread.run_sync(check, limiter=probe_threads(request), abandon_on_cancel=True)
    raise NotReadyError(f"database did not answer within {bound:g} s (LANGCLASS_DB_CONNECT_TIMEOUT_S)")


def ready_timeout_s(settings: object) -> float:
    """How long ``/readyz`` waits for the database: ``LANGCLASS_DB_CONNECT_TIMEOUT_S`` (5 s by
    default) — a readiness probe must answer within its own timeout, whatever the database does."""
    return float(getattr(settings, "db_connect_timeout_s", 5.0))


def probe_threads(request: Request) -> anyio.CapacityLimiter:
    """The app's own thread limiter for readiness checks (made on first use, on the event loop)."""
    limiter = getattr(request.app.state, "probe_threads", None)
    if limiter is None:
        limiter = request.app.state.probe_threads = anyio.CapacityLimiter(PROBE_THREADS)
    return limiter


PROBE_THREADS = 2
"""Threads of the readiness probe's own limiter (a fixed bound)."""
